// A deprecated operation's answers carry Deprecation, Sunset and Link (the server test packages/server/test/
// deprecation.test.ts shows it does); the client tells its user once per process for each operation, through the
// handler given or else a console warning, with the dates and the docs' addresses made absolute.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DeprecationNotice } from '../src/index.ts';
import { baseUrl, fakeFetch, json, testClient } from './support.ts';

const deprecated = {
  deprecation: `@${Date.parse('2026-09-01') / 1000}`,
  sunset: 'Mon, 01 Mar 2027 00:00:00 GMT',
  link: '</docs#operation/getQuota>; rel="deprecation"; type="text/html", </docs#operation/listQuotas>; rel="successor-version"; type="text/html"',
};
const quota = { metric: 'compute/machines', displayName: 'Machines', type: 'allocation', unit: 'count', limit: 5, usage: 0, remaining: 5 };

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a deprecated operation', () => {
  it('is told of once, whatever its answers, with what they say', async () => {
    const notices: DeprecationNotice[] = [];
    const onDeprecation = (notice: DeprecationNotice) => notices.push(notice);
    const { fetch } = fakeFetch(
      () => json(200, quota, deprecated),
      () => json(404, { error: { code: 'not_found', message: 'No quota x.' } }, deprecated),
      () => json(200, quota, deprecated),
    );
    const { api } = testClient(fetch, { onDeprecation });
    await api.getQuota({ metric: 'compute/machines' });
    await expect(api.getQuota({ metric: 'x' })).rejects.toMatchObject({ status: 404 });
    // Another client with the same handler: the same process was told already.
    await testClient(fetch, { onDeprecation }).api.getQuota({ metric: 'compute/machines' });
    expect(notices).toEqual([
      {
        operation: 'GET /v1/quotas/{metric}',
        since: new Date('2026-09-01T00:00:00Z'),
        sunset: new Date('2027-03-01T00:00:00Z'),
        docs: `${baseUrl}/docs#operation/getQuota`,
        successor: `${baseUrl}/docs#operation/listQuotas`,
        message: `GET /v1/quotas/{metric} is deprecated since 2026-09-01; it stops answering on 2027-03-01; use its successor: ${baseUrl}/docs#operation/listQuotas.`,
      },
    ]);
  });

  it('is a console warning by default, once per process', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const headers = { deprecation: deprecated.deprecation, link: '</docs#operation/listRegions>; rel="deprecation"' };
    const { fetch } = fakeFetch(
      () => json(200, { data: [] }, headers),
      () => json(200, { data: [] }, headers),
    );
    await testClient(fetch).api.listRegions();
    await testClient(fetch).api.listRegions();
    expect(warn.mock.calls).toEqual([[`@platform/client: GET /v1/regions is deprecated since 2026-09-01; see ${baseUrl}/docs#operation/listRegions.`]]);
  });

  it('is not told of an answer without Deprecation', async () => {
    const onDeprecation = vi.fn();
    const { fetch } = fakeFetch(() => json(200, quota, { link: deprecated.link }));
    await testClient(fetch, { onDeprecation }).api.getQuota({ metric: 'compute/machines' });
    expect(onDeprecation).not.toHaveBeenCalled();
  });
});
