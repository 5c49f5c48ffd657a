// The contract fuzzer's shared part: the seeded world and the real ids requests draw from, JSON Schema → fast-check
// arbitraries, sending, tokens, and the database snapshot that shows a refused request changed nothing. Two files
// use it, so a run fuzzes schema-valid requests (through Prism) and mutated ones (at the server) side by side.
import { buildWorld, createToken, idFor, newUser, TestClock, type TestUser, useTestServer, type World } from '@platform/server/testing';
import fc from 'fast-check';
import { generateSync } from 'json-schema-faker';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import { listOperations, loadDocument, type Operation, requestBodyOf, SchemaValidator } from '../support/openapi.ts';

export const RUNS = Number(process.env.FUZZ_RUNS ?? 50);
export const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
export const doc = loadDocument();
export const validator = new SchemaValidator(doc);
export const operations = listOperations(doc);

export type Schema = Record<string, any>;
export const resolve = (schema: any): Schema => {
  let s = schema;
  while (s && typeof s.$ref === 'string')
    s = s.$ref
      .split('/')
      .slice(1)
      .reduce((n: any, k: string) => n?.[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
  return s ?? {};
};

// ---- the seeded world, and the real values ids are drawn from -------------------------------------------

export let world: World;
let fuzzToken: string;
/** A user whose workspace nobody of the world ever joins. */
export let outsider: TestUser;
let bobEmail: string;
/** The code of a device sign-in waiting for a decision, so looking it up can succeed. */
let deviceUserCode: string;

// The injected resolver: the machines have no public DNS; every name is public except the test's private one.
const resolveHost = async (host: string) => (host.endsWith('.private.test') ? ['10.0.0.1'] : ['93.184.216.34']);

export const app = useTestServer({
  clock: new TestClock(1_800_000_000),
  env: { RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_DEVICE_PER_MINUTE: '0' },
  resolveHost,
});
const { clock } = app;

/** Real values for fields and parameters that name things, so generated requests often find them. */
export function realValues(name: string | undefined): unknown[] {
  if (!name || !world) return [];
  const { ids } = world;
  const table: Record<string, unknown[]> = {
    product_id: [ids.product],
    region_id: ['fsn1', 'nbg1'],
    cluster_id: [ids.cluster],
    cluster_ids: [ids.cluster],
    clusterId: [ids.cluster],
    compute_config_id: [ids.computeConfig],
    cloud_credential_id: [ids.cloudCredential],
    template_helm_source_id: [ids.source],
    providerId: [ids.machine],
    workspaceId: [world.alice.workspaceId],
    userId: [world.alice.userId, world.bob.userId],
    'X-Workspace-Id': [world.alice.workspaceId],
    email: [bobEmail],
    metric: ['kaas/clusters', 'compute/machines', 'compute/cpu', 'compute/memory'],
    userCode: [deviceUserCode],
    repo_url: ['https://charts.example.com/stable', 'oci://ghcr.example.com/acme'],
    url: ['https://hooks.example.com/platform'],
  };
  return table[name] ?? [];
}

// ---- JSON Schema → fast-check arbitrary ------------------------------------------------------------------

const leaf = (schema: Schema) => fc.integer({ min: 1, max: 2 ** 31 - 1 }).map((seed) => generateSync(schema as never, { seed }));

const freeValue = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null));

function arbitrary(raw: any, name?: string, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(raw);
  const real = realValues(name);
  const generated = fromSchema(schema, name, depth);
  return real.length > 0 && !['array', 'object'].includes(schema.type)
    ? fc.oneof({ arbitrary: fc.constantFrom(...real), weight: 3 }, { arbitrary: generated, weight: 1 })
    : generated;
}

function fromSchema(schema: Schema, name: string | undefined, depth: number): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const { oneOf, anyOf, allOf, ...rest } = schema;
  if (allOf) return arbitrary(Object.assign({}, rest, ...allOf.map(resolve)), name, depth);
  if (oneOf || anyOf) return fc.oneof(...(oneOf ?? anyOf).map((s: any) => arbitrary({ ...rest, ...resolve(s) }, name, depth)));
  const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type ?? (schema.properties ? 'object' : 'any')];
  if (types.length > 1) return fc.oneof(...types.map((type) => fromSchema({ ...schema, type }, name, depth)));
  switch (types[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer': {
      const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : -1_000_000);
      const max = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : Math.max(min, 0) + 2_000_000_000);
      return fc.integer({ min, max: Math.min(max, Number.MAX_SAFE_INTEGER) });
    }
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'string': {
      if (schema.pattern || schema.format) return leaf(schema);
      const minLength = schema.minLength ?? 0;
      return fc
        .string({ minLength, maxLength: Math.max(minLength, Math.min(schema.maxLength ?? 24, 24)), unit: 'grapheme' })
        .filter((s) => (schema.maxLength === undefined || [...s].length <= schema.maxLength) && s.length >= minLength);
    }
    case 'array': {
      const minLength = schema.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? 3, 3));
      const items = arbitrary(schema.items ?? {}, name?.replace(/s$/, ''), depth + 1);
      return schema.uniqueItems
        ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
        : fc.array(items, { minLength, maxLength });
    }
    case 'object': {
      const properties: Record<string, any> = schema.properties ?? {};
      if (Object.keys(properties).length === 0) {
        return depth > 3 ? fc.constant({}) : fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), freeValue, { maxKeys: 3 });
      }
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, value] of Object.entries(properties)) {
        if (resolve(value).readOnly) continue;
        model[key] = arbitrary(value, key, depth + 1);
      }
      const required = (schema.required ?? []).filter((key: string) => key in model);
      return fc.record(model, { requiredKeys: required });
    }
    default:
      return freeValue;
  }
}

// ---- requests --------------------------------------------------------------------------------------------

export interface Request {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: unknown;
  /** Raw text and content type, for mutations that break the encoding itself. */
  raw?: { text: string; type: string };
}

export const jsonBody = (op: Operation) => requestBodyOf(doc, op)?.content.find((m) => m.mediaType === 'application/json');

export function requestArbitrary(op: Operation): fc.Arbitrary<Request> {
  const path: Record<string, fc.Arbitrary<unknown>> = {};
  const query: Record<string, fc.Arbitrary<unknown>> = {};
  const headers: Record<string, fc.Arbitrary<unknown>> = {};
  const pathNames = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  for (const name of pathNames) {
    const declared = op.parameters.find((p) => p.in === 'path' && p.name === name);
    // The deletion takes the ready machine: the suspended one (every other machine path's) must outlive it, or its
    // suspension's resume is refused (409: a machine being deleted is not resumed).
    const real =
      name === 'metric' || name === 'userCode'
        ? realValues(name)
        : [op.operationId === 'deleteMachine' ? world.ids.readyMachine : idFor(world, op.path, name)].filter(Boolean);
    const generated = arbitrary(declared?.object.schema ?? { type: 'string', minLength: 1, maxLength: 40 });
    // A parameter with no real value to mix in (fast-check refuses an empty constantFrom) is only generated.
    path[name] = real.length === 0 ? generated : fc.oneof({ arbitrary: fc.constantFrom(...real), weight: 4 }, { arbitrary: generated, weight: 1 });
  }
  const requiredQuery: string[] = [];
  const requiredHeaders: string[] = [];
  for (const p of op.parameters) {
    if (p.in === 'query') {
      query[p.name] = arbitrary(p.object.schema, p.name);
      if (p.required) requiredQuery.push(p.name);
    } else if (p.in === 'header') {
      // Header values are bytes on the wire: visible ASCII (fetch refuses anything beyond Latin-1).
      const schema = resolve(p.object.schema);
      const visible = fc.string({
        unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
        minLength: schema.minLength ?? 1,
        maxLength: Math.min(schema.maxLength ?? 64, 64),
      });
      const real = realValues(p.name);
      headers[p.name] = real.length > 0 ? fc.oneof({ arbitrary: fc.constantFrom(...real), weight: 3 }, { arbitrary: visible, weight: 1 }) : visible;
      if (p.required) requiredHeaders.push(p.name);
    }
  }
  const media = jsonBody(op);
  const body = media?.schemaAt ? arbitrary({ $ref: media.schemaAt }) : fc.constant(undefined);
  return fc
    .record({
      path: fc.record(path),
      query: fc.record(query, { requiredKeys: requiredQuery }),
      headers: fc.record(headers, { requiredKeys: requiredHeaders }),
      body,
    })
    .map(({ path: p, query: q, headers: h, body: b }) => {
      let url = op.path;
      for (const name of pathNames) url = url.replace(`{${name}}`, encodeURIComponent(String(p[name])));
      const queryStrings = Object.fromEntries(Object.entries(q).map(([k, v]) => [k, String(v)]));
      // The log stream follows by default; the fuzzer reads backlogs only.
      if (op.operationId === 'streamInstallLogs') queryStrings.follow = 'false';
      return {
        method: op.method.toUpperCase(),
        path: url,
        query: queryStrings,
        headers: Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)])),
        ...(b === undefined ? {} : { body: b }),
      };
    });
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function send(base: string, request: Request, token: string | undefined): Promise<Reply> {
  const query = new URLSearchParams(request.query).toString();
  const headers: Record<string, string> = { accept: 'application/json, text/event-stream', ...request.headers };
  if (token !== undefined) headers.authorization ??= `Bearer ${token}`;
  let body: string | undefined;
  if (request.raw) {
    body = request.raw.text;
    headers['content-type'] = request.raw.type;
  } else if (request.body !== undefined) {
    body = JSON.stringify(request.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${base}${request.path}${query ? `?${query}` : ''}`, {
    method: request.method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  // A followed event stream never ends by itself: its status and headers are the answer; the stream is let go.
  if (response.ok && response.headers.get('content-type')?.startsWith('text/event-stream') && request.query.follow !== 'false') {
    await response.body?.cancel();
    return { status: response.status, headers: response.headers, text: '', json: undefined };
  }
  const text = await response.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** The token each request is made with: logout revokes the token it is called with, so it gets its own. */
export async function tokenFor(op: Operation): Promise<string | undefined> {
  if (Array.isArray(op.object.security) && op.object.security.length === 0) return undefined;
  if (op.operationId === 'logout') {
    // A write of the fuzzer's own: the database is no longer as the last snapshot saw it.
    unchangedSnapshot = undefined;
    return (await createToken(app.db, clock, { userId: world.alice.userId, kind: 'pat', name: 'logout', expiresAt: null })).secret;
  }
  return fuzzToken;
}

// ---- the database snapshot -------------------------------------------------------------------------------

// Tables whose rows a rejected request changes by design: the device flow's brute-force counter and polling
// state (a wrong user code counts, a poll records when it came), the API rate limit's counters, and the audit
// log (a refused request is recorded). Tokens are compared by id only (last_used_at is written on use, by design).
const WRITTEN_BY_DESIGN = new Set(['device_code_attempts', 'device_grants', 'api_rate_limits', 'stream_slots', 'audit_events']);
let snapshotQuery: string;
/**
 * The snapshot is taken twice for each refused request (about 9,000 times a run), so it runs as a statement prepared
 * once on a connection of its own: sent as plain text, PostgreSQL parsed and planned its subquery per table on every
 * call, 5 ms of the 16 ms a mutated request took; prepared, it takes under 1 ms.
 */
let snapshotClient: Promise<pg.Client> | undefined;

export async function snapshot(): Promise<Record<string, string>> {
  snapshotClient ??= (async () => {
    const client = new pg.Client({ connectionString: app.database.url });
    await client.connect();
    return client;
  })();
  const { rows } = await (await snapshotClient).query<Record<string, string>>({ name: 'fuzz_snapshot', text: snapshotQuery });
  return rows[0]!;
}

/**
 * The snapshot after the last refused request, once seen equal to the one before it: with nothing written since, it is
 * the next request's "before" and need not be taken again. Taking it empties it, so a failed or accepted request (or a
 * token made for logout) leaves none, and the next "before" is taken afresh.
 */
let unchangedSnapshot: Record<string, string> | undefined;

export async function snapshotBefore(): Promise<Record<string, string>> {
  const known = unchangedSnapshot;
  unchangedSnapshot = undefined;
  return known ?? (await snapshot());
}

/** Called with the snapshot after a refused request once it was seen equal to the one before. */
export function keepUnchangedSnapshot(after: Record<string, string>): void {
  unchangedSnapshot = after;
}

// Before the file's database is dropped (useTestServer's hooks, registered first, run after this one).
afterAll(async () => {
  await (await snapshotClient)?.end();
});

// ---- the run ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  world = await buildWorld(app.db, clock);
  fuzzToken = (await createToken(app.db, clock, { userId: world.alice.userId, kind: 'pat', name: 'fuzzer', expiresAt: null })).secret;
  outsider = await newUser(app.db, clock, 'pro');
  bobEmail = (await app.db.selectFrom('users').select('email').where('id', '=', world.bob.userId).executeTakeFirstOrThrow()).email;
  deviceUserCode = (await send(app.baseUrl, { method: 'POST', path: '/v1/auth/device/code', query: {}, headers: {}, body: {} }, undefined)).json.user_code;
  // One request first, so the fuzz token's last_used_at is written before any snapshot.
  await send(app.baseUrl, { method: 'GET', path: '/v1/workspaces', query: {}, headers: {} }, fuzzToken);
  const tables = await sql<{ tablename: string }>`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`.execute(app.db);
  snapshotQuery = `SELECT ${tables.rows
    .filter((t) => !WRITTEN_BY_DESIGN.has(t.tablename))
    .map((t) => {
      const row = t.tablename === 'tokens' ? 't.id' : 't::text';
      return `(SELECT count(*) || ':' || coalesce(md5(string_agg(md5(${row}), '' ORDER BY md5(${row}))), '') FROM "${t.tablename}" t) AS "${t.tablename}"`;
    })
    .join(', ')}`;
  console.info(`fuzz: seed ${SEED}, ${RUNS} runs per operation and kind (FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} to repeat)`);
}, 120_000);

export const documented = (op: Operation) => Object.keys((op.object.responses ?? {}) as object);
export const isOauth = (op: Operation) => JSON.stringify((op.object.responses as Record<string, unknown> | undefined)?.['400'] ?? '').includes('OAuthError');

export function expectErrorBody(op: Operation, request: Request, reply: Reply): void {
  const where = `${op.operationId} ${request.method} ${request.path} → ${reply.status} ${reply.text.slice(0, 300)}`;
  if (isOauth(op) && reply.status === 400) {
    expect(typeof reply.json?.error, where).toBe('string');
    return;
  }
  expect(reply.json?.error?.code, where).toEqual(expect.any(String));
  expect(reply.json?.error?.message, where).toEqual(expect.any(String));
  if (reply.status === 422 && reply.json.error.code === 'validation_error') expect(reply.json.error.param, where).toEqual(expect.any(String));
  expect(reply.text, where).not.toMatch(/\bat .+:\d+:\d+\)|node_modules|SELECT |INSERT INTO|syntax error at/);
}

/** Operation → whether a generated request reached its success path (a 2xx). */
