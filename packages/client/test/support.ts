// Injected fetch and canned responses: the client's tests never touch the network.
import { createPlatformClient, type PlatformClientOptions } from '../src/index.ts';

export const baseUrl = 'http://api.test';
export const token = 'svc_pat_8fKq2LmN4pR7sT1vW3xY5zA9bC0dE2gH6jK1';

type Handler = (request: Request) => Response | Promise<Response>;

/** A fetch that answers each request with the next handler and records the requests. */
export function fakeFetch(...handlers: Handler[]) {
  const requests: Request[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    requests.push(request);
    const handler = handlers[requests.length - 1];
    if (!handler) throw new Error(`unexpected request ${requests.length}: ${request.method} ${request.url}`);
    return handler(request);
  };
  return { fetch, requests };
}

/** A client on an injected fetch whose retries record their delays instead of waiting. */
export function testClient(fetch: (request: Request) => Promise<Response>, options: Partial<PlatformClientOptions> = {}) {
  const delays: number[] = [];
  const api = createPlatformClient({
    baseUrl,
    token,
    fetch,
    retry: {
      sleep: async (ms) => {
        delays.push(ms);
      },
      random: () => 0.5,
    },
    ...options,
  });
  return { api, delays };
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': `req_${status}`, ...headers },
  });
}

export function errorBody(code: string, message: string, extra: Record<string, unknown> = {}) {
  return { error: { code, message, ...extra } };
}

/** A response that never arrives until the request's signal aborts (then fetch rejects, as a real one does). */
export function hang(request: Request): Promise<Response> {
  return new Promise((_, reject) => {
    request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true });
  });
}

/** What happens after the last chunk of a body: it closes, errors (a dropped connection) or stays open. */
export type Ending = 'close' | 'error' | 'open';

/**
 * A streamed body sent in chunks; like a real fetch body it errors when the request's signal aborts.
 * `cancelled` resolves when the reader cancels it (the client closing the connection).
 */
export function streamed(request: Request, chunks: string[], ending: Ending, contentType = 'text/event-stream') {
  const encoder = new TextEncoder();
  let onCancel: () => void = () => {};
  const cancelled = new Promise<void>((resolve) => {
    onCancel = resolve;
  });
  const queue = chunks.map((chunk) => encoder.encode(chunk));
  // Pulled one chunk per read, so an error comes after the chunks were read, as a dropped connection does.
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        request.signal.addEventListener('abort', () => controller.error(request.signal.reason), { once: true });
      },
      pull(controller) {
        const chunk = queue.shift();
        if (chunk) controller.enqueue(chunk);
        else if (ending === 'close') controller.close();
        else if (ending === 'error') controller.error(new TypeError('terminated'));
        // 'open': the read stays pending.
      },
      cancel() {
        onCancel();
      },
    },
    { highWaterMark: 0 },
  );
  const response = new Response(body, { status: 200, headers: { 'content-type': contentType, 'x-request-id': 'req_stream' } });
  return { response, cancelled };
}

/** Drains an async iterable. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** The rejection of a promise (fails when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}
