// Retry policy: exponential backoff with full jitter, Retry-After honoured. Sleep and randomness are
// injectable so tests never wait.

export interface RetryOptions {
  /** Retries after the first attempt. Default 3. */
  maxRetries?: number;
  /** The first backoff step in milliseconds; each retry doubles it. Default 500. */
  baseDelayMs?: number;
  /**
   * The longest wait in milliseconds, computed or asked for by `Retry-After`. A `Retry-After` longer than this
   * fails the call at once (with `retryAfter` on the error) rather than hanging it. Default 30 000.
   */
  maxDelayMs?: number;
  /** Waits `ms`, rejecting with the signal's reason when it aborts. Default: setTimeout. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the jitter. Default: Math.random. */
  random?: () => number;
}

export type RetryPolicy = Required<RetryOptions>;

export function retryPolicy(options: RetryOptions | false = {}): RetryPolicy {
  const given: RetryOptions = options === false ? { maxRetries: 0 } : options;
  return {
    maxRetries: given.maxRetries ?? 3,
    baseDelayMs: given.baseDelayMs ?? 500,
    maxDelayMs: given.maxDelayMs ?? 30_000,
    sleep: given.sleep ?? sleep,
    random: given.random ?? Math.random,
  };
}

/** The wait before retry number `retry` (0-based): full jitter over an exponential cap. */
export function backoff(policy: RetryPolicy, retry: number, retryAfterSeconds?: number): number {
  const jittered = policy.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.max(jittered, (retryAfterSeconds ?? 0) * 1000);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
