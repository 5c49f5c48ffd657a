// Deprecation announces itself (http/deprecation.ts): every operation the contract marks deprecated answers with
// `Deprecation` (RFC 9745), `Sunset` (RFC 8594) where a date is set, and `Link`s to the docs and its successor; a
// deprecated parameter does so for the requests that send it. The operations checked are read from the contract, so
// a new deprecation is covered as soon as it is written. The contract bound here is the real one with a few marks
// added (a fixture, through the same binding): the mechanism is proven whether or not the contract deprecates
// anything yet.
import { describe, expect, it } from 'vitest';
import { loadContract } from '../src/http/contract.ts';
import { type Deprecation, deprecationOf } from '../src/http/deprecation.ts';
import { bundledContract, type ContractDocument as Contract, deprecatedContract, operationOf } from './support/deprecated-contract.ts';
import { call, newUser, useTestServer } from './support.ts';

const methods = ['get', 'post', 'put', 'patch', 'delete'];

/** Every deprecated operation of a contract, with a path to call it by (each parameter `x`). */
function deprecatedOperations(contract: Contract): { operationId: string; method: string; path: string; deprecation: Deprecation }[] {
  return Object.entries(contract.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method, operation]) => methods.includes(method) && operation.deprecated === true)
      .map(([method, operation]) => ({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        path: path.replace(/\{[^}]+\}/g, 'x'),
        deprecation: deprecationOf(operation, operation.operationId)!,
      })),
  );
}

const contract = deprecatedContract();
const ctx = useTestServer({ parts: { definition: contract as never } });

describe('a deprecated operation', () => {
  const deprecated = deprecatedOperations(contract);

  it('is found in the contract bound (the fixture adds getQuota to those the contract has)', () => {
    expect(deprecated.map((operation) => operation.operationId)).toContain('getQuota');
    expect(deprecatedOperations(bundledContract()).every((operation) => deprecated.some((d) => d.operationId === operation.operationId))).toBe(true);
  });

  it('answers every request with Deprecation, and Sunset and Link where the contract sets them', async () => {
    for (const { operationId, method, path, deprecation } of deprecated) {
      const reply = await call(ctx.baseUrl, method, path);
      expect(reply.headers.get('deprecation'), operationId).toBe(`@${deprecation.since}`);
      expect(reply.headers.get('sunset'), operationId).toBe(deprecation.sunset === undefined ? null : new Date(deprecation.sunset * 1000).toUTCString());
      const links = reply.headers.get('link') ?? '';
      expect(links, operationId).toContain(`</docs#operation/${operationId}>; rel="deprecation"; type="text/html"`);
      if (deprecation.successor) expect(links, operationId).toContain(`</docs#operation/${deprecation.successor}>; rel="successor-version"`);
    }
  });

  it('answers in full, the headers beside its declared ones (the server checks every answer against the contract)', async () => {
    const user = await newUser(ctx.db, ctx.clock);
    const reply = await call(ctx.baseUrl, 'GET', '/v1/quotas/compute%2Fmachines', { token: user.token });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ metric: 'compute/machines' });
    expect(Object.fromEntries(['deprecation', 'sunset', 'link'].map((name) => [name, reply.headers.get(name)]))).toEqual({
      deprecation: `@${Date.parse('2026-09-01') / 1000}`,
      sunset: 'Mon, 01 Mar 2027 00:00:00 GMT',
      link: '</docs#operation/getQuota>; rel="deprecation"; type="text/html", </docs#operation/listQuotas>; rel="successor-version"; type="text/html"',
    });
  });
});

describe('a deprecated parameter', () => {
  it('announces itself to the requests that send it, and only to them', async () => {
    const user = await newUser(ctx.db, ctx.clock);
    const sent = await call(ctx.baseUrl, 'GET', '/v1/clusters?limit=5', { token: user.token });
    expect(sent.status).toBe(200);
    expect(sent.headers.get('deprecation')).toBe(`@${Date.parse('2026-10-15') / 1000}`);
    expect(sent.headers.get('sunset')).toBeNull();
    expect(sent.headers.get('link')).toBe('</docs#operation/listClusters>; rel="deprecation"; type="text/html"');
    const unsent = await call(ctx.baseUrl, 'GET', '/v1/clusters', { token: user.token });
    expect(unsent.status).toBe(200);
    expect(unsent.headers.get('deprecation')).toBeNull();
  });
});

describe('the contract', () => {
  it('cannot deprecate without the date of the Deprecation header, nor set a sunset before it', async () => {
    const undated = bundledContract();
    operationOf(undated, 'listRegions').deprecated = true;
    await expect(loadContract(undated as never)).rejects.toThrow('listRegions is deprecated without x-deprecated-at (the date its Deprecation header gives)');
    const early = bundledContract();
    Object.assign(operationOf(early, 'listRegions'), { deprecated: true, 'x-deprecated-at': '2027-01-01', 'x-sunset': '2026-01-01' });
    await expect(loadContract(early as never)).rejects.toThrow('listRegions: x-sunset is before x-deprecated-at');
  });
});
