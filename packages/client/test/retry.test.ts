// Retries (backoff with jitter, Retry-After, which methods), idempotency keys, timeouts and abort.
import { describe, expect, it } from 'vitest';
import { createPlatformClient, PlatformApiError, PlatformNetworkError } from '../src/index.ts';
import { baseUrl, errorBody, fakeFetch, hang, json, rejection, testClient, token } from './support.ts';

const regions = { data: [{ id: 'fsn1' }], pagination: { cursor: 'c', has_more: false } };
const unavailable = () => json(503, errorBody('service_unavailable', 'The service is temporarily unavailable.'), { 'retry-after': '1' });
const rateLimited = (seconds: string) => () => json(429, errorBody('rate_limited', 'Too many requests.'), { 'retry-after': seconds });
const networkDown = () => Promise.reject(new TypeError('fetch failed'));
const install = { id: 'ins_1', status: 'pending' };
const installBody = { product_id: 'prd_1', region_id: 'fsn1' };

describe('retries', () => {
  it('retries a GET on 503, waiting at least Retry-After', async () => {
    const { fetch, requests } = fakeFetch(unavailable, () => json(200, regions));
    const { api, delays } = testClient(fetch);
    await expect(api.GET('/v1/regions')).resolves.toEqual(regions);
    expect(requests).toHaveLength(2);
    expect(delays).toEqual([1000]);
  });

  it('retries on 429 honouring Retry-After', async () => {
    const { fetch, requests } = fakeFetch(rateLimited('2'), rateLimited('0'), () => json(200, regions));
    const { api, delays } = testClient(fetch);
    await expect(api.GET('/v1/regions')).resolves.toEqual(regions);
    expect(requests).toHaveLength(3);
    // Retry-After 2 s outweighs the first backoff step; with Retry-After 0 the jittered backoff applies.
    expect(delays).toEqual([2000, 500]);
  });

  it('retries a 409 on the idempotency-key (the first request with the key still running) and gets its answer; no other 409', async () => {
    const inFlight = () => json(409, errorBody('conflict', 'A request with this idempotency-key is still being processed.', { param: 'idempotency-key' }));
    const { fetch, requests } = fakeFetch(inFlight, inFlight, () => json(202, install));
    const { api } = testClient(fetch);
    await expect(api.POST('/v1/installs', { body: installBody, idempotencyKey: 'order-42' })).resolves.toEqual(install);
    expect(requests).toHaveLength(3);
    const busy = () => json(409, errorBody('conflict', 'A change of the install is in flight.'));
    const other = fakeFetch(busy, () => json(202, install));
    await expect(testClient(other.fetch).api.POST('/v1/installs', { body: installBody, idempotencyKey: 'order-43' })).rejects.toMatchObject({ status: 409 });
    expect(other.requests).toHaveLength(1);
  });

  it('understands Retry-After as an HTTP date', async () => {
    const later = new Date(Date.now() + 3_000).toUTCString();
    const { fetch } = fakeFetch(rateLimited(later), () => json(200, regions));
    const { api, delays } = testClient(fetch);
    await api.GET('/v1/regions');
    expect(delays[0]).toBeGreaterThanOrEqual(2000);
    expect(delays[0]).toBeLessThanOrEqual(3000);
  });

  it('retries network errors with exponential backoff and jitter', async () => {
    const { fetch, requests } = fakeFetch(networkDown, networkDown, networkDown, () => json(200, regions));
    const delays: number[] = [];
    const random = [0.5, 0.25, 1];
    const api = createPlatformClient({
      baseUrl,
      token,
      fetch,
      retry: { baseDelayMs: 100, sleep: async (ms) => void delays.push(ms), random: () => random.shift() ?? 0 },
    });
    await expect(api.GET('/v1/regions')).resolves.toEqual(regions);
    expect(requests).toHaveLength(4);
    // Full jitter: random × min(max, base × 2^retry).
    expect(delays).toEqual([0.5 * 100, 0.25 * 200, 1 * 400]);
  });

  it('caps the backoff at maxDelayMs', async () => {
    const { fetch } = fakeFetch(networkDown, networkDown, () => json(200, regions));
    const delays: number[] = [];
    const { api } = testClient(fetch, { retry: { baseDelayMs: 1000, maxDelayMs: 1500, sleep: async (ms) => void delays.push(ms), random: () => 1 } });
    await api.GET('/v1/regions');
    expect(delays).toEqual([1000, 1500]);
  });

  it('gives up after maxRetries with the last error, carrying retryAfter', async () => {
    const { fetch, requests } = fakeFetch(unavailable, unavailable, unavailable, unavailable);
    const { api, delays } = testClient(fetch);
    const error = await rejection(api.GET('/v1/regions'));
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error).toMatchObject({ status: 503, code: 'service_unavailable', retryAfter: 1 });
    expect(requests).toHaveLength(4);
    expect(delays).toHaveLength(3);
  });

  it('fails at once when Retry-After asks for longer than maxDelayMs', async () => {
    const { fetch, requests } = fakeFetch(rateLimited('3600'));
    const { api, delays } = testClient(fetch);
    const error = await rejection(api.GET('/v1/regions'));
    expect(error).toMatchObject({ status: 429, code: 'rate_limited', retryAfter: 3600 });
    expect(requests).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('does not retry other statuses', async () => {
    const { fetch, requests } = fakeFetch(() => json(500, errorBody('internal_error', 'Boom.', { details: { request_id: 'req_1' } })));
    const { api } = testClient(fetch);
    expect(await rejection(api.GET('/v1/regions'))).toMatchObject({ status: 500, code: 'internal_error' });
    expect(requests).toHaveLength(1);
  });

  it('makes a single attempt with retry: false', async () => {
    const { fetch, requests } = fakeFetch(unavailable);
    const { api } = testClient(fetch, { retry: false });
    expect(await rejection(api.GET('/v1/regions'))).toMatchObject({ status: 503 });
    expect(requests).toHaveLength(1);
  });

  it('retries a DELETE', async () => {
    const { fetch, requests } = fakeFetch(networkDown, () => new Response(null, { status: 204 }));
    const { api } = testClient(fetch);
    await expect(api.DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: 'cl_1' } } })).resolves.toBeUndefined();
    expect(requests).toHaveLength(2);
  });
});

describe('idempotency', () => {
  it('does not retry a POST without an idempotency key', async () => {
    const { fetch, requests } = fakeFetch(unavailable);
    const { api } = testClient(fetch);
    const error = await rejection(api.POST('/v1/clusters', { body: { name: 'prod-eu', region_id: 'fsn1', kaas_version: 'v1.31' } }));
    expect(error).toMatchObject({ status: 503 });
    expect(requests).toHaveLength(1);
    expect(requests[0]?.headers.get('idempotency-key')).toBeNull();
  });

  it('does not retry a POST without a key after a network error either', async () => {
    const { fetch, requests } = fakeFetch(networkDown);
    const { api } = testClient(fetch);
    expect(await rejection(api.POST('/v1/user/tokens', { body: { name: 'ci', scopes: ['*'] } }))).toBeInstanceOf(PlatformNetworkError);
    expect(requests).toHaveLength(1);
  });

  it('does not retry a PATCH', async () => {
    const { fetch, requests } = fakeFetch(unavailable);
    const { api } = testClient(fetch);
    await rejection(api.PATCH('/v1/notifications/{id}/read', { params: { path: { id: 'ntf_1' } } }));
    expect(requests).toHaveLength(1);
  });

  it('createInstall generates a key and sends the same one on every retry', async () => {
    const { fetch, requests } = fakeFetch(unavailable, networkDown, rateLimited('1'), () => json(202, install));
    const { api } = testClient(fetch);
    await expect(api.POST('/v1/installs', { body: installBody })).resolves.toEqual(install);
    expect(requests).toHaveLength(4);
    const keys = requests.map((request) => request.headers.get('idempotency-key'));
    expect(keys[0]).toMatch(/^[0-9a-f-]{32,36}$/);
    expect(new Set(keys)).toEqual(new Set([keys[0]]));
    // Every attempt sends the same body.
    expect(await Promise.all(requests.map((request) => request.json()))).toEqual(Array(4).fill(installBody));
  });

  it('createInstall generates a new key per call', async () => {
    const { fetch, requests } = fakeFetch(
      () => json(202, install),
      () => json(202, install),
    );
    const { api } = testClient(fetch);
    await api.POST('/v1/installs', { body: installBody });
    await api.POST('/v1/installs', { body: installBody });
    const [first, second] = requests.map((request) => request.headers.get('idempotency-key'));
    expect(first).not.toBe(second);
  });

  it('createInstall sends the caller’s key, from the option or the header parameter', async () => {
    const { fetch, requests } = fakeFetch(
      unavailable,
      () => json(202, install),
      () => json(202, install),
    );
    const { api } = testClient(fetch);
    await api.POST('/v1/installs', { body: installBody, idempotencyKey: 'key-1', workspaceId: 'ws_2' });
    await api.POST('/v1/installs', { body: installBody, params: { header: { 'idempotency-key': 'key-2' } } });
    expect(requests.map((request) => request.headers.get('idempotency-key'))).toEqual(['key-1', 'key-1', 'key-2']);
    expect(requests[0]?.headers.get('x-workspace-id')).toBe('ws_2');
  });
});

describe('timeouts', () => {
  it('aborts an attempt after timeoutMs and rejects with a timed-out PlatformNetworkError', async () => {
    const { fetch, requests } = fakeFetch(hang);
    const { api } = testClient(fetch, { retry: false, timeoutMs: 20 });
    const error = await rejection(api.GET('/v1/regions'));
    expect(error).toBeInstanceOf(PlatformNetworkError);
    expect(error).toMatchObject({ timedOut: true, message: `GET ${baseUrl}/v1/regions timed out after 20 ms` });
    expect(requests[0]?.signal.aborted).toBe(true);
  });

  it('takes a call’s own timeoutMs, and retries a timed-out GET', async () => {
    const { fetch, requests } = fakeFetch(hang, () => json(200, regions));
    const { api, delays } = testClient(fetch, { timeoutMs: 60_000 });
    await expect(api.GET('/v1/regions', { timeoutMs: 20 })).resolves.toEqual(regions);
    expect(requests).toHaveLength(2);
    expect(delays).toHaveLength(1);
  });

  it('covers reading the body', async () => {
    // Headers arrive at once, the body never ends: the timeout still ends the attempt.
    const { fetch } = fakeFetch((request) => {
      const body = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"data": ['));
          request.signal.addEventListener('abort', () => controller.error(request.signal.reason));
        },
      });
      return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
    });
    const { api } = testClient(fetch, { retry: false, timeoutMs: 20 });
    expect(await rejection(api.GET('/v1/regions'))).toMatchObject({ timedOut: true });
  });
});

describe('abort', () => {
  it('rejects with the signal’s reason, aborts the request and does not retry', async () => {
    const { fetch, requests } = fakeFetch(hang);
    const { api } = testClient(fetch);
    const controller = new AbortController();
    const pending = rejection(api.GET('/v1/regions', { signal: controller.signal }));
    await Promise.resolve();
    controller.abort();
    const error = await pending;
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('AbortError');
    expect(requests).toHaveLength(1);
    expect(requests[0]?.signal.aborted).toBe(true);
  });

  it('sends nothing when the signal is already aborted', async () => {
    const { fetch, requests } = fakeFetch();
    const { api } = testClient(fetch);
    const reason = new Error('gone');
    expect(await rejection(api.GET('/v1/regions', { signal: AbortSignal.abort(reason) }))).toBe(reason);
    expect(requests).toHaveLength(0);
  });

  it('stops waiting for a retry when aborted during the backoff', async () => {
    const { fetch, requests } = fakeFetch(rateLimited('20'));
    // The real sleep this time: the abort must cut the 20 s wait short.
    const api = createPlatformClient({ baseUrl, token, fetch });
    const controller = new AbortController();
    const pending = rejection(api.GET('/v1/regions', { signal: controller.signal }));
    setTimeout(() => controller.abort(), 20);
    const started = Date.now();
    expect((await pending) as DOMException).toMatchObject({ name: 'AbortError' });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(requests).toHaveLength(1);
  });
});
