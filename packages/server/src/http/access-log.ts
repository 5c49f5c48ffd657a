// The request id (echoing an incoming X-Request-Id that is a short safe token, else a new one the response names)
// and one log line per request, with any path segment that may be a credential masked.
import { randomUUID } from 'node:crypto';
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { looksSecret, redactPath } from '../services/redaction.ts';

/** A valid incoming X-Request-Id, as the contract's header defines it (components/headers/X-Request-Id.yaml). */
const { schema: REQUEST_ID } = definition.components.headers['X-Request-Id'];
const REQUEST_ID_PATTERN = new RegExp(REQUEST_ID.pattern);
const validRequestId = (id: string) => id.length >= REQUEST_ID.minLength && id.length <= REQUEST_ID.maxLength && REQUEST_ID_PATTERN.test(id);

export function accessLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = validRequestId(incoming) && !looksSecret(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '')}`;
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const started = performance.now();
    try {
      await next();
    } finally {
      // Below the info level the line, and the redaction of its path, cost nothing.
      if (logger.isLevelEnabled('info')) {
        const { traceId } = ctx.state as { traceId?: string };
        const line = { requestId, method: ctx.method, path: redactPath(ctx.path), status: ctx.status, ms: Math.round(performance.now() - started) };
        // The trace of a sampled request (http/telemetry.ts), to go from the line to its spans.
        logger.info(traceId ? { ...line, traceId } : line, 'request');
      }
    }
  };
}
