// Writing a Server-Sent Events stream to the socket, for as long as its caller may read it.
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AccessEnded, StreamAccessCheck } from './stream-access.ts';

/** How a stream's caller is checked again while it is open. */
export interface StreamGuard {
  check: StreamAccessCheck;
  /** At least this often (ms), whether or not anything is sent. */
  intervalMs: number;
  /** Calls `changed` when the caller's access may have changed (then the check runs before anything more is sent); returns the unsubscribe. */
  watch(changed: () => void): () => void;
}

const accessEnded = (ended: AccessEnded) => `event: access_ended\ndata: ${JSON.stringify(ended)}\n\n`;

/**
 * Writes a stream's chunks as they come, honouring backpressure; a client that reads nothing for `stallMs`
 * is dropped, so a stalled connection never buffers more than one chunk. The caller's access is checked again
 * every `guard.intervalMs` and, after a change it is told of, before the next chunk: a caller who lost it gets
 * one `access_ended` event saying why, and the stream ends. A check that cannot be made (the database is away)
 * ends the stream without it: the client reconnects, and is checked as any new request is.
 */
export async function writeStream(
  res: ServerResponse,
  stream: AsyncIterable<string>,
  stallMs: number,
  abort: AbortController,
  guard: StreamGuard,
): Promise<void> {
  const iterator = stream[Symbol.asyncIterator]();
  let changed = false;
  // The periodic check's timer is the stream's own, restarted after each check (not a timer and two abort signals
  // a chunk: 1,000 followers of a busy log made tens of thousands a second). It, or a change of access, wakes the
  // turn waiting for the next chunk; one that comes while none waits (a write is draining) is kept for the next.
  let due = false;
  const keep = () => {
    due = true;
  };
  let wake = keep;
  const recheck = setTimeout(() => wake(), guard.intervalMs);
  const unwatch = guard.watch(() => {
    changed = true;
    wake();
  });
  let checkedAt = Date.now();
  /** False once the caller lost access (told) or it could not be checked. */
  const stillAllowed = async (): Promise<boolean> => {
    changed = false;
    checkedAt = Date.now();
    recheck.refresh();
    const ended = await guard.check().catch(() => null);
    if (ended === undefined) return true;
    if (ended && !res.destroyed) res.write(accessEnded(ended));
    // Ends the stream's own waits (a poll, a tail) so the iterator returns at once.
    abort.abort();
    return false;
  };
  let pending: Promise<IteratorResult<string>> | undefined;
  try {
    for (;;) {
      pending ??= iterator.next();
      const next = due
        ? 'check'
        : await Promise.race([
            pending,
            new Promise<'check'>((resolve) => {
              wake = () => resolve('check');
            }),
          ]);
      wake = keep;
      due = false;
      if ((next === 'check' || changed || Date.now() - checkedAt >= guard.intervalMs) && !(await stillAllowed())) break;
      if (next === 'check') continue;
      pending = undefined;
      if (next.done || res.destroyed) break;
      if (!res.write(next.value)) {
        const drainTimer = new AbortController();
        const drained = await Promise.race([
          once(res, 'drain', { signal: drainTimer.signal }).then(
            () => true,
            () => false,
          ),
          sleep(stallMs, undefined, { signal: drainTimer.signal }).then(
            () => false,
            () => false,
          ),
        ]);
        drainTimer.abort();
        if (!drained) {
          abort.abort();
          res.destroy();
          break;
        }
      }
    }
  } finally {
    clearTimeout(recheck);
    unwatch();
    // A step still running when the stream ended settles unread.
    pending?.catch(() => {});
    await iterator.return?.();
    if (!res.destroyed) res.end();
  }
}
