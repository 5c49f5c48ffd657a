// The operation-named methods (generated in src/operations.ts): each sends what its path-based twin sends.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PlatformApiError } from '../src/index.ts';
import { operationRoutes } from '../src/operations.ts';
import { errorBody, fakeFetch, json, rejection, testClient } from './support.ts';

const page = (data: unknown[], cursor: string, hasMore: boolean) => ({ data, pagination: { cursor, has_more: hasMore } });

describe('operation-named methods', () => {
  it('exist for every operationId of the contract but the event streams, which streamInstallLogs and streamEvents read', async () => {
    const document = JSON.parse(await readFile(join(import.meta.dirname, '..', '..', 'api-types', 'generated', 'openapi.json'), 'utf8')) as {
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    const ids = Object.values(document.paths).flatMap((item) =>
      Object.values(item).flatMap((operation) => (operation.operationId ? [operation.operationId] : [])),
    );
    const { api } = testClient(fakeFetch().fetch);
    expect(ids.filter((id) => typeof (api as unknown as Record<string, unknown>)[id] !== 'function')).toEqual([]);
    expect(Object.keys(operationRoutes).sort()).toEqual(ids.filter((id) => id !== 'streamInstallLogs' && id !== 'streamEvents').sort());
  });

  it('puts path and query parameters in the URL and the workspace in its header', async () => {
    const { fetch, requests } = fakeFetch(
      () => json(200, page([], '', false)),
      () => json(200, { id: 'cl_1' }),
    );
    const { api } = testClient(fetch, { workspaceId: 'ws_default' });
    await api.listClusters({ limit: 10, cursor: 'abc', workspaceId: 'ws_other' });
    await api.getCluster({ clusterId: 'cl 1/x' });
    expect(requests.map((request) => `${request.method} ${request.url}`)).toEqual([
      'GET http://api.test/v1/clusters?cursor=abc&limit=10',
      'GET http://api.test/v1/clusters/cl%201%2Fx',
    ]);
    expect(requests.map((request) => request.headers.get('x-workspace-id'))).toEqual(['ws_other', 'ws_default']);
  });

  it('takes no argument when nothing is required', async () => {
    const { fetch, requests } = fakeFetch(() => json(200, page([], '', false)));
    const { api } = testClient(fetch);
    await api.listRegions();
    expect(requests[0]?.url).toBe('http://api.test/v1/regions');
  });

  it('sends a workspaceId path parameter as the path, not as X-Workspace-Id', async () => {
    const { fetch, requests } = fakeFetch(() => json(200, { id: 'ws_2' }));
    const { api } = testClient(fetch);
    await api.getWorkspace({ workspaceId: 'ws_2' });
    expect(requests[0]?.url).toBe('http://api.test/v1/workspaces/ws_2');
    expect(requests[0]?.headers.get('x-workspace-id')).toBeNull();
  });

  it('sends the body, and makes up an idempotency key where the operation declares one', async () => {
    const { fetch, requests } = fakeFetch(
      () => json(202, { id: 'ins_1' }),
      () => json(202, { id: 'ins_2' }),
    );
    const { api } = testClient(fetch);
    await api.createInstall({ body: { product_id: 'prd_1', region_id: 'fsn1' } });
    await api.createInstall({ body: { product_id: 'prd_1', region_id: 'fsn1' }, idempotencyKey: 'key-1' });
    expect(requests.map((request) => request.method)).toEqual(['POST', 'POST']);
    expect(await requests[0]?.json()).toEqual({ product_id: 'prd_1', region_id: 'fsn1' });
    expect(requests[0]?.headers.get('idempotency-key')).toMatch(/^[0-9a-f-]{32,36}$/);
    expect(requests[1]?.headers.get('idempotency-key')).toBe('key-1');
  });

  it('resolves a 204 to undefined and rejects with the typed error', async () => {
    const { fetch } = fakeFetch(
      () => new Response(null, { status: 204 }),
      () => json(404, errorBody('not_found', 'No cluster cl_9.', { param: 'clusterId' })),
    );
    const { api } = testClient(fetch);
    await expect(api.deleteComputeConfig({ id: 'cc_1' })).resolves.toBeUndefined();
    const error = await rejection(api.getCluster({ clusterId: 'cl_9' }));
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error).toMatchObject({ status: 404, code: 'not_found', param: 'clusterId', message: 'No cluster cl_9.' });
  });

  it('paginate takes an operationId and its argument object', async () => {
    const { fetch, requests } = fakeFetch(
      () => json(200, page([{ user_id: 'usr_a' }], 'c1', true)),
      () => json(200, page([{ user_id: 'usr_b' }], 'c2', false)),
    );
    const { api } = testClient(fetch);
    const ids: string[] = [];
    for await (const member of api.paginate('listWorkspaceMembers', { workspaceId: 'ws_1', limit: 1 })) ids.push(member.user_id);
    expect(requests.map((request) => request.url)).toEqual([
      'http://api.test/v1/workspaces/ws_1/members?limit=1',
      'http://api.test/v1/workspaces/ws_1/members?limit=1&cursor=c1',
    ]);
    expect(ids).toEqual(['usr_a', 'usr_b']);
  });
});
