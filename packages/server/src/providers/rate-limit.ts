// Calls to a cloud provider's API are spaced by the service itself, across every process: each call reserves
// the next free moment of its key in one UPDATE (a queue of reservations, GCRA without burst), then waits
// until that moment. So N processes together never exceed `perSecond`, and nobody polls or retries.
import { type Kysely, sql } from 'kysely';

export interface ProviderRateLimit {
  /** Resolves when this caller may make one call, with the moment reserved for it (database clock, ms). */
  take(key: string): Promise<number>;
  /** No call of `key` starts before `untilMs` (Unix ms), in any process: the provider said it has none before. */
  defer(key: string, untilMs: number): Promise<void>;
}

// The limiter keeps its own table (rate_limit_slots) and needs nothing else of the database's.
export function providerRateLimit<DB>(db: Kysely<DB>, perSecond: number): ProviderRateLimit {
  // Fractional above 1000 a second: the bigint column rounds each reservation (a bare 0.1 parameter was refused).
  const spacingMs = 1000 / perSecond;
  return {
    async take(key) {
      // The database's clock, so processes on hosts with skewed clocks agree.
      const { rows } = await sql<{ slot: number; now: number }>`
        INSERT INTO rate_limit_slots AS s (key, next_at_ms)
        VALUES (${key}, floor(extract(epoch FROM clock_timestamp()) * 1000) + ${spacingMs}::float8)
        ON CONFLICT (key) DO UPDATE
          SET next_at_ms = GREATEST(s.next_at_ms, floor(extract(epoch FROM clock_timestamp()) * 1000)) + ${spacingMs}::float8
        RETURNING next_at_ms - ${spacingMs}::float8 AS slot, floor(extract(epoch FROM clock_timestamp()) * 1000) AS now`.execute(db);
      const row = rows[0]!;
      const wait = Number(row.slot) - Number(row.now);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      return Number(row.slot);
    },
    async defer(key, untilMs) {
      await sql`
        INSERT INTO rate_limit_slots AS s (key, next_at_ms) VALUES (${key}, ${Math.ceil(untilMs)})
        ON CONFLICT (key) DO UPDATE SET next_at_ms = GREATEST(s.next_at_ms, EXCLUDED.next_at_ms)`.execute(db);
    },
  };
}
