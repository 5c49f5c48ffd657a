// The health probes. Liveness touches nothing (a database outage must not get the process restarted);
// readiness asks the database and the workflow queue, each with a deadline, so a hung connection answers
// 503 in seconds instead of holding the probe.
import { sql } from 'kysely';
import { ApiError } from '../errors.ts';
import type { Handler } from './types.ts';

const DEADLINE_MS = 2000;

type Check = 'ok' | 'unavailable';

async function within(check: () => Promise<unknown>): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('deadline')), DEADLINE_MS);
  });
  try {
    await Promise.race([check(), late]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

export const getLiveness: Handler<'getLiveness'> = async () => ({ status: 200, body: { status: 'ok' } });

export const getReadiness: Handler<'getReadiness'> = async (_input, { db, workflows }) => {
  const [database, queue] = await Promise.all([within(() => sql`SELECT 1`.execute(db)), workflows.queueReady ? within(() => workflows.queueReady!()) : Promise.resolve('not_used' as const)]);
  if (database === 'ok' && queue !== 'unavailable') return { status: 200, body: { status: 'ok', checks: { database, queue } } };
  const failed = [database === 'unavailable' && 'the database', queue === 'unavailable' && 'the workflow queue'].filter(Boolean).join(' and ');
  throw new ApiError('service_unavailable', `Not ready: ${failed} did not answer.`, {
    suggestion: 'Send no traffic here until /readyz answers 200; retry after the seconds in Retry-After.',
    details: { checks: { database, queue } },
    headers: { 'Retry-After': '5' },
  });
};
