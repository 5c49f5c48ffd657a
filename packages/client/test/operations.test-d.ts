// Type tests of the operation-named methods: one argument object typed from the operation, the success body out.
import type { Schema } from '@platform/api-types';
import { describe, expectTypeOf, test } from 'vitest';
import { createPlatformClient } from '../src/index.ts';

const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:4010', token: 'svc_pat_x', fetch: async () => new Response() });

describe('operation-named methods', () => {
  test('resolve to the success body', () => {
    expectTypeOf(api.listClusters({ limit: 10 })).resolves.toEqualTypeOf<Schema<'ClusterList'>>();
    expectTypeOf(api.listClusters()).resolves.toEqualTypeOf<Schema<'ClusterList'>>();
    expectTypeOf(api.getCluster({ clusterId: 'cl_1' })).resolves.toEqualTypeOf<Schema<'Cluster'>>();
    expectTypeOf(api.createInstall({ body: { product_id: 'prd_1', region_id: 'fsn1' } })).resolves.toEqualTypeOf<Schema<'Install'>>();
    expectTypeOf(api.deleteComputeConfig({ id: 'cc_1' })).resolves.toEqualTypeOf<undefined>();
    expectTypeOf(api.listQuotas()).resolves.toEqualTypeOf<Schema<'QuotaEntry'>[]>();
  });

  test('take path parameters, query, body and header options in one object', () => {
    expectTypeOf(api.getCluster).parameter(0).toEqualTypeOf<{ clusterId: string } & import('../src/index.ts').BaseCallOptions & { workspaceId?: string }>();
    expectTypeOf(api.createInstall).parameter(0).toHaveProperty('idempotencyKey').toEqualTypeOf<string | undefined>();
    expectTypeOf(api.createInstall).parameter(0).toHaveProperty('body').toEqualTypeOf<Schema<'InstallCreate'>>();
  });

  test('refuse what the operation does not take', () => {
    // @ts-expect-error the path parameter is required
    void api.getCluster({});
    // @ts-expect-error the argument object is required when a path parameter is
    void api.getCluster();
    // @ts-expect-error limit is a number
    void api.listClusters({ limit: '10' });
    // @ts-expect-error the body is required
    void api.createCluster({});
    // @ts-expect-error listRegions declares no X-Workspace-Id
    void api.listRegions({ workspaceId: 'ws_1' });
    // @ts-expect-error getCluster declares no idempotency-key
    void api.getCluster({ clusterId: 'cl_1', idempotencyKey: 'k' });
    // @ts-expect-error not an operationId
    void api.listClusterz;
  });

  test('paginate takes a list operationId and yields its records', () => {
    expectTypeOf(api.paginate('listClusters', { limit: 100 })).toEqualTypeOf<AsyncGenerator<Schema<'Cluster'>, void, undefined>>();
    expectTypeOf(api.paginate('listWorkspaceMembers', { workspaceId: 'ws_1' })).toEqualTypeOf<AsyncGenerator<Schema<'WorkspaceMember'>, void, undefined>>();
    // @ts-expect-error listQuotas answers a bare array, not pages
    void api.paginate('listQuotas');
    // @ts-expect-error getCluster is not a list
    void api.paginate('getCluster', { clusterId: 'cl_1' });
  });
});
