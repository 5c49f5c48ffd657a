// Deletes events and audit events older than their retention, now and then, in every worker process. The deletes
// are idempotent, so workers running them at once only repeat each other's work.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { pruneAuditEvents } from '../resources/audit-events.ts';
import { pruneEvents } from '../resources/events.ts';

export interface EventRetentionOptions {
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
  /** Days audit events are kept; 0 keeps them forever. */
  auditRetentionDays: number;
  /** How often (real ms) it runs. */
  everyMs: number;
}

export function eventRetention({ db, clock, logger, retentionDays, auditRetentionDays, everyMs }: EventRetentionOptions) {
  let timer: NodeJS.Timeout | undefined;
  const prune = async (what: string, days: number, run: (before: number) => Promise<number>) => {
    try {
      const deleted = await run(clock.now() - days * 86_400);
      if (deleted > 0) logger.info({ deleted, retentionDays: days }, `old ${what} deleted`);
    } catch (error) {
      logger.warn({ err: error }, `deleting old ${what} failed; retrying on the next run`);
    }
  };
  const pruneAll = async () => {
    await prune('events', retentionDays, (before) => pruneEvents(db, before));
    if (auditRetentionDays > 0) await prune('audit events', auditRetentionDays, (before) => pruneAuditEvents(db, before));
  };
  return {
    start(): void {
      void pruneAll();
      timer = setInterval(() => void pruneAll(), everyMs);
    },
    stop(): void {
      if (timer) clearInterval(timer);
    },
  };
}
