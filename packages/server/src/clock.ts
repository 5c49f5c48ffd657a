// Time comes from here, so expiry, throttles and backoff are tested without sleeping.
export interface Clock {
  /** Unix seconds. */
  now(): number;
  /** Unix milliseconds, for what happens within a second (log lines, rate limits). */
  nowMs(): number;
}

export const systemClock: Clock = { now: () => Math.floor(Date.now() / 1000), nowMs: () => Date.now() };
