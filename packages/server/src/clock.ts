// Time comes from here, so expiry, throttles and backoff are tested without sleeping.
export interface Clock {
  /** Unix seconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Math.floor(Date.now() / 1000) };
