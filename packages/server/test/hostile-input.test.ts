// Hostile input, by class rather than by example: whatever a caller sends is answered with the contract's error
// body naming the field (never a 500), and nothing is stored changed. Classes: what a cursor decodes to, JSON
// nested deeper than the contract allows, lone UTF-16 surrogates in strings and property names, values far longer
// than any id (never echoed whole), idempotency keys compared on the JSON value, not its key order, and bodies
// that are not plain UTF-8 (invalid bytes, another charset, a Content-Encoding).
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import { beforeAll, describe, expect, it } from 'vitest';
import { seedSampleResources } from '../src/db/seed.ts';
import { MAX_JSON_DEPTH } from '../src/http/input-checks.ts';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

let alice: TestUser;
let sample: Awaited<ReturnType<typeof seedSampleResources>>;
/** An install of the sample product, for the lists under an install (its revisions). */
let installId: string;

const app = useTestServer();
const { clock } = app;

beforeAll(async () => {
  alice = await newUser(app.db, clock, 'pro');
  sample = await seedSampleResources(app.db, clock, alice);
  installId = (await send('POST', '/v1/installs', JSON.stringify({ product_id: sample.productId, region_id: 'fsn1' }))).body.id;
});

/** A request with a raw JSON text body (so it can hold what JSON.stringify would never write). */
const send = (method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
  call(app.baseUrl, method, path, {
    token: alice.token,
    ...(body === undefined ? {} : { body }),
    headers: { 'x-workspace-id': alice.workspaceId, ...headers },
  });

const cursorOf = (content: string) => Buffer.from(content).toString('base64url');

type Parameter = { name: string; in: string } | { $ref: string };
const doc = definition as unknown as {
  paths: Record<string, Record<string, { operationId: string; parameters?: Parameter[] }>>;
  components: { parameters: Record<string, { name: string; in: string }> };
};
/** Every GET that takes a `cursor` (the paginated lists), with its path (none has path parameters but the members list). */
const lists = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(
      ([method, op]) =>
        method === 'get' && (op.parameters ?? []).some((p) => ('$ref' in p ? doc.components.parameters[p.$ref.split('/').pop()!]!.name : p.name) === 'cursor'),
    )
    .map(([, op]) => ({ operationId: op.operationId, path })),
);

describe('what a cursor decodes to is checked, on every list', () => {
  const bad = {
    'a NUL in the id': JSON.stringify({ t: 1, i: 'ws_\u0000' }),
    'a control character in the id': JSON.stringify({ t: 1, i: 'ws_\u0007x' }),
    'a lone surrogate in the id': '{"t":1,"i":"ws_\\ud800"}',
    'an id of 10,000 characters': JSON.stringify({ t: 1, i: 'x'.repeat(10_000) }),
    'a negative time': JSON.stringify({ t: -1, i: 'ws_1' }),
    'a time beyond 2^53': '{"t":18446744073709551616,"i":"ws_1"}',
    'an array': '[1,"ws_1"]',
  };
  it('covers the lists', () => expect(lists.length).toBeGreaterThanOrEqual(8));
  it.each(lists.flatMap((list) => Object.entries(bad).map(([what, content]) => [list.operationId, what, list.path, content] as const)))(
    '%s: %s → 422 cursor',
    async (_op, _what, path, content) => {
      const url = path.replace('{workspaceId}', alice.workspaceId).replace('{id}', installId);
      const reply = await send('GET', `${url}?cursor=${cursorOf(content)}`);
      expect(reply.status).toBe(422);
      expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'cursor' });
    },
  );
  // Read as a place in this list, a position among other rows would silently skip some (regions' ids have no prefix).
  it.each(lists.filter((list) => list.operationId !== 'listRegions'))('$operationId: a cursor of another list → 422 cursor', async ({ operationId, path }) => {
    const foreign = operationId === 'listWorkspaces' ? 'cl_01jd2y1n6s8u0w2y4a6c8e0g2j' : 'ws_01jd2x8k4q3m7n5p9r6s2t8v0w';
    const url = path.replace('{workspaceId}', alice.workspaceId).replace('{id}', installId);
    const reply = await send('GET', `${url}?cursor=${cursorOf(JSON.stringify({ t: 1732268800, i: foreign }))}`);
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'cursor', message: 'cursor is a cursor of another list.' });
  });
});

/** `{"a":{"a":…{"a":1}…}}` with `levels` objects. */
const nested = (levels: number) => `${'{"a":'.repeat(levels - 1)}{"a":1}${'}'.repeat(levels - 1)}`;
const product = (values: string) =>
  `{"name":"deep","sources":[{"chart":{"repo_url":"https://charts.example.com","target_revision":"1.0.0","chart":"web"},"values":${values}}],"cluster_ids":["${sample.clusterId}"]}`;

describe('nesting deeper than the contract allows', () => {
  it.each([MAX_JSON_DEPTH, 5_000, 100_000])('a product whose values nest %i levels deep more is refused naming the field', async (levels) => {
    const reply = await send('POST', '/v1/products', product(nested(levels)));
    expect(reply.status).toBe(422);
    expect(reply.body.error.code).toBe('validation_error');
    expect(reply.body.error.param).toMatch(/^sources\[0\]\.values(\.a)+$/);
    expect(reply.body.error.param.length).toBeLessThanOrEqual(600);
  });
  it('values nested to just inside the limit are stored', async () => {
    // The body's own levels (body, sources, the source) leave the rest for values.
    const reply = await send('POST', '/v1/products', product(nested(MAX_JSON_DEPTH - 3)));
    expect(reply.status).toBe(201);
  });
});

describe('lone UTF-16 surrogates are refused, not stored changed', () => {
  const cases: [string, string, () => string, string][] = [
    ['a text column (a cluster name)', '/v1/clusters', () => '{"name":"x\\ud800y","region_id":"fsn1"}', 'name'],
    ['a low surrogate alone', '/v1/clusters', () => '{"name":"x\\udc00","region_id":"fsn1"}', 'name'],
    ['a JSON column (helm values)', '/v1/products', () => product('{"greeting":"\\ud83d"}'), 'sources[0].values.greeting'],
    ['a property name in helm values', '/v1/products', () => product('{"\\ud800key":1}'), 'sources[0].values'],
  ];
  it.each(cases)('%s', async (_what, path, body, param) => {
    const reply = await send('POST', path, body());
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param });
  });
  it('a proper surrogate pair is a character like any other', async () => {
    const reply = await send('POST', '/v1/products', product('{"greeting":"\\ud83d\\ude00"}'));
    expect(reply.status).toBe(201);
    expect(reply.body.sources[0].values.greeting).toBe('😀');
  });
});

describe('numbers a JSON number cannot hold as sent are refused, not stored rounded or as null', () => {
  const cases: [string, string, () => string, string][] = [
    ['in helm values', '/v1/products', () => product('{"replicas":1,"id":12345678901234567891}'), 'sources[0].values.id'],
    ['a negative one, in an array', '/v1/products', () => product('{"ids":[1,-9007199254740993]}'), 'sources[0].values.ids[1]'],
    ['where the schema wants an integer', '/v1/user/tokens', () => '{"name":"n","expires_at":99999999999999999999}', 'expires_at'],
    ['beyond a double’s range (read as Infinity, written as null)', '/v1/products', () => product('{"big":1e400}'), 'sources[0].values.big'],
  ];
  it.each(cases)('%s', async (_what, path, body, param) => {
    const reply = await send('POST', path, body());
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param });
    expect(reply.body.error.suggestion).toMatch(/as strings|as a string/);
  });
  it('the refusal quotes no digit of the value: a number sent where a secret belongs is still a secret', async () => {
    const body = '{"name":"n","registry_url":"https://registry.example","username":"u","password":12345678901234567890}';
    const reply = await send('POST', '/v1/registry/credentials', body);
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'password' });
    expect(JSON.stringify(reply.body)).not.toMatch(/1234567890|1\.23456789|12345678901234567000/);
  });
  it('the largest exact integers, and longer ones a double holds exactly (2^54, 1e21), are stored as sent', async () => {
    const values = '{"max":9007199254740991,"min":-9007199254740991,"pow":18014398509481984,"exp":1e21}';
    const reply = await send('POST', '/v1/products', product(values));
    expect(reply.status).toBe(201);
    expect(reply.body.sources[0].values).toEqual(JSON.parse(values));
  });
});

describe('a request with several violations', () => {
  it('is answered with every one in details.violations, the first also as the error’s param and message', async () => {
    const reply = await send('POST', '/v1/clusters', JSON.stringify({ name: 'Not A DNS Label', region_id: 5, colour: 'blue' }));
    expect(reply.status).toBe(422);
    const { error } = reply.body;
    expect(error.code).toBe('validation_error');
    const violations = error.details.violations as { param: string; message: string }[];
    expect(violations.map((v) => v.param).sort()).toEqual(['colour', 'name', 'region_id']);
    expect(violations).toContainEqual({ param: 'colour', message: 'Body field colour is not allowed.' });
    expect(violations).toContainEqual({ param: 'region_id', message: 'Body field region_id must be string.' });
    expect(violations).toContainEqual({ param: error.param, message: error.message });
  });
  it('lists at most 50, and says how many it left out', async () => {
    const body = Object.fromEntries([['name', 'n'], ['region_id', 'fsn1'], ...Array.from({ length: 60 }, (_, i) => [`extra_${i}`, i])]);
    const reply = await send('POST', '/v1/clusters', JSON.stringify(body));
    expect(reply.status).toBe(422);
    expect(reply.body.error.details.violations).toHaveLength(50);
    expect(reply.body.error.details.violations_not_listed).toBe(10);
  });
});

describe('values far longer than an id are never echoed whole', () => {
  const huge = `cl_${'x'.repeat(200_000)}`;
  it.each([
    ['a path id', 'GET', `/v1/clusters/${huge}`, undefined],
    ['a body id', 'POST', '/v1/installs', JSON.stringify({ product_id: huge, region_id: 'fsn1' })],
    ['a query id', 'GET', `/v1/compute/machines?cluster_id=${huge}`, undefined],
    ['an unknown field name', 'POST', '/v1/clusters', JSON.stringify({ name: 'n', region_id: 'fsn1', [huge]: 1 })],
  ] as const)('%s', async (_what, method, path, body) => {
    const reply = await send(method, path, body);
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.status).toBeLessThan(500);
    expect(JSON.stringify(reply.body).length).toBeLessThan(2_000);
  });
});

describe('a path parameter that is not percent-encoded UTF-8, or holds a NUL', () => {
  it('is 400 (422 for a NUL) naming the parameter, not a 404 saying the endpoint does not exist nor a 500', async () => {
    for (const path of ['/v1/user/tokens/%FF', '/v1/clusters/cl_%C3%28/compute_status', '/v1/quotas/kaas%2']) {
      const reply = await send('GET', path);
      expect(reply.status, path).toBe(400);
      expect(reply.body.error).toMatchObject({
        code: 'bad_request',
        param: path.startsWith('/v1/user') ? 'id' : path.startsWith('/v1/quotas') ? 'metric' : 'clusterId',
      });
    }
    // A NUL is refused before the role and workspace look-ups take the value to the database.
    for (const path of ['/v1/workspaces/%00/members', '/v1/clusters/cl_%00']) {
      const reply = await send('GET', path);
      expect(reply.status, path).toBe(422);
      expect(reply.body.error).toMatchObject({ code: 'validation_error', param: path.startsWith('/v1/workspaces') ? 'workspaceId' : 'clusterId' });
    }
    // Well-formed encodings still reach the operation.
    expect((await send('GET', '/v1/quotas/kaas%2Fclusters')).status).toBe(200);
    expect((await send('GET', '/v1/clusters/cl_%C3%A9/compute_status')).status).toBe(404);
  });
});

describe('idempotency keys compare the JSON value', () => {
  it('the same body with its keys in another order is the same request: replayed, not 422', async () => {
    const key = `reorder-${Date.now()}`;
    const first = await send('POST', '/v1/installs', `{"product_id":"${sample.productId}","region_id":"fsn1"}`, { 'idempotency-key': key });
    expect(first.status).toBe(202);
    const again = await send('POST', '/v1/installs', `{"region_id":"fsn1","product_id":"${sample.productId}"}`, { 'idempotency-key': key });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
  });
  it('a replay is the first answer byte for byte, not only as a value', async () => {
    const key = `bytes-${Date.now()}`;
    const post = () =>
      fetch(`${app.baseUrl}/v1/installs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${alice.token}`, 'x-workspace-id': alice.workspaceId, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ product_id: sample.productId, region_id: 'fsn1' }),
      });
    const first = await post();
    const again = await post();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect([again.status, await again.text()]).toEqual([first.status, await first.text()]);
  });
  it('a different value is still a different request', async () => {
    const key = `differs-${Date.now()}`;
    await send('POST', '/v1/installs', `{"product_id":"${sample.productId}","region_id":"fsn1"}`, { 'idempotency-key': key });
    const other = await send('POST', '/v1/installs', `{"region_id":"nbg1","product_id":"${sample.productId}"}`, { 'idempotency-key': key });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
  });
});

describe('bodies are UTF-8 text, refused otherwise (never decoded with replacement characters)', () => {
  /** A POST with raw bytes and headers as given. */
  const raw = async (bytes: Uint8Array<ArrayBuffer>, headers: Record<string, string>, path = '/v1/clusters') => {
    const response = await fetch(`${app.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'x-workspace-id': alice.workspaceId, ...headers },
      body: bytes,
    });
    return { status: response.status, body: (await response.json()) as { error: { code: string; param?: string }; sources: { values: unknown }[] } };
  };
  const json = (text: string) => new TextEncoder().encode(text);
  const cluster = (name: string) => json(`{"name":"${name}","region_id":"fsn1"}`);
  it.each([
    ['a byte that never starts a character', Uint8Array.of(0xff)],
    ['a truncated sequence', Uint8Array.of(0xc3)],
    ['an overlong encoding of "/"', Uint8Array.of(0xc0, 0xaf)],
    ['an encoded surrogate', Uint8Array.of(0xed, 0xa0, 0x80)],
  ])('%s in a string → 400 naming the body', async (_what, bad) => {
    const bytes = new Uint8Array([...json('{"name":"x'), ...bad, ...json('","region_id":"fsn1"}')]);
    const reply = await raw(bytes, { 'content-type': 'application/json' });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toMatchObject({ code: 'bad_request', param: 'body' });
  });
  it.each(['iso-8859-1', 'utf-16', 'windows-1252', 'x-unknown'])('charset=%s → 415 naming Content-Type', async (charset) => {
    const reply = await raw(cluster('latin'), { 'content-type': `application/json; charset=${charset}` });
    expect(reply.status).toBe(415);
    expect(reply.body.error).toMatchObject({ code: 'unsupported_media_type', param: 'Content-Type' });
  });
  it.each(['gzip', 'br', 'deflate', 'zstd', 'x-unknown', 'identity, gzip'])('Content-Encoding: %s → 415 naming it', async (coding) => {
    const reply = await raw(cluster('coded'), { 'content-type': 'application/json', 'content-encoding': coding });
    expect(reply.status).toBe(415);
    expect(reply.body.error).toMatchObject({ code: 'unsupported_media_type', param: 'Content-Encoding' });
  });
  it.each([
    ['charset=utf-8', { 'content-type': 'application/json; charset=utf-8' }],
    ['charset=UTF-8 and Content-Encoding: identity', { 'content-type': 'application/json; charset=UTF-8', 'content-encoding': 'identity' }],
  ])('%s is plain UTF-8 and accepted', async (_what, headers) => {
    const reply = await raw(json(product('{"greeting":"é ü 😀"}')), headers, '/v1/products');
    expect(reply.status).toBe(201);
    expect(reply.body.sources[0]!.values).toEqual({ greeting: 'é ü 😀' });
  });
});
