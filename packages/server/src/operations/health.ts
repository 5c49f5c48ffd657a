// The health probes. Liveness touches nothing (a database outage must not get the process restarted);
// readiness asks the database and the workflow queue (services/readiness.ts).
import { ApiError } from '../errors.ts';
import { readiness } from '../services/readiness.ts';
import type { Handler } from './types.ts';

export const getLiveness: Handler<'getLiveness'> = async () => ({ status: 200, body: { status: 'ok' } });

export const getReadiness: Handler<'getReadiness'> = async (_input, { db, workflows }) => {
  const checks = await readiness(db, workflows.queueReady?.bind(workflows));
  const { database, queue } = checks;
  if (database === 'ok' && queue !== 'unavailable') return { status: 200, body: { status: 'ok', checks: { database, queue } } };
  const failed = [checks.database === 'unavailable' && 'the database', checks.queue === 'unavailable' && 'the workflow queue'].filter(Boolean).join(' and ');
  throw new ApiError('service_unavailable', `Not ready: ${failed} did not answer.`, {
    suggestion: 'Send no traffic here until /readyz answers 200; retry after the seconds in Retry-After.',
    details: { checks },
    headers: { 'Retry-After': '5' },
  });
};
