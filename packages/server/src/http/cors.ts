// Cross-origin calls from browsers, for the origins in CORS_ORIGINS only (none by default): a front end moved
// from the mock (which allows any origin) to the server keeps working once its origin is listed. Tokens travel
// in the Authorization header, never in cookies, so credentials are not allowed.
import type { Middleware } from 'koa';
import { ApiError } from '../errors.ts';

/** Request headers a browser may send: the ones the contract's operations read. */
const ALLOWED_HEADERS = 'Authorization, Content-Type, X-Workspace-Id, Idempotency-Key, Last-Event-ID, X-Request-Id';
/** Response headers a browser script may read. */
export const EXPOSED_HEADERS =
  'X-Request-Id, Retry-After, RateLimit, RateLimit-Policy, Idempotent-Replayed, Allow, WWW-Authenticate, Deprecation, Sunset, Link';
const ALLOWED_METHODS = 'GET, POST, PATCH, DELETE';
/** How long a browser may cache a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = '600';

export function cors(origins: string[]): Middleware {
  const allowed = new Set(origins);
  return async (ctx, next) => {
    const origin = ctx.get('Origin');
    const preflight = ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method') !== '';
    if (!origin || !allowed.has(origin)) {
      if (preflight) {
        throw new ApiError('forbidden', `Origin ${origin || '(none)'} may not call this API from a browser.`, {
          param: 'Origin',
          suggestion: 'Ask the operator to add the origin to CORS_ORIGINS.',
        });
      }
      await next();
      return;
    }
    ctx.vary('Origin');
    ctx.set('Access-Control-Allow-Origin', origin);
    ctx.set('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    if (preflight) {
      ctx.set('Access-Control-Allow-Methods', ALLOWED_METHODS);
      ctx.set('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      ctx.set('Access-Control-Max-Age', PREFLIGHT_MAX_AGE_SECONDS);
      ctx.status = 204;
      return;
    }
    await next();
  };
}
