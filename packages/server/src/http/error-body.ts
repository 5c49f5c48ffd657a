// Everything that goes wrong below this middleware (validation, auth, missing resources, database outages, bugs)
// is answered with the contract's error body, with anything in it that may be a credential masked; nothing else
// reaches the client.
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { isDatabaseDown } from '../db/outage.ts';
import { ApiError, OAuthError } from '../errors.ts';
import { redactValue } from '../services/redaction.ts';

/** The error the client sees for whatever was thrown; unexpected ones are logged with the request id. */
function answerFor(thrown: unknown, { requestId, traceId }: { requestId: string; traceId?: string }, logger: Logger): ApiError | OAuthError {
  if (thrown instanceof ApiError || thrown instanceof OAuthError) return thrown;
  if (isDatabaseDown(thrown)) {
    return new ApiError('service_unavailable', 'The service is temporarily unavailable.', {
      suggestion: 'Retry after the number of seconds in Retry-After.',
      headers: { 'Retry-After': '5' },
    });
  }
  logger.error({ err: thrown, requestId, ...(traceId ? { traceId } : {}) }, 'unhandled error');
  return new ApiError('internal_error', 'Something went wrong on our side.', {
    suggestion: 'Retry later; if it persists, contact support with the request id.',
    // With the trace id when the request was traced (http/telemetry.ts): support finds its spans too.
    details: traceId ? { request_id: requestId, trace_id: traceId } : { request_id: requestId },
  });
}

export function errorBody(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      const error = answerFor(thrown, ctx.state as { requestId: string; traceId?: string }, logger);
      ctx.status = error.status;
      if (error instanceof ApiError) ctx.set(error.headers);
      // A caller's value repeated in the message (an id, a field name, an X-Workspace-Id) may be a token pasted in
      // the wrong place: masked here as in the logs, so no error body carries a credential.
      ctx.body = redactValue(error.body());
    }
  };
}
