// writeStream's periodic access check on a stream that goes quiet: a check that comes due while a write waits for
// the socket to drain must still be made once the write is through, not lost until a next chunk that never comes.
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { writeStream } from '../src/http/event-stream.ts';

/** A response whose first write fills the socket: 'drain' comes `drainMs` later. */
class SlowResponse extends EventEmitter {
  readonly written: string[] = [];
  destroyed = false;
  ended = false;
  private readonly drainMs: number;
  constructor(drainMs: number) {
    super();
    this.drainMs = drainMs;
  }
  write(chunk: string): boolean {
    this.written.push(chunk);
    if (this.written.length > 1) return true;
    setTimeout(() => this.emit('drain'), this.drainMs);
    return false;
  }
  end(): void {
    this.ended = true;
  }
  destroy(): void {
    this.destroyed = true;
  }
}

/** One chunk, then nothing more until the stream is given up (as a log tail waits, until its abort). */
async function* oneChunkThenSilence(abort: AbortController): AsyncGenerator<string> {
  yield 'event: log\ndata: {}\n\n';
  await new Promise((resolve) => abort.signal.addEventListener('abort', resolve));
}

describe('writeStream', () => {
  // Lost, the check never comes and the stream never ends: the test then fails on its timeout.
  it('makes a check that came due during a drain once the write is through, on a stream with nothing more to send', { timeout: 5_000 }, async () => {
    const res = new SlowResponse(200);
    let checks = 0;
    const abort = new AbortController();
    await writeStream(res as unknown as ServerResponse, oneChunkThenSilence(abort), 5_000, abort, {
      intervalMs: 50,
      check: async () => {
        checks++;
        return { reason: 'unauthenticated', message: 'Your token has expired.' };
      },
      watch: () => () => {},
    });
    expect(checks).toBe(1);
    expect(res.written).toHaveLength(2);
    expect(res.written[1]).toMatch(/^event: access_ended\ndata: \{"reason":"unauthenticated",/);
    expect(res.ended).toBe(true);
  });
});
