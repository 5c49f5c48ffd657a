// Deletes events older than the retention, now and then, in every worker process. The delete is idempotent, so
// workers running it at once only repeat each other's work.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { pruneEvents } from '../resources/events.ts';

export interface EventRetentionOptions {
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
  /** How often (real ms) it runs. */
  everyMs: number;
}

export function eventRetention({ db, clock, logger, retentionDays, everyMs }: EventRetentionOptions) {
  let timer: NodeJS.Timeout | undefined;
  const prune = async () => {
    try {
      const deleted = await pruneEvents(db, clock.now() - retentionDays * 86_400);
      if (deleted > 0) logger.info({ deleted, retentionDays }, 'old events deleted');
    } catch (error) {
      logger.warn({ err: error }, 'deleting old events failed; retrying on the next run');
    }
  };
  return {
    start(): void {
      void prune();
      timer = setInterval(() => void prune(), everyMs);
    },
    stop(): void {
      if (timer) clearInterval(timer);
    },
  };
}
