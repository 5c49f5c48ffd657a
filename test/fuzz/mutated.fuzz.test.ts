// Mutated and invalid requests straight at the server: never a 500, always the contract's error body, and a
// refused request changes nothing in the database.

import { MAX_JSON_DEPTH } from '@platform/server/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Operation } from '../support/openapi.ts';
import {
  app,
  expectErrorBody,
  isOauth,
  jsonBody,
  keepUnchangedSnapshot,
  operations,
  outsider,
  type Request,
  RUNS,
  requestArbitrary,
  resolve,
  SEED,
  send,
  snapshot,
  snapshotBefore,
  tokenFor,
  validator,
  world,
} from './harness.ts';

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
          const before = await snapshotBefore();
          const reply = await send(app.baseUrl, bad, token);
          const where = `${op.operationId} [${name}] ${bad.method} ${bad.path.slice(0, 200)}?${new URLSearchParams(bad.query).toString().slice(0, 200)} ${(bad.raw?.text ?? JSON.stringify(bad.body ?? null)).slice(0, 300)} → ${reply.status} ${reply.text.slice(0, 300)}`;
          expect(reply.status, where).toBeLessThan(500);
          if (mustReject) expect(reply.status, where).toBeGreaterThanOrEqual(400);
          if (reply.status >= 400) {
            rejected[name] = (rejected[name] ?? 0) + 1;
            expectErrorBody(op, bad, reply);
            const after = await snapshot();
            expect(after, where).toEqual(before);
            keepUnchangedSnapshot(after);
          }
        }),
        { seed: SEED + 1000 + index, numRuns: RUNS, endOnFailure: false },
      );
      expect(Object.keys(rejected).length).toBeGreaterThan(0);
    });
  });
});
