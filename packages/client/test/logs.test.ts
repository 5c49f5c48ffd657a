// streamInstallLogs(): typed events over SSE, reconnection with Last-Event-ID, the end event, abort.
import { describe, expect, it } from 'vitest';
import { type LogEvent, PlatformApiError, PlatformError, PlatformNetworkError } from '../src/index.ts';
import { collect, errorBody, fakeFetch, hang, json, rejection, streamed, testClient } from './support.ts';

const line = (n: number) => ({ pod: 'shop-web-7d9f8b6c5-x2k4p', container: 'web', timestamp: `2024-11-22T10:51:0${n}.412Z`, line: `line ${n}` });
const logEvent = (n: number) => `id: 1732272661000-00000${n}\nevent: log\ndata: ${JSON.stringify(line(n))}\n\n`;
const endEvent = (reason = 'backlog_sent') => `event: end\ndata: {"reason":"${reason}"}\n\n`;
const log = (n: number): LogEvent => ({ type: 'log', id: `1732272661000-00000${n}`, data: line(n) });
const end = (reason: 'backlog_sent' | 'pods_gone' = 'backlog_sent'): LogEvent => ({ type: 'end', data: { reason } });

/** Splits a text into chunks of `size` characters, so events arrive cut at arbitrary places. */
const chunked = (text: string, size: number) => Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

describe('streamInstallLogs', () => {
  it('yields typed log events, skips keep-alive comments and ends with the end event', async () => {
    const text = `${logEvent(1)}: keep-alive\n\n${logEvent(2)}${endEvent()}`;
    const { fetch, requests } = fakeFetch((request) => streamed(request, chunked(text, 7), 'close').response);
    const { api } = testClient(fetch);
    const events = await collect(api.streamInstallLogs('ins_1', { follow: false, tail: 100, pod: 'shop-web-7d9f8b6c5-x2k4p', container: 'web' }));
    expect(events).toEqual([log(1), log(2), end()]);
    const [request] = requests;
    expect(request?.url).toBe('http://api.test/v1/installs/ins_1/logs?follow=false&tail=100&pod=shop-web-7d9f8b6c5-x2k4p&container=web');
    expect(request?.headers.get('accept')).toBe('text/event-stream, application/json;q=0.9');
    expect(request?.headers.get('last-event-id')).toBeNull();
  });

  it('reconnects with Last-Event-ID after the connection closes before the end event', async () => {
    const { fetch, requests } = fakeFetch(
      (request) => streamed(request, [logEvent(1), logEvent(2)], 'close').response,
      (request) => streamed(request, [logEvent(3), endEvent('pods_gone')], 'close').response,
    );
    const { api, delays } = testClient(fetch, { workspaceId: 'ws_1' });
    const events = await collect(api.streamInstallLogs('ins_1', { since_seconds: 300 }));
    expect(events).toEqual([log(1), log(2), log(3), end('pods_gone')]);
    expect(requests).toHaveLength(2);
    expect(requests[1]?.headers.get('last-event-id')).toBe('1732272661000-000002');
    // The same stream is asked for again.
    expect(requests[1]?.url).toBe(requests[0]?.url);
    expect(requests[1]?.headers.get('x-workspace-id')).toBe('ws_1');
    expect(delays).toEqual([250]);
  });

  it('says the server shut down when its stream ended with the shutdown block and no server answers again', async () => {
    const shutdownBlock = 'retry: 1000\n: server shutting down; reconnect with Last-Event-ID\n\n';
    const refused = () => Promise.reject(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:8080') }));
    const { fetch } = fakeFetch((request) => streamed(request, [logEvent(1), shutdownBlock], 'close').response, refused, refused, refused, refused);
    const { api } = testClient(fetch, { retry: { maxRetries: 3, sleep: async () => {}, random: () => 0.5 } });
    const events: LogEvent[] = [];
    const error = await rejection(
      (async () => {
        for await (const event of api.streamInstallLogs('ins_1')) events.push(event);
      })(),
    );
    expect(events).toEqual([log(1)]);
    expect(error).toBeInstanceOf(PlatformNetworkError);
    expect((error as Error).message).toBe(
      'The server ended the log stream of install ins_1 as it shut down, and no server answered since: GET http://api.test/v1/installs/ins_1/logs failed: connect ECONNREFUSED 127.0.0.1:8080',
    );
    // A stream that merely dropped keeps the refused connection's own words.
    const dropped = fakeFetch((request) => streamed(request, [logEvent(1)], 'close').response, refused, refused, refused, refused);
    const plain = await rejection(
      collect(testClient(dropped.fetch, { retry: { maxRetries: 3, sleep: async () => {}, random: () => 0.5 } }).api.streamInstallLogs('ins_1')),
    );
    expect((plain as Error).message).toBe('GET http://api.test/v1/installs/ins_1/logs failed: connect ECONNREFUSED 127.0.0.1:8080');
  });

  it('reconnects after a connection error cutting an event in half, without yielding the half', async () => {
    const second = logEvent(2);
    const { fetch, requests } = fakeFetch(
      (request) => streamed(request, [logEvent(1), second.slice(0, 20)], 'error').response,
      (request) => streamed(request, [second, endEvent()], 'close').response,
    );
    const { api } = testClient(fetch);
    expect(await collect(api.streamInstallLogs('ins_1'))).toEqual([log(1), log(2), end()]);
    expect(requests[1]?.headers.get('last-event-id')).toBe('1732272661000-000001');
  });

  it('resumes from a given lastEventId', async () => {
    const { fetch, requests } = fakeFetch((request) => streamed(request, [endEvent()], 'close').response);
    const { api } = testClient(fetch);
    await collect(api.streamInstallLogs('ins_1', { lastEventId: '1732272661000-000009', workspaceId: 'ws_2' }));
    expect(requests[0]?.headers.get('last-event-id')).toBe('1732272661000-000009');
    expect(requests[0]?.headers.get('x-workspace-id')).toBe('ws_2');
  });

  it('stops on the end event and closes the connection even if the server keeps it open', async () => {
    let cancelled: Promise<void> = Promise.resolve();
    const { fetch, requests } = fakeFetch((request) => {
      const stream = streamed(request, [logEvent(1), endEvent(), logEvent(2)], 'open');
      cancelled = stream.cancelled;
      return stream.response;
    });
    const { api } = testClient(fetch);
    expect(await collect(api.streamInstallLogs('ins_1'))).toEqual([log(1), end()]);
    await cancelled;
    expect(requests).toHaveLength(1);
  });

  it('closes the connection when the caller stops early', async () => {
    let cancelled: Promise<void> = Promise.resolve();
    const { fetch } = fakeFetch((request) => {
      const stream = streamed(request, [logEvent(1), logEvent(2)], 'open');
      cancelled = stream.cancelled;
      return stream.response;
    });
    const { api } = testClient(fetch);
    for await (const event of api.streamInstallLogs('ins_1')) {
      expect(event).toEqual(log(1));
      break;
    }
    await cancelled;
  });

  it('is cancelled by an AbortSignal: the iteration rejects with its reason and the request is aborted', async () => {
    const { fetch, requests } = fakeFetch((request) => streamed(request, [logEvent(1)], 'open').response);
    const { api } = testClient(fetch);
    const controller = new AbortController();
    const events: LogEvent[] = [];
    const error = await rejection(
      (async () => {
        for await (const event of api.streamInstallLogs('ins_1', { signal: controller.signal })) {
          events.push(event);
          controller.abort();
        }
      })(),
    );
    expect(events).toEqual([log(1)]);
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(requests[0]?.signal.aborted).toBe(true);
    expect(requests).toHaveLength(1);
  });

  it('is cancelled by an AbortSignal while connecting', async () => {
    const { fetch } = fakeFetch(hang);
    const { api } = testClient(fetch);
    const controller = new AbortController();
    const pending = rejection(collect(api.streamInstallLogs('ins_1', { signal: controller.signal })));
    setTimeout(() => controller.abort(), 5);
    expect(await pending).toMatchObject({ name: 'AbortError' });
  });

  it('limits only the connection with timeoutMs, not the stream', async () => {
    const { fetch, requests } = fakeFetch((request) => streamed(request, [logEvent(1)], 'open').response);
    const { api } = testClient(fetch, { retry: false });
    const controller = new AbortController();
    const iterator = api.streamInstallLogs('ins_1', { timeoutMs: 10, signal: controller.signal });
    expect((await iterator.next()).value).toEqual(log(1));
    const next = iterator.next();
    // Well past the timeout, the connection is still open and the next event still awaited.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(requests[0]?.signal.aborted).toBe(false);
    // A pending next() cannot be interrupted by return(): the signal is how to stop waiting.
    controller.abort();
    expect(await rejection(next)).toMatchObject({ name: 'AbortError' });
  });

  it('ends a pending read on abort even when the transport leaves the body open, and closes the body', async () => {
    // A body that does not error when its request is aborted (Node's fetch was seen doing so): the signal alone
    // must end the iteration.
    let cancelled = false;
    const encoder = new TextEncoder();
    const deaf = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start: (controller) => controller.enqueue(encoder.encode(logEvent(1))),
          cancel: () => {
            cancelled = true;
          },
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      );
    const { fetch } = fakeFetch(deaf);
    const { api } = testClient(fetch, { retry: false });
    const controller = new AbortController();
    const iterator = api.streamInstallLogs('ins_1', { signal: controller.signal });
    expect((await iterator.next()).value).toEqual(log(1));
    const next = iterator.next();
    controller.abort();
    expect(await rejection(next)).toMatchObject({ name: 'AbortError' });
    expect(cancelled).toBe(true);
  });

  it('gives up with PlatformNetworkError after maxRetries drops without a new line', async () => {
    const empty = (request: Request) => streamed(request, [], 'close').response;
    const { fetch, requests } = fakeFetch(empty, empty, empty, empty);
    const { api, delays } = testClient(fetch);
    const error = await rejection(collect(api.streamInstallLogs('ins_1')));
    expect(error).toBeInstanceOf(PlatformNetworkError);
    expect(requests).toHaveLength(4);
    expect(delays).toEqual([250, 500, 1000]);
  });

  it('does not reconnect with retry: false', async () => {
    const { fetch, requests } = fakeFetch((request) => streamed(request, [logEvent(1)], 'error').response);
    const { api } = testClient(fetch, { retry: false });
    const events: LogEvent[] = [];
    const error = await rejection(
      (async () => {
        for await (const event of api.streamInstallLogs('ins_1')) events.push(event);
      })(),
    );
    expect(events).toEqual([log(1)]);
    expect(error).toBeInstanceOf(PlatformNetworkError);
    expect((error as Error).cause).toMatchObject({ message: 'terminated' });
    expect(requests).toHaveLength(1);
  });

  it('rejects with PlatformApiError when the stream cannot start', async () => {
    const { fetch } = fakeFetch(() => json(404, errorBody('not_found', 'Install ins_9 not found.'), { 'x-request-id': 'req_404' }));
    const { api } = testClient(fetch);
    const error = await rejection(collect(api.streamInstallLogs('ins_9')));
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error).toMatchObject({ status: 404, code: 'not_found', requestId: 'req_404' });
  });

  it('retries the connection on 503', async () => {
    const { fetch, requests } = fakeFetch(
      () => json(503, errorBody('service_unavailable', 'Later.'), { 'retry-after': '2' }),
      (request) => streamed(request, [endEvent()], 'close').response,
    );
    const { api, delays } = testClient(fetch);
    expect(await collect(api.streamInstallLogs('ins_1'))).toEqual([end()]);
    expect(requests).toHaveLength(2);
    expect(delays).toEqual([2000]);
  });

  it('rejects an event whose data is not JSON with a PlatformError', async () => {
    const { fetch } = fakeFetch((request) => streamed(request, ['id: 1\nevent: log\ndata: not json\n\n'], 'close').response);
    const { api } = testClient(fetch);
    const error = await rejection(collect(api.streamInstallLogs('ins_1')));
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).not.toBeInstanceOf(PlatformNetworkError);
  });

  it('skips event types it does not know', async () => {
    const { fetch } = fakeFetch(
      (request) => streamed(request, ['event: progress\ndata: {}\n\n', logEvent(1), 'data: untyped\n\n', endEvent()], 'close').response,
    );
    const { api } = testClient(fetch);
    expect(await collect(api.streamInstallLogs('ins_1'))).toEqual([log(1), end()]);
  });
});
