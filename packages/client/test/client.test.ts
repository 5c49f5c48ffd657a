// Requests as the contract wants them, success bodies as the methods resolve them, and the error story.
import { describe, expect, it } from 'vitest';
import { PlatformApiError, PlatformError, PlatformNetworkError } from '../src/index.ts';
import { errorBody, fakeFetch, json, rejection, streamed, testClient, token } from './support.ts';

const cluster = {
  id: 'cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
  name: 'prod-eu',
  workspace_id: 'ws_01jd2x8k4q3m7n5p9r6s2t8v0w',
  region_id: 'fsn1',
  kaas: { version: 'v1.31', status: 'RUNNING', status_message: null },
  created_at: 1732268900,
};

describe('requests', () => {
  it('sends the token, JSON accept, path and query parameters', async () => {
    const { fetch, requests } = fakeFetch(() => json(200, { data: [cluster], pagination: { cursor: 'c1', has_more: false } }));
    const { api } = testClient(fetch);
    const page = await api.GET('/v1/clusters', { params: { query: { limit: 10 } } });
    expect(page.data[0]?.name).toBe('prod-eu');
    const [request] = requests;
    expect(request?.method).toBe('GET');
    expect(request?.url).toBe('http://api.test/v1/clusters?limit=10');
    expect(request?.headers.get('authorization')).toBe(`Bearer ${token}`);
    expect(request?.headers.get('accept')).toBe('application/json');
    expect(request?.headers.get('x-workspace-id')).toBeNull();
  });

  it('sends no Authorization header without a token (the device sign-in calls)', async () => {
    const { fetch, requests } = fakeFetch(() =>
      json(200, {
        device_code: 'd',
        user_code: 'WDJB-MJHT',
        verification_uri: 'http://api.test/device',
        verification_uri_complete: 'http://api.test/device?user_code=WDJB-MJHT',
        expires_in: 600,
        interval: 5,
      }),
    );
    const { api } = testClient(fetch, { token: undefined });
    await api.POST('/v1/auth/device/code', {});
    expect(requests[0]?.headers.get('authorization')).toBeNull();
  });

  it('encodes a path parameter into one segment', async () => {
    const { fetch, requests } = fakeFetch(() => json(200, { drifted: false, reason: null }));
    const { api } = testClient(fetch);
    await api.GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: 'compute://mch_01' } } });
    expect(new URL(requests[0]?.url ?? '').pathname).toBe('/v1/compute/machines/compute%3A%2F%2Fmch_01/drift');
  });

  it('sends the JSON body', async () => {
    const { fetch, requests } = fakeFetch(() => json(202, cluster));
    const { api } = testClient(fetch);
    const created = await api.POST('/v1/clusters', { body: { name: 'prod-eu', region_id: 'fsn1', kaas_version: 'v1.31' } });
    expect(created).toEqual(cluster);
    expect(requests[0]?.headers.get('content-type')).toBe('application/json');
    expect(await requests[0]?.json()).toEqual({ name: 'prod-eu', region_id: 'fsn1', kaas_version: 'v1.31' });
  });

  it('sends the client’s workspace, and a call’s own instead when it gives one', async () => {
    const page = { data: [], pagination: { cursor: '', has_more: false } };
    const { fetch, requests } = fakeFetch(
      () => json(200, page),
      () => json(200, page),
    );
    const { api } = testClient(fetch, { workspaceId: 'ws_default' });
    await api.GET('/v1/clusters');
    await api.GET('/v1/clusters', { workspaceId: 'ws_other' });
    expect(requests.map((request) => request.headers.get('x-workspace-id'))).toEqual(['ws_default', 'ws_other']);
  });

  it('adds a call’s extra headers', async () => {
    const { fetch, requests } = fakeFetch(() => json(200, []));
    const { api } = testClient(fetch);
    await api.GET('/v1/quotas', { headers: { 'X-Request-Id': 'trace-123' } });
    expect(requests[0]?.headers.get('x-request-id')).toBe('trace-123');
  });
});

describe('success bodies', () => {
  it('resolves a 204 to undefined', async () => {
    const { fetch, requests } = fakeFetch(() => new Response(null, { status: 204 }));
    const { api } = testClient(fetch);
    await expect(api.DELETE('/v1/compute/configs/{id}', { params: { path: { id: 'cc_1' } } })).resolves.toBeUndefined();
    expect(requests[0]?.method).toBe('DELETE');
    expect(new URL(requests[0]?.url ?? '').pathname).toBe('/v1/compute/configs/cc_1');
  });

  it('rejects a success body that is not JSON with a PlatformError, without retrying', async () => {
    const { fetch, requests } = fakeFetch(() => new Response('{"data": [', { status: 200, headers: { 'content-type': 'application/json' } }));
    const { api } = testClient(fetch);
    const error = await rejection(api.GET('/v1/clusters'));
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).not.toBeInstanceOf(PlatformNetworkError);
    expect(requests).toHaveLength(1);
  });

  it('refuses to read an event stream as JSON and closes it', async () => {
    let cancelled: Promise<void> = Promise.resolve();
    const { fetch } = fakeFetch((request) => {
      const stream = streamed(request, [': keep-alive\n\n'], 'open');
      cancelled = stream.cancelled;
      return stream.response;
    });
    const { api } = testClient(fetch);
    // Not a GET path in the types; a caller who casts it around still gets a clear error, not a hang.
    const get = api.GET as (path: string, init: object) => Promise<unknown>;
    const error = await rejection(get('/v1/installs/{id}/logs', { params: { path: { id: 'ins_1' } } }));
    expect(error).toBeInstanceOf(PlatformError);
    expect((error as Error).message).toMatch(/streamInstallLogs/);
    await cancelled;
  });
});

describe('errors', () => {
  it('carries the error body’s fields, the status and X-Request-Id', async () => {
    const { fetch } = fakeFetch(() =>
      json(
        422,
        errorBody('validation_error', 'limit must be between 1 and 100.', {
          param: 'limit',
          suggestion: 'Use a limit from 1 to 100.',
          details: { minimum: 1, maximum: 100 },
        }),
        { 'x-request-id': 'req_01jd2x9b7c4k8m3n6p2q5r7s9t' },
      ),
    );
    const { api } = testClient(fetch);
    const error = await rejection(api.GET('/v1/clusters', { params: { query: { limit: 500 } } }));
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({
      name: 'PlatformApiError',
      status: 422,
      code: 'validation_error',
      message: 'limit must be between 1 and 100.',
      param: 'limit',
      suggestion: 'Use a limit from 1 to 100.',
      details: { minimum: 1, maximum: 100 },
      requestId: 'req_01jd2x9b7c4k8m3n6p2q5r7s9t',
      retryAfter: undefined,
    });
  });

  it('leaves the optional fields undefined when the body has none', async () => {
    const { fetch } = fakeFetch(() => json(401, errorBody('unauthorized', 'The token is not valid.')));
    const { api } = testClient(fetch);
    const error = (await rejection(api.GET('/v1/workspaces'))) as PlatformApiError;
    expect([error.status, error.code, error.param, error.suggestion, error.details]).toEqual([401, 'unauthorized', undefined, undefined, undefined]);
  });

  it('keeps quota details', async () => {
    const details = { metric: 'kaas/clusters', limit: 1, usage: 1, requested: 1 };
    const { fetch } = fakeFetch(() => json(403, errorBody('quota_exceeded', 'Cluster quota reached.', { details, suggestion: 'Upgrade to Pro.' })));
    const { api } = testClient(fetch);
    const error = await rejection(api.POST('/v1/clusters', { body: { name: 'x', region_id: 'fsn1', kaas_version: 'v1.31' } }));
    expect(error).toMatchObject({ status: 403, code: 'quota_exceeded', details, suggestion: 'Upgrade to Pro.' });
  });

  it('reads the device token endpoint’s OAuth 2.0 error body (RFC 6749 §5.2) into code and message', async () => {
    const { fetch } = fakeFetch(() => json(400, { error: 'slow_down', error_description: 'Wait 10 seconds between polls.' }));
    const { api } = testClient(fetch);
    const body = { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'Gm9x2V1kQz8rT4yLw7pN3cHs6bJd0fAeKu5iXo_RqM-' };
    const error = await rejection(api.POST('/v1/auth/device/token', { body }));
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error).toMatchObject({
      status: 400,
      code: 'slow_down',
      message: 'Wait 10 seconds between polls.',
      param: undefined,
      details: undefined,
      requestId: 'req_400',
    });
  });

  it('does not take an unknown OAuth-looking error code for one', async () => {
    const { fetch } = fakeFetch(() => json(400, { error: 'server_on_fire' }));
    const { api } = testClient(fetch);
    const error = await rejection(api.GET('/v1/regions'));
    expect(error).toMatchObject({ status: 400, code: 'unexpected_response', details: { error: 'server_on_fire' } });
  });

  it('maps an answer without the contract’s body to unexpected_response, keeping the text', async () => {
    const { fetch } = fakeFetch(
      () => new Response('<html>Bad Gateway</html>', { status: 502, statusText: 'Bad Gateway', headers: { 'content-type': 'text/html' } }),
    );
    const { api } = testClient(fetch);
    const error = await rejection(api.GET('/v1/regions'));
    expect(error).toMatchObject({
      status: 502,
      code: 'unexpected_response',
      message: 'HTTP 502 Bad Gateway',
      details: '<html>Bad Gateway</html>',
      requestId: undefined,
    });
  });

  it('maps an empty error answer', async () => {
    const { fetch } = fakeFetch(() => new Response(null, { status: 404, headers: { 'x-request-id': 'req_x' } }));
    const { api } = testClient(fetch);
    const error = await rejection(api.GET('/v1/installs/{id}', { params: { path: { id: 'ins_1' } } }));
    expect(error).toMatchObject({ status: 404, code: 'unexpected_response', details: undefined, requestId: 'req_x' });
  });

  it('surfaces a network failure as PlatformNetworkError with its cause', async () => {
    const cause = new TypeError('fetch failed');
    const { fetch } = fakeFetch(() => Promise.reject(cause));
    const { api } = testClient(fetch, { retry: false });
    const error = await rejection(api.GET('/v1/regions'));
    expect(error).toBeInstanceOf(PlatformNetworkError);
    expect(error).toMatchObject({ timedOut: false, cause });
    expect((error as Error).message).toMatch(/^GET http:\/\/\S+\/v1\/regions failed: fetch failed$/);
  });

  it('names the URL and the innermost cause of a network failure (what was refused, where)', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8080'), { code: 'ECONNREFUSED' });
    const { fetch } = fakeFetch(() => Promise.reject(new TypeError('fetch failed', { cause: refused })));
    const { api } = testClient(fetch, { retry: false });
    const error = await rejection(api.GET('/v1/regions'));
    expect((error as Error).message).toMatch(/^GET http:\/\/\S+\/v1\/regions failed: connect ECONNREFUSED 127\.0\.0\.1:8080$/);
    const everyAddress = new AggregateError([new Error('connect ECONNREFUSED ::1:8080'), new Error('connect ECONNREFUSED 127.0.0.1:8080')]);
    const both = testClient(fakeFetch(() => Promise.reject(new TypeError('fetch failed', { cause: everyAddress }))).fetch, { retry: false });
    expect(((await rejection(both.api.GET('/v1/regions'))) as Error).message).toMatch(
      /failed: connect ECONNREFUSED ::1:8080; connect ECONNREFUSED 127\.0\.0\.1:8080$/,
    );
  });
});
