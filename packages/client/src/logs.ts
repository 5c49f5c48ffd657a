// streamInstallLogs: the install log stream (Server-Sent Events) as an async iterator of typed events,
// reconnecting with Last-Event-ID after a drop and ending on the `end` event. eventsource-parser does the parsing.
import type { HeaderParams, PathParams, QueryParams, Schema } from '@platform/api-types';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { PlatformAccessEndedError, PlatformError, PlatformNetworkError } from './errors.ts';
import { backoff, type RetryPolicy } from './retry.ts';
import type { Send } from './transport.ts';

/** An event of the contract's LogEvent with its SSE `event` field named `type`. */
type Typed<E> = E extends { event: infer T } ? { [K in keyof E as K extends 'event' ? 'type' : K]: K extends 'event' ? T : E[K] } : never;

/**
 * One event of the stream: a log line with its resumable id, or the end of the stream. The `access_ended` event is
 * not yielded: it ends the iteration with a PlatformAccessEndedError.
 */
export type LogEvent = Typed<Exclude<Schema<'LogEvent'>, { event: 'access_ended' }>>;

export type InstallId = PathParams<'streamInstallLogs'>['id'];

/** The operation's query parameters, and the call options. */
export type LogStreamOptions = QueryParams<'streamInstallLogs'> & {
  /** Ends the iteration: the pending `next()` rejects with the signal's reason and the connection closes. */
  signal?: AbortSignal;
  /** Time limit in milliseconds for each connection to answer (not for the stream, which may last). */
  timeoutMs?: number;
  /** Sends `X-Workspace-Id`, overriding the client's `workspaceId`. */
  workspaceId?: string;
  /** Resume after this event id, as from an earlier stream's last `log` event. */
  lastEventId?: HeaderParams<'streamInstallLogs'>['Last-Event-ID'];
};

const path = '/v1/installs/{id}/logs';

export async function* streamLogs(send: Send, policy: RetryPolicy, id: InstallId, options: LogStreamOptions = {}): AsyncGenerator<LogEvent, void, undefined> {
  const { signal, timeoutMs, workspaceId, lastEventId, ...query } = options;
  let lastId = lastEventId;
  // Reconnections since the last line received: a stream that keeps dropping without progress gives up.
  let drops = 0;
  const shutdown = serverShutdown();
  for (;;) {
    const header = lastId === undefined ? {} : { 'Last-Event-ID': lastId };
    const { data, release } = await shutdown.explain(`the log stream of install ${id}`, () =>
      send('GET', path, { params: { path: { id }, query, header }, workspaceId, signal, timeoutMs }, 'stream'),
    );
    let cause: unknown;
    try {
      for await (const message of readEvents(data, signal, shutdown.onComment)) {
        if (message.id !== undefined) lastId = message.id;
        if (message.event === 'log') {
          drops = 0;
          yield { type: 'log', id: message.id ?? lastId ?? '', data: parseData<Schema<'LogLine'>>(message) };
        } else if (message.event === 'end') {
          yield { type: 'end', data: parseData<Schema<'LogStreamEnd'>>(message) };
          return;
        } else if (message.event === 'access_ended') {
          throw new PlatformAccessEndedError(parseData<Schema<'StreamAccessEnded'>>(message));
        }
        // Any other event type is one this client does not know yet: skipped.
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof PlatformError) throw error;
      cause = error;
    } finally {
      release();
    }
    // The connection closed (or broke) before `end`: reconnect after the last id received.
    if (drops >= policy.maxRetries) {
      throw new PlatformNetworkError(`The log stream of install ${id} dropped before its end event`, {
        timedOut: false,
        cause,
      });
    }
    await policy.sleep(backoff(policy, drops), signal);
    drops++;
  }
}

/**
 * The Server-Sent Events of a response body. An abort of `signal` ends a pending read at once, with the signal's
 * reason: fetch's own abort does not always reach a body that is being read (seen with Node's fetch once the
 * process had made another request meanwhile), and a followed stream may send nothing for a long time.
 */
export async function* readEvents(
  body: unknown,
  signal?: AbortSignal,
  onComment?: (comment: string) => void,
): AsyncGenerator<EventSourceMessage, void, undefined> {
  // No body (an empty 200) is a connection that ended at once.
  if (!(body instanceof ReadableStream)) return;
  const reader = (body as ReadableStream<Uint8Array>).getReader();
  const stop = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener('abort', stop, { once: true });
  const decoder = new TextDecoder();
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => parsed.push(message), ...(onComment ? { onComment } : {}) });
  try {
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      const { done, value } = await reader.read();
      if (signal?.aborted) throw signal.reason;
      if (done) return;
      parser.feed(decoder.decode(value, { stream: true }));
      for (const message of parsed.splice(0)) yield message;
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    // Closes the connection when the caller stops early or the `end` event came.
    reader.cancel().catch(() => {});
  }
}

/**
 * The contract's `shutdown` block (`: server shutting down; reconnect with Last-Event-ID`) ends a stream whose
 * serving process stops. When no server answers the reconnection, the error says that, not only the refused
 * connection, which reads as if the address were wrong.
 */
export function serverShutdown() {
  let said = false;
  return {
    onComment: (comment: string) => {
      if (comment.trim().startsWith('server shutting down')) said = true;
    },
    explain: async <T>(stream: string, connect: () => Promise<T>): Promise<T> => {
      try {
        return await connect();
      } catch (error) {
        if (!said || !(error instanceof PlatformNetworkError)) throw error;
        throw new PlatformNetworkError(`The server ended ${stream} as it shut down, and no server answered since: ${error.message}`, {
          timedOut: error.timedOut,
          cause: error,
        });
      } finally {
        said = false;
      }
    },
  };
}

export function parseData<Data>(message: EventSourceMessage): Data {
  try {
    // The contract types each event's data; the stream is trusted as the JSON API's bodies are.
    return JSON.parse(message.data) as Data;
  } catch (error) {
    throw new PlatformError(`The stream sent a ${message.event ?? 'message'} event whose data is not JSON`, {
      cause: error,
    });
  }
}
