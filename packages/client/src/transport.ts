// One call, end to end: openapi-fetch builds the request and reads the body; around it, the attempt loop adds
// headers, per-attempt timeouts, the caller's abort signal, retries, and turns every failure into a PlatformError.
import type { paths } from '@platform/api-types';
import createClient from 'openapi-fetch';
import { type DeprecationHandler, noticeDeprecation } from './deprecation.ts';
import { PlatformApiError, PlatformError, PlatformNetworkError } from './errors.ts';
import { backoff, type RetryPolicy } from './retry.ts';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** A call's init as the transport sees it: the typed surface in client.ts narrows it per operation. */
export interface LooseInit {
  params?: {
    path?: Record<string, unknown>;
    query?: Record<string, unknown>;
    header?: Record<string, unknown>;
  };
  body?: unknown;
  headers?: Record<string, string>;
  workspaceId?: string;
  idempotencyKey?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface TransportOptions {
  baseUrl: string;
  token?: string | undefined;
  workspaceId: string | undefined;
  fetch: ((input: Request) => Promise<Response>) | undefined;
  retry: RetryPolicy;
  timeoutMs: number;
  onDeprecation: DeprecationHandler;
}

export interface Sent {
  data: unknown;
  response: Response;
  /** Stops watching the caller's signal; for a stream, call it once the body is done with. */
  release: () => void;
}

export type Send = (method: HttpMethod, path: string, init: LooseInit, parseAs: 'json' | 'stream') => Promise<Sent>;

// openapi-fetch's request() with the path and init loosened: inside the client the path is a runtime string.
type RawRequest = (
  method: HttpMethod,
  path: string,
  init: {
    params: LooseInit['params'];
    body: unknown;
    headers: Record<string, string>;
    signal: AbortSignal;
    parseAs: 'json' | 'stream';
    fetch: (request: Request) => Promise<Response>;
  },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

/** Statuses that say "try again later": the request was not processed. */
const retryStatuses = new Set([429, 503]);

export function createTransport(options: TransportOptions): Send {
  const raw = createClient<paths>({ baseUrl: options.baseUrl, headers: options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` } });
  const request = raw.request as unknown as RawRequest;
  // Looked up at call time, and called unbound: browsers reject fetch called on another object.
  const baseFetch = options.fetch ?? ((input: Request) => globalThis.fetch(input));
  const policy = options.retry;

  return async function send(method, path, init, parseAs) {
    const { signal, params, body } = init;
    const timeoutMs = init.timeoutMs ?? options.timeoutMs;
    const what = `${method} ${path}`;
    const headers: Record<string, string> = {
      // Errors before a stream starts are JSON bodies, so a stream request accepts both.
      Accept: parseAs === 'stream' ? 'text/event-stream, application/json;q=0.9' : 'application/json',
      ...init.headers,
    };
    const workspaceId = init.workspaceId ?? options.workspaceId;
    if (workspaceId !== undefined) headers['X-Workspace-Id'] = workspaceId;
    if (init.idempotencyKey !== undefined) headers['idempotency-key'] = init.idempotencyKey;
    // GET and DELETE may be repeated; POST and PATCH only when the server can recognise the repeat.
    const retryable = method === 'GET' || method === 'DELETE' || headers['idempotency-key'] !== undefined || params?.header?.['idempotency-key'] !== undefined;

    for (let retry = 0; ; retry++) {
      signal?.throwIfAborted();
      const attempt = startAttempt(signal, timeoutMs);
      let reachedNetwork = false;
      let url = path;
      const fetchOnce = async (req: Request): Promise<Response> => {
        reachedNetwork = true;
        url = req.url;
        const response = await baseFetch(req);
        if (parseAs === 'json' && response.ok && isEventStream(response)) {
          // Parsing a followed stream as JSON would hang on a body that never ends.
          await response.body?.cancel();
          throw new PlatformError(`${what} answers an event stream: read it with streamInstallLogs() or streamEvents()`);
        }
        return response;
      };

      let result: Awaited<ReturnType<RawRequest>>;
      try {
        result = await request(method, path, { params, body, headers, signal: attempt.signal, parseAs, fetch: fetchOnce });
      } catch (error) {
        attempt.release();
        if (signal?.aborted) throw signal.reason;
        // Before the network (bad URL, unserialisable body) or our own verdict: not worth a retry.
        if (!reachedNetwork || error instanceof PlatformError) throw error;
        if (error instanceof SyntaxError) throw new PlatformError(`${what}: the response is not valid JSON`, { cause: error });
        // Named by the URL it went to: a wrong PLATFORM_API_URL or a server that is down shows at once.
        const failure = attempt.timedOut()
          ? new PlatformNetworkError(`${method} ${url} timed out after ${timeoutMs} ms`, { timedOut: true, cause: error })
          : new PlatformNetworkError(`${method} ${url} failed: ${networkReason(error)}`, { timedOut: false, cause: error });
        if (!retryable || retry >= policy.maxRetries) throw failure;
        await policy.sleep(backoff(policy, retry), signal);
        continue;
      }

      const { response } = result;
      noticeDeprecation(what, url, response, options.onDeprecation);
      if (response.ok) {
        if (parseAs === 'stream') {
          // The timeout covers connecting; a followed stream then lasts as long as the caller wants.
          attempt.stopTimer();
          return { data: result.data, response, release: attempt.release };
        }
        attempt.release();
        return { data: result.data, response, release: () => {} };
      }
      attempt.release();
      const failure = PlatformApiError.fromResponse(response, result.error);
      // A 409 on the idempotency-key means the first request with the key is still running: its answer follows.
      const again = retryStatuses.has(response.status) || (response.status === 409 && failure.param === 'idempotency-key');
      if (!retryable || !again || retry >= policy.maxRetries) throw failure;
      const delay = backoff(policy, retry, failure.retryAfter);
      if (delay > policy.maxDelayMs) throw failure;
      await policy.sleep(delay, signal);
    }
  };
}

/** One attempt's signal: aborted by the caller's signal or by the attempt's own timeout. */
function startAttempt(callerSignal: AbortSignal | undefined, timeoutMs: number) {
  const controller = new AbortController();
  let timedOut = false;
  const follow = () => controller.abort(callerSignal?.reason);
  callerSignal?.addEventListener('abort', follow, { once: true });
  const timer =
    Number.isFinite(timeoutMs) && timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          controller.abort(new DOMException(`Timed out after ${timeoutMs} ms`, 'TimeoutError'));
        }, timeoutMs)
      : undefined;
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    stopTimer: () => clearTimeout(timer),
    release: () => {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', follow);
    },
  };
}

function isEventStream(response: Response): boolean {
  return (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Why no answer came, from the innermost cause: fetch says only "fetch failed"; its cause says what and where
 * (`connect ECONNREFUSED 127.0.0.1:8080`, `getaddrinfo ENOTFOUND api.example`; each address tried, when several).
 */
function networkReason(error: unknown): string {
  let innermost: unknown = error;
  while (innermost instanceof Error && innermost.cause !== undefined) innermost = innermost.cause;
  if (innermost instanceof AggregateError && innermost.errors.length > 0) return [...new Set(innermost.errors.map(messageOf))].join('; ');
  return messageOf(innermost);
}
