// streamEvents: the workspace's events stream (Server-Sent Events) as an async iterator of events, reconnecting
// with Last-Event-ID after a drop. It has no end: the caller stops it, or the server ends it with `access_ended`
// (a PlatformAccessEndedError).
import type { HeaderParams, QueryParams, Schema } from '@platform/api-types';
import { PlatformAccessEndedError, PlatformError, PlatformNetworkError } from './errors.ts';
import { parseData, readEvents, serverShutdown } from './logs.ts';
import { backoff, type RetryPolicy } from './retry.ts';
import type { Send } from './transport.ts';

export type EventStreamOptions = QueryParams<'streamEvents'> & {
  /** Ends the iteration: the pending `next()` rejects with the signal's reason and the connection closes. */
  signal?: AbortSignal;
  /** Time limit in milliseconds for each connection to answer (not for the stream, which may last). */
  timeoutMs?: number;
  /** Sends `X-Workspace-Id`, overriding the client's `workspaceId`. */
  workspaceId?: string;
  /** Resume after this event id. */
  lastEventId?: HeaderParams<'streamEvents'>['Last-Event-ID'];
};

export async function* streamEvents(send: Send, policy: RetryPolicy, options: EventStreamOptions = {}): AsyncGenerator<Schema<'Event'>, void, undefined> {
  const { signal, timeoutMs, workspaceId, lastEventId, ...query } = options;
  let lastId = lastEventId;
  // Reconnections since the last event received: a stream that keeps dropping without progress gives up.
  let drops = 0;
  const shutdown = serverShutdown();
  for (;;) {
    const header = lastId === undefined ? {} : { 'Last-Event-ID': lastId };
    const { data, release } = await shutdown.explain('the events stream', () =>
      send('GET', '/v1/events/stream', { params: { query, header }, workspaceId, signal, timeoutMs }, 'stream'),
    );
    let cause: unknown;
    try {
      for await (const message of readEvents(data, signal, shutdown.onComment)) {
        // The caller lost access: the server closes the stream, and would refuse a reconnection.
        if (message.event === 'access_ended') throw new PlatformAccessEndedError(parseData<Schema<'StreamAccessEnded'>>(message));
        // Any other event type is one this client does not know yet: skipped.
        if (message.event !== 'event') continue;
        if (message.id !== undefined) lastId = message.id;
        drops = 0;
        yield parseData<Schema<'Event'>>(message);
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof PlatformError) throw error;
      cause = error;
    } finally {
      release();
    }
    if (drops >= policy.maxRetries) throw new PlatformNetworkError('The events stream dropped', { timedOut: false, cause });
    await policy.sleep(backoff(policy, drops), signal);
    drops++;
  }
}
