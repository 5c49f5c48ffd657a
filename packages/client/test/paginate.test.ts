// paginate(): every record across pages, following the cursor.
import { describe, expect, it } from 'vitest';
import { PlatformApiError } from '../src/index.ts';
import { collect, errorBody, fakeFetch, json, rejection, testClient } from './support.ts';

const workspace = (n: number) => ({ id: `ws_${n}`, name: `Workspace ${n}`, icon: null, created_at: 1732268800 + n });
const page = (ids: number[], cursor: string, hasMore: boolean) => () => json(200, { data: ids.map(workspace), pagination: { cursor, has_more: hasMore } });

describe('paginate', () => {
  it('yields every record of 3 pages in order, passing each page’s cursor and keeping the query', async () => {
    const { fetch, requests } = fakeFetch(page([1, 2], 'c2', true), page([3, 4], 'c4', true), page([5], 'c5', false));
    const { api } = testClient(fetch, { workspaceId: 'ws_default' });
    const records = await collect(api.paginate('/v1/workspaces', { params: { query: { limit: 2 } } }));
    expect(records.map((record) => record.id)).toEqual(['ws_1', 'ws_2', 'ws_3', 'ws_4', 'ws_5']);
    expect(requests.map((request) => new URL(request.url).search)).toEqual(['?limit=2', '?limit=2&cursor=c2', '?limit=2&cursor=c4']);
    expect(requests.every((request) => request.headers.get('x-workspace-id') === 'ws_default')).toBe(true);
  });

  it('starts after a given cursor', async () => {
    const { fetch, requests } = fakeFetch(page([7], 'c7', false));
    const { api } = testClient(fetch);
    expect(await collect(api.paginate('/v1/clusters', { params: { query: { cursor: 'c6' } } }))).toHaveLength(1);
    expect(new URL(requests[0]?.url ?? '').search).toBe('?cursor=c6');
  });

  it('is lazy: fetches the next page only when asked, and nothing more after a break', async () => {
    const { fetch, requests } = fakeFetch(page([1, 2], 'c2', true), page([3], 'c3', false));
    const { api } = testClient(fetch);
    const records = api.paginate('/v1/workspaces');
    expect(requests).toHaveLength(0);
    for await (const record of records) {
      expect(record.id).toBe('ws_1');
      break;
    }
    expect(requests).toHaveLength(1);
  });

  it('stops on an empty page even if it claims more', async () => {
    const { fetch, requests } = fakeFetch(page([], 'c0', true));
    const { api } = testClient(fetch);
    expect(await collect(api.paginate('/v1/workspaces'))).toEqual([]);
    expect(requests).toHaveLength(1);
  });

  it('stops when the cursor does not move, without repeating the page', async () => {
    // What the mock does: the same example page, has_more and all, whatever the cursor.
    const { fetch, requests } = fakeFetch(page([1, 2], 'c2', true), page([1, 2], 'c2', true));
    const { api } = testClient(fetch);
    expect((await collect(api.paginate('/v1/workspaces'))).map((record) => record.id)).toEqual(['ws_1', 'ws_2']);
    expect(requests).toHaveLength(2);
  });

  it('rejects with the page’s error', async () => {
    const { fetch } = fakeFetch(page([1], 'c1', true), () => json(422, errorBody('validation_error', 'Unreadable cursor.', { param: 'cursor' })));
    const { api } = testClient(fetch);
    const error = await rejection(collect(api.paginate('/v1/workspaces')));
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error).toMatchObject({ status: 422, param: 'cursor' });
  });

  it('retries a page like any GET', async () => {
    const { fetch, requests } = fakeFetch(
      page([1], 'c1', true),
      () => json(503, errorBody('service_unavailable', 'Later.'), { 'retry-after': '1' }),
      page([2], 'c2', false),
    );
    const { api, delays } = testClient(fetch);
    expect((await collect(api.paginate('/v1/workspaces'))).map((record) => record.id)).toEqual(['ws_1', 'ws_2']);
    expect(new URL(requests[2]?.url ?? '').search).toBe('?cursor=c1');
    expect(delays).toEqual([1000]);
  });
});
