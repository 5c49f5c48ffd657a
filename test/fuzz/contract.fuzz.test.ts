import { buildWorld, createToken, idFor, MAX_JSON_DEPTH, newUser, TestClock, type TestUser, useTestServer, type World } from '@platform/server/testing';
import fc from 'fast-check';
import { generateSync } from 'json-schema-faker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listOperations, loadDocument, type Operation, requestBodyOf, SchemaValidator } from '../support/openapi.ts';
import { type PrismServer, startPrism } from '../support/prism.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 50);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const doc = loadDocument();
const validator = new SchemaValidator(doc);
const operations = listOperations(doc);

type Schema = Record<string, any>;
const resolve = (schema: any): Schema => {
  let s = schema;
  while (s && typeof s.$ref === 'string')
    s = s.$ref
      .split('/')
      .slice(1)
      .reduce((n: any, k: string) => n?.[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
  return s ?? {};
};

// ---- the seeded world, and the real values ids are drawn from -------------------------------------------

let prism: PrismServer;
let world: World;
let fuzzToken: string;
/** A user whose workspace nobody of the world ever joins. */
let outsider: TestUser;
let bobEmail: string;
/** The code of a device sign-in waiting for a decision, so looking it up can succeed. */
let deviceUserCode: string;

// The injected resolver: the machines have no public DNS; every name is public except the test's private one.
const resolveHost = async (host: string) => (host.endsWith('.private.test') ? ['10.0.0.1'] : ['93.184.216.34']);

const app = useTestServer({
  clock: new TestClock(1_800_000_000),
  env: { RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_DEVICE_PER_MINUTE: '0' },
  resolveHost,
});
const { clock } = app;

/** Real values for fields and parameters that name things, so generated requests often find them. */
function realValues(name: string | undefined): unknown[] {
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

interface Request {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: unknown;
  /** Raw text and content type, for mutations that break the encoding itself. */
  raw?: { text: string; type: string };
}

const jsonBody = (op: Operation) => requestBodyOf(doc, op)?.content.find((m) => m.mediaType === 'application/json');

function requestArbitrary(op: Operation): fc.Arbitrary<Request> {
  const path: Record<string, fc.Arbitrary<unknown>> = {};
  const query: Record<string, fc.Arbitrary<unknown>> = {};
  const headers: Record<string, fc.Arbitrary<unknown>> = {};
  const pathNames = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  for (const name of pathNames) {
    const declared = op.parameters.find((p) => p.in === 'path' && p.name === name);
    const real = name === 'metric' || name === 'userCode' ? realValues(name) : [idFor(world, op.path, name)].filter(Boolean);
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

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

async function send(base: string, request: Request, token: string | undefined): Promise<Reply> {
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
async function tokenFor(op: Operation): Promise<string | undefined> {
  if (Array.isArray(op.object.security) && op.object.security.length === 0) return undefined;
  if (op.operationId === 'logout')
    return (await createToken(app.db, clock, { userId: world.alice.userId, kind: 'pat', name: 'logout', expiresAt: null })).secret;
  return fuzzToken;
}

// ---- the database snapshot -------------------------------------------------------------------------------

// Tables whose rows a rejected request changes by design: the device flow's brute-force counter and polling
// state (a wrong user code counts, a poll records when it came), the API rate limit's counters, and the audit
// log (a refused request is recorded). Tokens are compared by id only (last_used_at is written on use, by design).
const WRITTEN_BY_DESIGN = new Set(['device_code_attempts', 'device_grants', 'api_rate_limits', 'stream_slots', 'audit_events']);
let snapshotQuery: string;

async function snapshot(): Promise<Record<string, string>> {
  const { rows } = await sql<Record<string, string>>`${sql.raw(snapshotQuery)}`.execute(app.db);
  return rows[0]!;
}

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
  prism = await startPrism({ mode: 'proxy', upstream: app.baseUrl, errors: true, verbose: 'error' });
  console.info(`fuzz: seed ${SEED}, ${RUNS} runs per operation and kind (FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} to repeat)`);
}, 120_000);

afterAll(async () => {
  await prism?.stop();
});

const documented = (op: Operation) => Object.keys((op.object.responses ?? {}) as object);
const isOauth = (op: Operation) => JSON.stringify((op.object.responses as Record<string, unknown> | undefined)?.['400'] ?? '').includes('OAuthError');

function expectErrorBody(op: Operation, request: Request, reply: Reply): void {
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
const reached = new Map<string, boolean>();

// Prism's proxy waits for the whole response, which an endless event stream never ends: those go to the server
// directly (their statuses are still checked against the contract).
const ENDLESS_STREAMS = new Set(['streamEvents']);

describe('(a) schema-valid requests through Prism (proxy, --errors)', () => {
  operations.forEach((op, index) => {
    it(`${op.operationId}`, async () => {
      const statuses: Record<number, number> = {};
      await fc.assert(
        fc.asyncProperty(requestArbitrary(op), async (request) => {
          const reply = await send(ENDLESS_STREAMS.has(op.operationId) ? app.baseUrl : prism.url, request, await tokenFor(op));
          statuses[reply.status] = (statuses[reply.status] ?? 0) + 1;
          const where = `${op.operationId} ${request.method} ${request.path}?${new URLSearchParams(request.query)} ${JSON.stringify(request.body ?? null).slice(0, 300)} → ${reply.status} ${reply.text.slice(0, 400)}`;
          expect(reply.headers.get('sl-violations'), where).toBeNull();
          expect(documented(op), where).toContain(String(reply.status));
          expect(reply.status, where).toBeLessThan(500);
        }),
        { seed: SEED + index, numRuns: RUNS, endOnFailure: false },
      );
      expect(Object.values(statuses).reduce((a, b) => a + b, 0)).toBe(RUNS);
      reached.set(
        op.operationId,
        Object.keys(statuses).some((status) => /^2/.test(status)),
      );
    });
  });
});

describe('(a) coverage', () => {
  // Not only refusals: with real ids mixed in, generated requests get past the 404s and 422s to the success
  // path of most operations (the rest need state the generator cannot guess, named here when it fails).
  it('most operations were reached with a 2xx', () => {
    const missed = [...reached].filter(([, ok]) => !ok).map(([id]) => id);
    console.info(`fuzz: ${reached.size - missed.length} of ${reached.size} operations reached a 2xx; not: ${missed.join(', ') || 'none'}`);
    expect(reached.size).toBe(operations.length);
    expect(missed.length, `no 2xx for: ${missed.join(', ')}`).toBeLessThanOrEqual(Math.floor(operations.length / 4));
  });
});

// ---- (b) mutations ---------------------------------------------------------------------------------------

type Mutation = (request: Request, op: Operation, pick: number) => { request: Request; mustReject: boolean } | undefined;

const WRONG_VALUES: unknown[] = [12345, 'not-a-number', true, { nested: 1 }, [1, 2], null, -1, 1.5];
const ODD_STRINGS = [
  'a\u0000b',
  '\u0000',
  '\ud800',
  'x\udfffy',
  '\u202e\u202dreversed',
  '😀'.repeat(50),
  '\ufeff',
  'Ω≈ç√∫',
  '\u0085\u2028\u2029',
  '%00',
  "'; DROP TABLE users; --",
  '${jndi:ldap://x}',
  '../../etc/passwd',
];

function bodySchemaAt(op: Operation): string | undefined {
  return jsonBody(op)?.schemaAt;
}
const invalidBody = (op: Operation, body: unknown) => {
  const at = bodySchemaAt(op);
  return at !== undefined && validator.errors(at, body).length > 0;
};
const topFields = (op: Operation) => {
  const at = bodySchemaAt(op);
  const schema = at ? resolve({ $ref: at }) : {};
  return { properties: (schema.properties ?? {}) as Record<string, any>, required: (schema.required ?? []) as string[] };
};

/** The body as raw JSON text with `field` set to `raw` (text JSON.stringify would never write). */
function withRawField(request: Request, field: string, raw: string): Request {
  const marker = '__fuzz_raw_value__';
  const text = JSON.stringify({ ...(request.body as object), [field]: marker }).replace(`"${marker}"`, raw);
  return { ...request, body: undefined, raw: { text, type: 'application/json' } };
}
const objectBody = (request: Request) => request.body !== null && typeof request.body === 'object' && !Array.isArray(request.body);
const cursorOf = (content: string) => Buffer.from(content).toString('base64url');

const mutations: Record<string, Mutation> = {
  deepJson(request, op, pick) {
    // Nested past the contract's depth limit (and far past it, where a recursive check overflows its stack).
    if (!jsonBody(op) || !objectBody(request)) return undefined;
    const fields = Object.keys(topFields(op).properties);
    if (fields.length === 0) return undefined;
    const levels = [MAX_JSON_DEPTH + 1, 5_000, 100_000][pick % 3]!;
    const nested = pick % 2 === 0 ? `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}` : `${'['.repeat(levels)}${']'.repeat(levels)}`;
    return { request: withRawField(request, fields[pick % fields.length]!, nested), mustReject: true };
  },
  loneSurrogates(request, op, pick) {
    // A lone UTF-16 surrogate, escaped (the only way JSON carries one), in a string field or a property name.
    if (!jsonBody(op) || !objectBody(request)) return undefined;
    const strings = Object.entries(topFields(op).properties).filter(([, s]) => resolve(s).type === 'string');
    const escape = ['\\ud800', '\\udfff', 'a\\udc00b', '\\ud83d'][pick % 4]!;
    if (strings.length === 0 || pick % 5 === 0) {
      const marker = '__fuzz_surrogate_key__';
      const text = JSON.stringify({ ...(request.body as object), [marker]: 1 }).replace(marker, escape);
      return { request: { ...request, body: undefined, raw: { text, type: 'application/json' } }, mustReject: true };
    }
    return { request: withRawField(request, strings[pick % strings.length]![0], `"${escape}"`), mustReject: true };
  },
  hugeIntegers(request, op, pick) {
    // Beyond 2^53 - 1 (JavaScript) and beyond bigint (PostgreSQL), or not representable at all.
    if (!jsonBody(op) || !objectBody(request)) return undefined;
    const integers = Object.entries(topFields(op).properties).filter(([, s]) => [resolve(s).type].flat().includes('integer'));
    if (integers.length === 0) return undefined;
    const huge = ['9007199254740993', '9223372036854775808', '-9223372036854775809', '18446744073709551616', '1e400', `1${'0'.repeat(400)}`][pick % 6]!;
    return { request: withRawField(request, integers[pick % integers.length]![0], huge), mustReject: true };
  },
  decodedCursor(request, op, pick) {
    // A well-formed base64url cursor whose decoded content is hostile.
    if (!op.parameters.some((p) => p.in === 'query' && p.name === 'cursor')) return undefined;
    const content = [
      JSON.stringify({ t: 1, i: 'ws_\u0000' }),
      JSON.stringify({ t: 1, i: 'ws_\u0007x' }),
      '{"t":1,"i":"ws_\\ud800"}',
      JSON.stringify({ t: 1, i: 'x'.repeat(10_000) }),
      JSON.stringify({ t: -1, i: 'ws_1' }),
      '{"t":18446744073709551616,"i":"ws_1"}',
      '[1,"ws_1"]',
      `${'{"t":'.repeat(5_000)}1${'}'.repeat(5_000)}`,
    ][pick % 8]!;
    return { request: { ...request, query: { ...request.query, cursor: cursorOf(content) } }, mustReject: true };
  },
  wrongType(request, op, pick) {
    if (!request.body || typeof request.body !== 'object' || Array.isArray(request.body)) return undefined;
    const fields = Object.keys(topFields(op).properties);
    if (fields.length === 0) return undefined;
    const field = fields[pick % fields.length]!;
    const body = { ...(request.body as object), [field]: WRONG_VALUES[pick % WRONG_VALUES.length] };
    return invalidBody(op, body) ? { request: { ...request, body }, mustReject: true } : undefined;
  },
  missingRequired(request, op, pick) {
    const { required } = topFields(op);
    if (!request.body || typeof request.body !== 'object' || required.length === 0) return undefined;
    const body = { ...(request.body as Record<string, unknown>) };
    delete body[required[pick % required.length]!];
    return { request: { ...request, body }, mustReject: true };
  },
  unknownField(request, op, pick) {
    if (!request.body || typeof request.body !== 'object' || Array.isArray(request.body)) return undefined;
    const name = ['owner', 'workspace_id', 'id', 'created_at', 'isAdmin', '__proto__x'][pick % 6]!;
    if (name in topFields(op).properties) return undefined;
    return { request: { ...request, body: { ...(request.body as object), [name]: 'forged' } }, mustReject: true };
  },
  hugeString(request, op, pick) {
    if (!request.body || typeof request.body !== 'object' || Array.isArray(request.body)) return undefined;
    const limited = Object.entries(topFields(op).properties).filter(([, s]) => resolve(s).type === 'string' && resolve(s).maxLength !== undefined);
    if (limited.length === 0) return undefined;
    const [field, schema] = limited[pick % limited.length]!;
    const length = resolve(schema).maxLength + 1 + (pick % 3) * 50_000;
    return { request: { ...request, body: { ...(request.body as object), [field]: 'x'.repeat(length) } }, mustReject: true };
  },
  oddUnicode(request, op, pick) {
    const odd = ODD_STRINGS[pick % ODD_STRINGS.length]!;
    if (request.body && typeof request.body === 'object' && !Array.isArray(request.body)) {
      const strings = Object.entries(topFields(op).properties).filter(([, s]) => resolve(s).type === 'string');
      if (strings.length > 0) {
        const [field] = strings[pick % strings.length]!;
        const body = { ...(request.body as object), [field]: odd };
        return { request: { ...request, body }, mustReject: invalidBody(op, body) };
      }
    }
    const named = Object.keys(request.query);
    if (named.length === 0) return undefined;
    return { request: { ...request, query: { ...request.query, [named[pick % named.length]!]: odd } }, mustReject: false };
  },
  bodyNotAnObject(request, op, pick) {
    if (!jsonBody(op) || isOauth(op)) return undefined;
    const body = [[], 'text', 42, null, true][pick % 5];
    if (!invalidBody(op, body)) return undefined;
    return { request: { ...request, body: undefined, raw: { text: JSON.stringify(body), type: 'application/json' } }, mustReject: true };
  },
  malformedJson(request, op, pick) {
    if (!jsonBody(op)) return undefined;
    const text = ['{"name":', '{name: 1}', "{'a':1}", '{"a":1}}', '\u0000', '{"a":"\\ud800', '[', 'nul'][pick % 8]!;
    return { request: { ...request, body: undefined, raw: { text, type: 'application/json' } }, mustReject: true };
  },
  wrongContentType(request, op, pick) {
    if (!jsonBody(op) || request.body === undefined) return undefined;
    const type = ['text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/json-patch+json', 'image/png'][pick % 5]!;
    return { request: { ...request, body: undefined, raw: { text: JSON.stringify(request.body), type } }, mustReject: true };
  },
  badPathId(request, op, pick) {
    const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    if (names.length === 0) return undefined;
    const bad = ['%00', '%ZZ', 'x'.repeat(5000), '%F0%9F', '..%2F..%2Fetc', '%E2%80%AE', "1'%20OR%20'1'='1", '%C0%AE', '-1', '0', 'null', '%20'][pick % 12]!;
    const segments = op.path.split('/');
    const index = segments.indexOf(`{${names[pick % names.length]}}`);
    const actual = request.path.split('/');
    actual[index] = bad;
    return { request: { ...request, path: actual.join('/') }, mustReject: true };
  },
  badQuery(request, op, pick) {
    const typed = op.parameters.filter((p) => p.in === 'query' && ['integer', 'boolean'].includes(resolve(p.object.schema).type));
    if (typed.length === 0) return undefined;
    const p = typed[pick % typed.length]!;
    const value = ['abc', '-1', '1e999', '0x10', '', '1.5', '999999999999999999999', 'yes'][pick % 8]!;
    const q = { ...request.query, [p.name]: value };
    const schema = resolve(p.object.schema);
    const n = Number(value);
    const stillValid =
      value !== '' &&
      (schema.type === 'boolean'
        ? ['true', 'false'].includes(value)
        : Number.isInteger(n) && n >= (schema.minimum ?? -Infinity) && n <= (schema.maximum ?? Infinity) && /^-?\d+$/.test(value));
    return stillValid ? undefined : { request: { ...request, query: q }, mustReject: true };
  },
  malformedHeader(request, op, pick) {
    const choices: Record<string, string>[] = [
      { authorization: 'Bearer' },
      { authorization: 'Bearer a b c' },
      { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      { authorization: `Bearer svc_pat_${'A'.repeat(38)}` },
      { authorization: 'Bearer e30.e30.' },
    ];
    if (Array.isArray(op.object.security) && op.object.security.length === 0) {
      if (!jsonBody(op)) return undefined;
      return { request: { ...request, body: undefined, raw: { text: 'grant_type=%ZZ&&&=', type: 'application/json' } }, mustReject: true };
    }
    return { request: { ...request, headers: { ...request.headers, ...choices[pick % choices.length]! } }, mustReject: true };
  },
  workspaceHeader(request, op, pick) {
    if (!op.parameters.some((p) => p.in === 'header' && p.name === 'X-Workspace-Id')) return undefined;
    // A second X-Workspace-Id (Node joins repeats with ", "), another user's, one that does not exist, too long.
    // (An outsider's workspace: Alice may have joined Bob's by accepting his invitation in the valid phase.)
    const value = [`${world.alice.workspaceId}, ${outsider.workspaceId}`, outsider.workspaceId, 'ws_nope', 'w'.repeat(65), ' '][pick % 5]!;
    return { request: { ...request, headers: { ...request.headers, 'X-Workspace-Id': value } }, mustReject: true };
  },
  duplicateHeaders(request, op, pick) {
    const keyed = op.parameters.find((p) => p.in === 'header' && p.name !== 'X-Workspace-Id');
    if (!keyed) return undefined;
    const value = ['a, a', 'a,,b', '\t', 'k'.repeat(300)][pick % 4]!;
    return { request: { ...request, headers: { ...request.headers, [keyed.name]: value } }, mustReject: value.length > 256 };
  },
};

describe('(b) mutated and invalid requests straight at the server', () => {
  operations.forEach((op, index) => {
    // No parameters, no body and no token (the health probes): there is nothing to mutate.
    const open = Array.isArray(op.object.security) && op.object.security.length === 0;
    if (op.parameters.length === 0 && !jsonBody(op) && open) return;
    it(`${op.operationId}`, async () => {
      const applicable = Object.entries(mutations);
      const rejected: Record<string, number> = {};
      await fc.assert(
        fc.asyncProperty(requestArbitrary(op), fc.constantFrom(...applicable.map(([name]) => name)), fc.nat(1000), async (request, name, pick) => {
          const mutated = mutations[name]!(request, op, pick);
          fc.pre(mutated !== undefined);
          const { request: bad, mustReject } = mutated!;
          const token = await tokenFor(op);
          const before = await snapshot();
          const reply = await send(app.baseUrl, bad, token);
          const where = `${op.operationId} [${name}] ${bad.method} ${bad.path.slice(0, 200)}?${new URLSearchParams(bad.query).toString().slice(0, 200)} ${(bad.raw?.text ?? JSON.stringify(bad.body ?? null)).slice(0, 300)} → ${reply.status} ${reply.text.slice(0, 300)}`;
          expect(reply.status, where).toBeLessThan(500);
          if (mustReject) expect(reply.status, where).toBeGreaterThanOrEqual(400);
          if (reply.status >= 400) {
            rejected[name] = (rejected[name] ?? 0) + 1;
            expectErrorBody(op, bad, reply);
            expect(await snapshot(), where).toEqual(before);
          }
        }),
        { seed: SEED + 1000 + index, numRuns: RUNS, endOnFailure: false },
      );
      expect(Object.keys(rejected).length).toBeGreaterThan(0);
    });
  });
});
