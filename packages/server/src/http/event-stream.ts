// Writing a Server-Sent Events stream to the socket.
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Writes a stream's chunks as they come, honouring backpressure; a client that reads nothing for `stallMs`
 * is dropped, so a stalled connection never buffers more than one chunk.
 */
export async function writeStream(res: ServerResponse, stream: AsyncIterable<string>, stallMs: number, abort: AbortController): Promise<void> {
  const iterator = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done || res.destroyed) break;
      if (!res.write(next.value)) {
        const timer = new AbortController();
        const drained = await Promise.race([
          once(res, 'drain', { signal: timer.signal }).then(
            () => true,
            () => false,
          ),
          sleep(stallMs, undefined, { signal: timer.signal }).then(
            () => false,
            () => false,
          ),
        ]);
        timer.abort();
        if (!drained) {
          abort.abort();
          res.destroy();
          break;
        }
      }
    }
  } finally {
    await iterator.return?.();
    if (!res.destroyed) res.end();
  }
}
