// Security headers on every answer, errors included. The CSP suits JSON and event streams (nothing may load or
// frame them); /docs drops it (its page runs inline scripts) and /device sends its own.
import type { Middleware } from 'koa';
import type { Config } from '../config.ts';

const JSON_CSP = "default-src 'none'; frame-ancestors 'none'";

export function securityHeaders(config: Pick<Config, 'hstsMaxAge'>): Middleware {
  const headers: Record<string, string> = {
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': JSON_CSP,
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-store',
  };
  if (config.hstsMaxAge > 0) headers['Strict-Transport-Security'] = `max-age=${config.hstsMaxAge}`;
  return async (ctx, next) => {
    ctx.set(headers);
    await next();
  };
}
