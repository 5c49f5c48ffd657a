// The API's rate limit: a fixed window of 60 s per key (the caller's token, the user for OAuth2 JWTs, the client
// address for the unauthenticated device-flow steps), counted in PostgreSQL by one upsert per request so every
// server process shares the count. Answers carry the IETF RateLimit headers in the form of
// draft-ietf-httpapi-ratelimit-headers-09 (structured fields):
//   RateLimit-Policy: "default";q=600;w=60
//   RateLimit: "default";r=599;t=42
// and a refusal is 429 rate_limited with Retry-After (the seconds until the window resets).
import { type Kysely, sql } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { ApiError } from '../errors.ts';

export const WINDOW_SECONDS = 60;

export interface RateLimitPolicy {
  /** The policy's name in the headers ("default" per caller, "device" per client address). */
  name: string;
  /** Requests per window; 0 disables the policy. */
  limit: number;
}

export interface ApiRateLimiter {
  /** Counts one request of `key` under `policy`; throws 429 when the window's quota is spent. */
  hit(key: string, policy: RateLimitPolicy): Promise<Record<string, string>>;
}

/** Keys whose window ended this long ago are deleted now and then (they would be reset on next use anyway). */
const STALE_SECONDS = 3600;
const CLEANUP_EVERY = 1000;

export function apiRateLimiter(db: Kysely<Database>, clock: Clock): ApiRateLimiter {
  let sinceCleanup = 0;
  return {
    async hit(key, policy) {
      const now = clock.now();
      const windowStart = now - (now % WINDOW_SECONDS);
      // A row from an older window starts over at 1; one from the current (or, on a host whose clock is behind,
      // a newer) window counts on.
      const { rows } = await sql<{ requests: number; window_started_at: number | string }>`
        INSERT INTO api_rate_limits AS r (key, window_started_at, requests)
        VALUES (${key}, ${windowStart}, 1)
        ON CONFLICT (key) DO UPDATE
          SET requests = CASE WHEN r.window_started_at >= EXCLUDED.window_started_at THEN r.requests + 1 ELSE 1 END,
              window_started_at = GREATEST(r.window_started_at, EXCLUDED.window_started_at)
        RETURNING requests, window_started_at`.execute(db);
      const row = rows[0]!;
      const requests = Number(row.requests);
      const resetSeconds = Math.max(1, Number(row.window_started_at) + WINDOW_SECONDS - now);
      const remaining = Math.max(0, policy.limit - requests);
      const headers = {
        'RateLimit-Policy': `"${policy.name}";q=${policy.limit};w=${WINDOW_SECONDS}`,
        RateLimit: `"${policy.name}";r=${remaining};t=${resetSeconds}`,
      };
      if (++sinceCleanup >= CLEANUP_EVERY) {
        sinceCleanup = 0;
        void db
          .deleteFrom('api_rate_limits')
          .where('window_started_at', '<', now - STALE_SECONDS)
          .execute()
          .catch(() => {});
      }
      if (requests > policy.limit) {
        throw new ApiError(
          'rate_limited',
          `Too many requests; ${policy.name === 'device' ? 'this address' : 'you'} may make ${policy.limit} requests a minute.`,
          {
            suggestion: 'Wait for the number of seconds in Retry-After, then retry.',
            details: { limit: policy.limit, window_seconds: WINDOW_SECONDS },
            headers: { ...headers, 'Retry-After': String(resetSeconds) },
          },
        );
      }
      return headers;
    },
  };
}
