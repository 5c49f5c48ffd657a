// `pnpm mock` as a front-end developer meets it: invalid requests answered with the contract's error body naming
// the violation, malformed JSON answered at once, `Prefer` honoured, and dynamic data that looks like ours.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { EXPOSED_HEADERS, newUser, systemClock, type TestUser, useTestServer } from '@platform/server/testing';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EXPOSED_HEADERS as MOCK_EXPOSED_HEADERS, violationParam } from '../../scripts/mock-proxy.ts';
import { get, isObject, listOperations, loadDocument, parameterExample, responsesOf, SchemaValidator } from '../support/openapi.ts';
import { freePort, repoRoot } from '../support/prism.ts';

const auth = { authorization: 'Bearer any-token-works' };
const doc = loadDocument();
const validator = new SchemaValidator(doc);
const schema = (name: string) => `#/components/schemas/${name}`;

let child: ChildProcessWithoutNullStreams;
let base: string;
// The server, for what the mock must answer as it does.
const server = useTestServer();
let serverUser: TestUser;
beforeAll(async () => {
  serverUser = await newUser(server.db, systemClock, 'pro');
});

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, [join(repoRoot, 'scripts', 'mock.ts')], {
    cwd: repoRoot,
    env: { ...process.env, PORT: String(port), NO_COLOR: '1' },
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the mock did not start:\n${output}`)), 45_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(`Mock API (Prism) listening on ${base}`)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => reject(new Error(`the mock exited (${code}):\n${output}`)));
  });
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }
});

async function call(method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...auth, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body,
    signal: AbortSignal.timeout(5000),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

describe('invalid requests', () => {
  test('a query parameter out of range names the parameter, in the contract’s error shape', async () => {
    const { status, body } = await call('GET', '/v1/clusters?limit=1000');
    expect(status).toBe(422);
    expect(validator.errors(schema('Error'), body)).toEqual([]);
    expect(body.error).toMatchObject({ code: 'validation_error', param: 'limit', message: expect.stringMatching(/limit must be <= 100/) });
  });

  test('a body names its violations, not the canned example about limit', async () => {
    const { status, body } = await call('POST', '/v1/clusters', { body: JSON.stringify({ name: 'Bad Name!' }) });
    expect(status).toBe(422);
    expect(validator.errors(schema('Error'), body)).toEqual([]);
    expect(body.error.code).toBe('validation_error');
    const params = body.error.details.violations.map((violation: { param: string }) => violation.param);
    expect(params).toEqual(expect.arrayContaining(['region_id', 'name']));
    expect(params).not.toContain('limit');
    expect(params).toContain(body.error.param);
  });

  test('the same bad requests get the same 422 from the mock and the server: first violation, suggestion, every violation, in the server’s words', async () => {
    const requests: [string, string, string | undefined][] = [
      ['POST', '/v1/clusters', JSON.stringify({ name: 'Not A Label', region_id: 5, colour: 'blue' })],
      ['POST', '/v1/clusters', JSON.stringify({ region_id: 'fsn1' })],
      ['GET', '/v1/clusters?limit=1000', undefined],
      ['POST', '/v1/installs', JSON.stringify({ product_id: 'prd_1', region_id: 'fsn1', overrides: [{ values: {} }] })],
      ['POST', '/v1/registry/credentials', JSON.stringify({ name: 'n', registry_url: 'https://ghcr.io', username: 'u', password: 5 })],
    ];
    for (const [method, path, body] of requests) {
      const fromMock = await call(method, path, body === undefined ? {} : { body });
      const fromServer = await fetch(`${server.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${serverUser.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body,
      });
      const serverBody = (await fromServer.json()) as { error: { details: { violations: unknown[] } } };
      expect(fromMock.status, `${method} ${path}`).toBe(fromServer.status);
      const sorted = (violations: { param: string }[]) => [...violations].sort((a, b) => a.param.localeCompare(b.param));
      expect(sorted(fromMock.body.error.details.violations), `${method} ${path}`).toEqual(sorted(serverBody.error.details.violations as { param: string }[]));
      expect(serverBody.error.details.violations).toContainEqual({ param: fromMock.body.error.param, message: fromMock.body.error.message });
      expect(Object.keys(fromMock.body.error).sort()).toEqual(Object.keys(serverBody.error).sort());
    }
  });

  test('a nested body field is named by its path', async () => {
    const { status, body } = await call('POST', '/v1/installs', {
      body: JSON.stringify({ product_id: 'prd_1', region_id: 'fsn1', overrides: [{ values: {} }] }),
    });
    expect(status).toBe(422);
    expect(body.error).toMatchObject({
      param: 'overrides[0].template_helm_source_id',
      message: expect.stringMatching(/template_helm_source_id/),
    });
  });

  test('malformed JSON gets 400 bad_request at once', async () => {
    const started = performance.now();
    const { status, headers, body } = await call('POST', '/v1/clusters', { body: '{"name": "web",' });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(status).toBe(400);
    expect(headers.get('access-control-allow-origin')).toBe('*');
    expect(validator.errors(schema('Error'), body)).toEqual([]);
    expect(body.error).toMatchObject({ code: 'bad_request', message: expect.stringMatching(/not valid JSON/) });
  });
  test('a body of a media type the operation does not take gets the server’s answer: 400 where it takes JSON, 415 where it takes none', async () => {
    const form = await call('POST', '/v1/clusters', { body: 'name=web&region_id=fsn1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(400);
    expect(form.body.error).toMatchObject({ code: 'bad_request', message: 'The request body must be JSON.' });
    const text = await call('PATCH', '/v1/notifications/ntf_1/read', { body: 'read', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(text.body.error).toMatchObject({
      code: 'unsupported_media_type',
      param: 'body',
      message: 'PATCH /v1/notifications/{id}/read takes no request body.',
    });
    expect(validator.errors(schema('Error'), text.body)).toEqual([]);
  });

  test('an example the answer does not have is 400 naming Prefer, not a 404 that reads as a missing resource', async () => {
    const { status, body } = await call('GET', '/v1/clusters/cl_1', { headers: { prefer: 'example=not_found' } });
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: 'bad_request', param: 'Prefer' });
  });
});

describe('valid requests pass through', () => {
  test('the contract’s examples, with any token', async () => {
    const { status, body } = await call('GET', '/v1/regions');
    expect(status).toBe(200);
    expect(body.data.map((region: { id: string }) => region.id)).toEqual(['fsn1', 'ash']);
  });

  test('Prefer: code and example pick an error example', async () => {
    const { status, body } = await call('GET', '/v1/clusters/cl_1', { headers: { prefer: 'code=404, example=not_found' } });
    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
  });

  test('a known path with another method is 405 naming the path’s methods in Allow, as the server’s', async () => {
    const { status, headers, body } = await call('DELETE', '/v1/quotas');
    expect(status).toBe(405);
    expect(body.error.code).toBe('method_not_allowed');
    expect(headers.get('allow')).toBe('GET');
    const byId = await call('PUT', '/v1/clusters/cl_1');
    expect(byId.status).toBe(405);
    expect(byId.headers.get('allow')?.split(', ').sort()).toEqual(['DELETE', 'GET', 'PATCH']);
  });

  test('X-Request-Id is the request’s own when valid, else a new one on every answer, as the server’s', async () => {
    const echoed = await call('GET', '/v1/regions', { headers: { 'x-request-id': 'trace-42.abc' } });
    expect(echoed.headers.get('x-request-id')).toBe('trace-42.abc');
    const [one, two] = await Promise.all([call('GET', '/v1/regions'), call('GET', '/v1/clusters/cl_1', { headers: { prefer: 'code=404' } })]);
    expect(one.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(two.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(one.headers.get('x-request-id')).not.toBe(two.headers.get('x-request-id'));
  });

  test('a first POST with an idempotency key is no replay (the mock keeps no state)', async () => {
    const { status, headers } = await call('POST', '/v1/installs', {
      body: JSON.stringify({ product_id: 'prd_1', region_id: 'fsn1' }),
      headers: { 'idempotency-key': 'k-1' },
    });
    expect(status).toBe(202);
    expect(headers.get('idempotent-replayed')).toBeNull();
  });

  test('a valid body gets the success example', async () => {
    const { status, body } = await call('POST', '/v1/clusters', { body: JSON.stringify({ name: 'web', region_id: 'fsn1' }) });
    expect(status).toBe(202);
    expect(validator.errors(schema('Cluster'), body)).toEqual([]);
  });
});

describe('Prefer: dynamic=true', () => {
  test('ids in the service’s formats, timestamps of these years, readable names, valid against the contract', async () => {
    const pages = await Promise.all([1, 2, 3].map(() => call('GET', '/v1/clusters', { headers: { prefer: 'dynamic=true' } })));
    const clusters = pages.flatMap(({ status, body }) => {
      expect(status).toBe(200);
      expect(validator.errors(schema('ClusterList'), body)).toEqual([]);
      return body.data as { id: string; name: string; workspace_id: string; region_id: string; created_at: number }[];
    });
    expect(clusters.length).toBeGreaterThan(0);
    const ulid = '01j[0-9a-hjkmnp-tv-z]{23}';
    for (const cluster of clusters) {
      expect(cluster.id).toMatch(new RegExp(`^cl_${ulid}$`));
      expect(cluster.workspace_id).toMatch(new RegExp(`^ws_${ulid}$`));
      expect(['fsn1', 'nbg1', 'hel1', 'ash', 'hil', 'sin']).toContain(cluster.region_id);
      expect(cluster.name).toMatch(/^[a-z]+(-[a-z]+)+$/);
      // 2024-01-01 to 2027-01-01, in seconds.
      expect(cluster.created_at).toBeGreaterThanOrEqual(1_704_067_200);
      expect(cluster.created_at).toBeLessThanOrEqual(1_798_761_600);
    }
    expect(new Set(clusters.map((cluster) => cluster.id)).size, 'fresh ids').toBe(clusters.length);
  });
});

// The list operations answering the `{data, pagination}` envelope, each with the parameters it needs.
const lists = listOperations(doc).flatMap((operation) => {
  const ok = responsesOf(doc, operation).find((response) => response.status === '200');
  const schemaAt = ok?.content.find((media) => media.mediaType === 'application/json')?.schemaAt;
  const schemaObject = schemaAt ? get(doc, schemaAt) : undefined;
  const target = isObject(schemaObject) && typeof schemaObject.$ref === 'string' ? get(doc, schemaObject.$ref) : schemaObject;
  if (operation.method !== 'get' || !schemaAt || !isObject(target) || !isObject(target.properties) || !('pagination' in target.properties)) return [];
  let path = operation.path;
  const query = new URLSearchParams();
  for (const parameter of operation.parameters) {
    if (parameter.in === 'path') path = path.replace(`{${parameter.name}}`, encodeURIComponent(String(parameterExample(parameter))));
    else if (parameter.in === 'query' && parameter.required) query.set(parameter.name, String(parameterExample(parameter)));
  }
  return [{ operationId: operation.operationId, url: `${path}${query.size > 0 ? `?${query}` : ''}`, schemaAt }];
});

// json-schema-faker's filler text (its LIPSUM_WORDS), also cut short to fit a maxLength.
const lipsum = (
  'lorem ipsum dolor sit amet consectetur adipisicing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua ' +
  'enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure in ' +
  'reprehenderit voluptate velit esse cillum eu fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui ' +
  'officia deserunt mollit anim id est laborum'
).split(' ');
const isLipsum = (text: string) => {
  const words = text
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter(Boolean);
  return words.length > 0 && words.every((word) => lipsum.some((filler) => filler.startsWith(word)));
};
// The contract's free-text fields: what a person reads.
const messageFields = new Set([
  'status_message',
  'title',
  'body',
  'message',
  'suggestion',
  'error_description',
  'last_error',
  'disabled_reason',
  'description',
  'custom_description',
  'line',
]);

/** What breaks the three rules in one answer, with where. */
function inconsistencies(value: unknown, at = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => inconsistencies(item, `${at}[${index}]`));
  if (!isObject(value)) return [];
  const found: string[] = [];
  if (typeof value.created_at === 'number' && typeof value.updated_at === 'number' && value.updated_at < value.created_at) {
    found.push(`${at}: updated_at ${value.updated_at} before created_at ${value.created_at}`);
  }
  if (typeof value.release === 'string' && typeof value.id === 'string' && !value.release.startsWith(`${value.id}.`)) {
    found.push(`${at}: release ${value.release} is not a patch release of ${value.id}`);
  }
  if (Array.isArray(value.data) && isObject(value.pagination) && value.pagination.has_more === true && value.data.length === 0) {
    found.push(`${at}: an empty page with has_more`);
  }
  // A status message goes with its status, as the server writes it: a failed record says why; only one being
  // deleted speaks of deleting, only one being made or installed of making or installing.
  if (typeof value.status === 'string' && 'status_message' in value) {
    const { status, status_message: message } = value;
    if (/^(ERROR|failed)$/.test(status) && (typeof message !== 'string' || message === '')) found.push(`${at}: ${status} without a status_message`);
    if (typeof message === 'string' && /delet|remov/i.test(message) && !/^(DELETING|uninstalling|ERROR|failed)$/.test(status))
      found.push(`${at}: ${status} with "${message}"`);
    if (typeof message === 'string' && /^(creating|installing|waiting)/i.test(message) && !/^(PROVISIONING|pending|installing)$/.test(status))
      found.push(`${at}: ${status} with "${message}"`);
  }
  for (const [key, field] of Object.entries(value)) {
    if (messageFields.has(key) && typeof field === 'string' && isLipsum(field)) found.push(`${at}.${key}: filler text "${field}"`);
    // Ids in the service's formats, names a person would give, moments of these years (the README's promise). A
    // request id is `req_` and 32 hex digits, a snapshot the provider's number, an object or resource id any of these.
    const idPattern: Record<string, RegExp> = {
      request_id: /^req_[0-9a-f]{32}$/,
      snapshot_id: /^[0-9]+$/,
      object_id: /^([a-z]+_01j[0-9a-hjkmnp-tv-z]{23}|compute:\/\/mch_01j[0-9a-z]{23}|[a-z]+\/[a-z]+)$/,
    };
    const serviceId = /^([a-z]+_01j[0-9a-hjkmnp-tv-z]{23}|fsn1|nbg1|hel1|ash|hil|sin|v1\.3[0-9]|compute:\/\/mch_01j[0-9a-z]{23})$/;
    const pattern = idPattern[key === 'resource_id' ? 'object_id' : key] ?? (key === 'id' || key.endsWith('_id') ? serviceId : undefined);
    if (pattern && typeof field === 'string' && !pattern.test(field)) found.push(`${at}.${key}: not an id of the service's "${field}"`);
    if (key === 'name' && typeof field === 'string' && isLipsum(field)) found.push(`${at}.${key}: filler text "${field}"`);
    if (key.endsWith('_at') && typeof field === 'number' && (field < 1_704_067_200 || field > 1_798_761_600))
      found.push(`${at}.${key}: ${field} is not of these years`);
    // What has happened has passed: only an expiry, a next attempt or an end of support may be to come.
    if (key.endsWith('_at') && !/^(expires_at|next_attempt_at|end_of_support_at)$/.test(key) && typeof field === 'number' && field > Date.now() / 1000)
      found.push(`${at}.${key}: ${field} is in the future`);
    found.push(...inconsistencies(field, `${at}.${key}`));
  }
  return found;
}

describe('Prefer: dynamic=true, an error', () => {
  test('carries the contract’s code for its status, and words that go with it', async () => {
    for (const [status, code] of [
      [404, 'not_found'],
      [401, 'unauthorized'],
      [422, 'validation_error'],
    ] as const) {
      const answer = await call('GET', '/v1/clusters/cl_1', { headers: { prefer: `dynamic=true, code=${status}` } });
      expect(answer.status).toBe(status);
      expect(validator.errors(schema('Error'), answer.body)).toEqual([]);
      expect(answer.body.error.code).toBe(code);
    }
  });
});

describe('Prefer: dynamic=true, record by record', () => {
  test('the filler-text check knows lorem ipsum, even cut short, and passes a message', () => {
    expect(isLipsum('Excepteur')).toBe(true);
    expect(isLipsum('non sunt cupidatat')).toBe(true);
    expect(isLipsum('laboris reprehen')).toBe(true);
    expect(isLipsum('The control plane was not Ready within 900 seconds.')).toBe(false);
    expect(inconsistencies({ data: [], pagination: { cursor: 'x', has_more: true } })).toHaveLength(1);
    expect(inconsistencies({ data: [{ created_at: 1_750_000_002, updated_at: 1_750_000_001, title: 'dolor sit' }] })).toHaveLength(2);
    // The moment is both not of these years and in the future.
    expect(inconsistencies({ id: 'in eiusmod', name: 'culpa sint', created_at: 253_291_947_199 })).toHaveLength(4);
  });

  test('a status message goes with its record’s status, and what happened has passed: clusters and installs, 20 answers each', async () => {
    expect(inconsistencies({ kaas: { status: 'ERROR', status_message: null } })).toHaveLength(1);
    expect(inconsistencies({ kaas: { status: 'RUNNING', status_message: "Deleting the cluster's machines." } })).toHaveLength(1);
    expect(inconsistencies({ status: 'running', status_message: 'Installing 2 of 3 helm releases.' })).toHaveLength(1);
    expect(inconsistencies({ created_at: Math.floor(Date.now() / 1000) + 86_400 })).toHaveLength(1);
    const problems: string[] = [];
    const statuses = new Set<string>();
    for (let i = 0; i < 20; i++) {
      for (const url of ['/v1/clusters', '/v1/installs']) {
        const { status, body } = await call('GET', url, { headers: { prefer: 'dynamic=true' } });
        expect(status).toBe(200);
        for (const record of body.data as { status?: string; kaas?: { status: string } }[]) statuses.add(record.kaas?.status ?? record.status ?? '');
        problems.push(...inconsistencies(body).map((problem) => `${url} (answer ${i + 1})${problem}`));
      }
    }
    // Not a vacuous pass: records of several statuses were seen.
    expect(statuses.size).toBeGreaterThan(3);
    expect(problems).toEqual([]);
  });

  test('50 answers of the list operations: ids in the service’s formats, moments of these years and never before created_at, no empty page with has_more, readable names and messages', async () => {
    expect(lists.map((list) => list.operationId)).toEqual(
      expect.arrayContaining(['listClusters', 'listInstalls', 'listNotifications', 'listEvents', 'listAuditEvents', 'listKaasVersions']),
    );
    const problems: string[] = [];
    let answers = 0;
    while (answers < 50) {
      for (const { operationId, url, schemaAt } of lists) {
        if (answers >= 50) break;
        const { status, body } = await call('GET', url, { headers: { prefer: 'dynamic=true' } });
        answers++;
        expect(status, `${operationId} ${url}`).toBe(200);
        expect(validator.errors(schemaAt, body), `${operationId}: the answer stays valid`).toEqual([]);
        problems.push(...inconsistencies(body).map((problem) => `${operationId} (answer ${answers})${problem}`));
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('a front end on another origin', () => {
  test('reads the answer and its X-Request-Id as from the server, and a request with credentials is refused as the server refuses it', async () => {
    expect(MOCK_EXPOSED_HEADERS).toBe(EXPOSED_HEADERS);
    const preflight = await fetch(`${base}/v1/installs`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
    });
    expect(preflight.headers.get('access-control-allow-credentials')).toBeNull();

    // The front end's page, from a server of its own on this machine (a page the browser made up would not be in
    // the loopback address space, and Chromium's local-network rules would refuse its calls to the mock).
    const frontEnd = createServer((_request, response) =>
      response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>front end</title>'),
    );
    frontEnd.listen(0, '127.0.0.1');
    await once(frontEnd, 'listening');
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
    try {
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${(frontEnd.address() as AddressInfo).port}/`);
      const read = (credentials: 'same-origin' | 'include') =>
        page.evaluate(
          async ({ base, credentials }) => {
            try {
              const response = await fetch(`${base}/v1/regions`, { headers: { authorization: 'Bearer any-token-works' }, credentials });
              return { status: response.status, requestId: response.headers.get('x-request-id'), rateLimit: response.headers.get('ratelimit') };
            } catch (error) {
              return { error: String(error) };
            }
          },
          { base, credentials },
        );
      expect(await read('same-origin')).toEqual({ status: 200, requestId: expect.stringMatching(/^req_/), rateLimit: expect.any(String) });
      // Prism alone allowed credentials and exposed `*`, which hides every header from such a request.
      expect(await read('include')).toEqual({ error: expect.stringMatching(/Failed to fetch/) });
    } finally {
      await browser.close();
      frontEnd.close();
    }
  }, 60_000);
});

describe('violationParam', () => {
  const violation = (location: string[], code = 'type', message = 'm') => ({ location, severity: 'Error', code, message });
  test('spells the contract’s param paths', () => {
    expect(violationParam(violation(['request', 'query', 'limit']))).toBe('limit');
    expect(violationParam(violation(['request', 'header', 'X-Workspace-Id']))).toBe('X-Workspace-Id');
    expect(violationParam(violation(['request', 'body', 'sources', '0', 'chart', 'repo_url']))).toBe('sources[0].chart.repo_url');
    expect(violationParam(violation(['request', 'body'], 'required', "Request body must have required property 'name'"))).toBe('name');
    expect(
      violationParam(violation(['request', 'body', 'settings'], 'additionalProperties', "Request body must NOT have additional properties; found 'typo'")),
    ).toBe('settings.typo');
    expect(violationParam(violation(['request', 'body']))).toBeUndefined();
  });
});
