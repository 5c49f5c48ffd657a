// The health probes, for load balancers and orchestrators: outside the API's contract (every path of the API
// starts with /v1), like /docs and /device, and answered ahead of its pipeline: no token, no rate limit (which
// would make liveness depend on the database), no input. Liveness touches nothing, so a database outage never
// gets the process restarted; readiness asks the database and the workflow queue (services/readiness.ts).
import type Koa from 'koa';
import { ApiError } from '../errors.ts';
import type { HandlerEnv } from '../operations/types.ts';
import { readiness } from '../services/readiness.ts';

const PROBES = new Set(['/healthz', '/readyz']);

export function healthProbes({ db, workflows, config }: Pick<HandlerEnv, 'db' | 'workflows' | 'config'>): Koa.Middleware {
  return async (ctx, next) => {
    if (!PROBES.has(ctx.path)) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw new ApiError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`, {
        suggestion: 'Use GET.',
        headers: { Allow: 'GET, HEAD' },
      });
    }
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    const checks = await readiness(db, workflows.queueReady?.bind(workflows), config.readyTimeoutMs);
    const { database, queue } = checks;
    if (database === 'ok' && queue !== 'unavailable') {
      ctx.body = { status: 'ok', checks: { database, queue } };
      return;
    }
    const failed = [database === 'unavailable' && 'the database', queue === 'unavailable' && 'the workflow queue'].filter(Boolean).join(' and ');
    throw new ApiError('service_unavailable', `Not ready: ${failed} did not answer.`, {
      suggestion: 'Send no traffic here until /readyz answers 200; retry after the seconds in Retry-After.',
      details: { checks },
      headers: { 'Retry-After': '5' },
    });
  };
}
