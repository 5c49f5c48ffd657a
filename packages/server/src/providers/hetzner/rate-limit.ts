// Hetzner Cloud limits requests per project token (3600 an hour by default, refilled one a second). The driver
// keeps one bucket per token in the shared PostgreSQL limiter (providers/rate-limit.ts), keyed by a
// digest of the token so the token itself is never stored, and spaces calls at the configured hourly rate.
//
// Hetzner's answers then correct the bucket: a token is shared with whatever else uses the same project
// (the user's own tools, for a BYOM token), so our count is a lower bound. When an answer says
// RateLimit-Remaining is 0 (or the call got 429), the bucket's next free moment is pushed to when Hetzner
// refills the next request: (RateLimit-Reset − now) / (RateLimit-Limit − RateLimit-Remaining), never past
// RateLimit-Reset. Every process then waits, not only the one that saw the answer.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { providerRateLimit } from '../rate-limit.ts';

export interface TokenRateLimit {
  /** Waits for this token's next slot. */
  take(key: string): Promise<void>;
  /** No call of this token starts before `untilMs` (Unix ms), in any process. */
  defer(key: string, untilMs: number): Promise<void>;
}

/** The bucket key of a token: a digest, so neither the table nor a log holds the token. */
export function bucketKey(token: string): string {
  return `hetzner:${createHash('sha256').update(token).digest('hex').slice(0, 32)}`;
}

export function tokenRateLimit<DB>(db: Kysely<DB>, perHour: number): TokenRateLimit {
  const limit = providerRateLimit(db, perHour / 3600);
  return {
    async take(key) {
      await limit.take(key);
    },
    defer: (key, untilMs) => limit.defer(key, untilMs),
  };
}

export interface RateLimitHeaders {
  limit: number;
  remaining: number;
  /** Unix seconds at which the bucket is full again. */
  reset: number;
}

export function rateLimitHeaders(headers: Headers): RateLimitHeaders | undefined {
  const limit = Number(headers.get('RateLimit-Limit'));
  const remaining = Number(headers.get('RateLimit-Remaining'));
  const reset = Number(headers.get('RateLimit-Reset'));
  if (!headers.has('RateLimit-Reset') || !Number.isFinite(limit) || !Number.isFinite(remaining) || !Number.isFinite(reset)) return undefined;
  return { limit, remaining, reset };
}

/** When Hetzner has the next request for this token (Unix ms), or undefined when it has some now. */
export function nextRequestAt(headers: RateLimitHeaders, nowMs: number, exhausted: boolean): number | undefined {
  if (!exhausted && headers.remaining > 0) return undefined;
  const resetMs = headers.reset * 1000;
  const missing = Math.max(1, headers.limit - headers.remaining);
  return Math.min(resetMs, nowMs + Math.max(0, resetMs - nowMs) / missing);
}
