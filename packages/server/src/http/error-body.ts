// Everything that goes wrong below this middleware (validation, auth, missing resources, database outages, bugs)
// is answered with the contract's error body; nothing else reaches the client.
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { ApiError, OAuthError } from '../errors.ts';

// Connection-level failures and PostgreSQL's "cannot connect now" class: the database is unreachable.
const DATABASE_DOWN_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006']);

export function isDatabaseDown(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && DATABASE_DOWN_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect|connection error and is not queryable|Client was closed and is not queryable/.test(
    message,
  );
}

/** The error the client sees for whatever was thrown; unexpected ones are logged with the request id. */
function answerFor(thrown: unknown, requestId: string, logger: Logger): ApiError | OAuthError {
  if (thrown instanceof ApiError || thrown instanceof OAuthError) return thrown;
  if (isDatabaseDown(thrown)) {
    return new ApiError('service_unavailable', 'The service is temporarily unavailable.', {
      suggestion: 'Retry after the number of seconds in Retry-After.',
      headers: { 'Retry-After': '5' },
    });
  }
  logger.error({ err: thrown, requestId }, 'unhandled error');
  return new ApiError('internal_error', 'Something went wrong on our side.', {
    suggestion: 'Retry later; if it persists, contact support with the request id.',
    details: { request_id: requestId },
  });
}

export function errorBody(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      const error = answerFor(thrown, ctx.state.requestId as string, logger);
      ctx.status = error.status;
      if (error instanceof ApiError) ctx.set(error.headers);
      ctx.body = error.body();
    }
  };
}
