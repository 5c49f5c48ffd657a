// Type tests, run with the suite (vitest typecheck): responses typed from the contract, wrong parameters and
// bodies refused. Nothing here is executed; the fetch below is never called.
import type { Schema } from '@platform/api-types';
import { describe, expectTypeOf, test } from 'vitest';
import { createPlatformClient, type ListPaths, type LogEvent, type PlatformApiError, type PlatformErrorCode } from '../src/index.ts';

const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:4010', token: 'svc_pat_x', fetch: async () => new Response() });
const id = 'cl_1';

describe('responses', () => {
  test('resolve to the operation’s success body', () => {
    expectTypeOf(api.GET('/v1/clusters', { params: { query: { limit: 10 } } })).resolves.toEqualTypeOf<Schema<'ClusterList'>>();
    expectTypeOf(api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: id } } })).resolves.toEqualTypeOf<Schema<'Cluster'>>();
    expectTypeOf(api.GET('/v1/quotas')).resolves.toEqualTypeOf<Schema<'QuotaEntry'>[]>();
    expectTypeOf(api.POST('/v1/installs', { body: { product_id: 'prd_1', region_id: 'fsn1' } })).resolves.toEqualTypeOf<Schema<'Install'>>();
    expectTypeOf(api.PATCH('/v1/notifications/{id}/read', { params: { path: { id: 'ntf_1' } } })).resolves.toEqualTypeOf<Schema<'Notification'>>();
    expectTypeOf(api.POST('/v1/user/tokens', { body: { name: 'ci', scopes: ['clusters:read'] } })).resolves.toEqualTypeOf<Schema<'TokenCreated'>>();
  });

  test('a 204 resolves to undefined', () => {
    expectTypeOf(api.DELETE('/v1/compute/configs/{id}', { params: { path: { id: 'cc_1' } } })).resolves.toEqualTypeOf<undefined>();
  });

  test('paginate yields the list’s records, for list envelopes only', () => {
    expectTypeOf(api.paginate('/v1/clusters', { params: { query: { limit: 100 } } })).toEqualTypeOf<AsyncGenerator<Schema<'Cluster'>, void, undefined>>();
    expectTypeOf(api.paginate('/v1/workspaces/{workspaceId}/members', { params: { path: { workspaceId: 'ws_1' } } })).toEqualTypeOf<
      AsyncGenerator<Schema<'WorkspaceMember'>, void, undefined>
    >();
    expectTypeOf<'/v1/installs'>().toExtend<ListPaths>();
    // Bare arrays and single records are not lists with pages.
    expectTypeOf<'/v1/quotas'>().not.toExtend<ListPaths>();
    expectTypeOf<'/v1/compute/machines'>().not.toExtend<ListPaths>();
    expectTypeOf<'/v1/clusters/{clusterId}'>().not.toExtend<ListPaths>();
    // @ts-expect-error GET /v1/quotas answers a bare array
    void api.paginate('/v1/quotas');
  });

  test('streamInstallLogs yields the log stream’s events', () => {
    const events = api.streamInstallLogs('ins_1', { follow: true, tail: 100, pod: 'web-1', container: 'web', since_seconds: 60 });
    expectTypeOf(events).toEqualTypeOf<AsyncGenerator<LogEvent, void, undefined>>();
    expectTypeOf<Extract<LogEvent, { type: 'log' }>>().toEqualTypeOf<{ type: 'log'; id: string; data: Schema<'LogLine'> }>();
    expectTypeOf<Extract<LogEvent, { type: 'end' }>>().toEqualTypeOf<{ type: 'end'; data: Schema<'LogStreamEnd'> }>();
    // @ts-expect-error tail is an integer
    void api.streamInstallLogs('ins_1', { tail: '100' });
    // @ts-expect-error no such parameter
    void api.streamInstallLogs('ins_1', { lines: 100 });
  });

  test('errors carry the contract’s fields', () => {
    expectTypeOf<PlatformApiError['code']>().toEqualTypeOf<PlatformErrorCode>();
    expectTypeOf<'quota_exceeded'>().toExtend<PlatformErrorCode>();
    expectTypeOf<PlatformApiError['status']>().toEqualTypeOf<number>();
    expectTypeOf<PlatformApiError['param']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<PlatformApiError['requestId']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<PlatformApiError['retryAfter']>().toEqualTypeOf<number | undefined>();
  });
});

describe('wrong requests do not compile', () => {
  test('paths', () => {
    // @ts-expect-error no such path
    void api.GET('/v1/cluster');
    // @ts-expect-error no DELETE on this path
    void api.DELETE('/v1/regions');
    // @ts-expect-error the log stream is read with streamInstallLogs, never parsed as JSON
    void api.GET('/v1/installs/{id}/logs', { params: { path: { id: 'ins_1' } } });
  });

  test('path parameters', () => {
    // @ts-expect-error wrong path parameter name
    void api.GET('/v1/clusters/{clusterId}', { params: { path: { id } } });
    // @ts-expect-error wrong path parameter type
    void api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: 42 } } });
    // @ts-expect-error missing path parameters
    void api.GET('/v1/clusters/{clusterId}');
  });

  test('query parameters', () => {
    // @ts-expect-error limit is an integer
    void api.GET('/v1/clusters', { params: { query: { limit: '10' } } });
    // @ts-expect-error no such query parameter
    void api.GET('/v1/clusters', { params: { query: { limt: 10 } } });
    // @ts-expect-error cluster_id is required
    void api.GET('/v1/compute/machines', { params: { query: {} } });
  });

  test('bodies', () => {
    // @ts-expect-error unknown body field
    void api.POST('/v1/installs', { body: { product_id: 'prd_1', region_id: 'fsn1', region: 'fsn1' } });
    // @ts-expect-error missing required body field
    void api.POST('/v1/installs', { body: { product_id: 'prd_1' } });
    // @ts-expect-error wrong body field type
    void api.POST('/v1/user/tokens', { body: { name: 'ci', expires_at: '2025-01-01' } });
    // @ts-expect-error the body is required
    void api.POST('/v1/installs', {});
  });

  test('call options follow the operation’s declared headers', () => {
    void api.POST('/v1/installs', {
      body: { product_id: 'prd_1', region_id: 'fsn1' },
      idempotencyKey: 'k',
      workspaceId: 'ws_2',
      timeoutMs: 5_000,
      signal: AbortSignal.timeout(1),
    });
    // @ts-expect-error createCluster declares no idempotency-key
    void api.POST('/v1/clusters', { body: { name: 'a', region_id: 'fsn1', kaas_version: 'v1.31' }, idempotencyKey: 'k' });
    // @ts-expect-error listWorkspaces takes no X-Workspace-Id
    void api.GET('/v1/workspaces', { workspaceId: 'ws_2' });
    // @ts-expect-error timeoutMs is a number
    void api.GET('/v1/regions', { timeoutMs: '5s' });
  });
});
