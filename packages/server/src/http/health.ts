// Answers the health probes ahead of the API's pipeline: no authentication, no rate limit (which would make
// liveness depend on the database), no body.
import type Koa from 'koa';
import { getLiveness, getReadiness } from '../operations/health.ts';
import type { HandlerEnv, OperationInput } from '../operations/types.ts';

const probes: Record<string, typeof getLiveness | typeof getReadiness> = { '/healthz': getLiveness, '/readyz': getReadiness };

export function healthProbes(env: HandlerEnv): Koa.Middleware {
  return async (ctx, next) => {
    const probe = ctx.method === 'GET' ? probes[ctx.path] : undefined;
    if (!probe) return next();
    // The probes take no parameters, headers or body.
    const output = await probe({} as OperationInput<'getLiveness'> & OperationInput<'getReadiness'>, env);
    ctx.status = output.status;
    ctx.body = output.body;
  };
}
