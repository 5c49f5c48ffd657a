// What the server sends is what the contract declares: every answer of the server test suites is checked
// (VALIDATE_RESPONSES) for an undeclared status, an undeclared header or a body its schema refuses; here, that
// the check catches each, and the statuses the contract gained for it (413, 415, 422 on path parameters).
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import type { Context } from 'koa';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Contract, enforceDeclaredResponse, loadContract, type OperationMeta, responseProblems } from '../src/http/contract.ts';
import { call, newUser, TestClock, type TestUser, useTestServer } from './support.ts';

let contract: Contract;
let getCluster: OperationMeta;
const cluster = {
  id: 'cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
  name: 'prod-eu',
  workspace_id: 'ws_01jd2x8k4q3m7n5p9r6s2t8v0w',
  region_id: 'fsn1',
  kaas: { version: 'v1.31', status: 'RUNNING', status_message: null },
  created_at: 1732268900,
};

const app = useTestServer({ clock: new TestClock(1_800_000_000), env: { RATE_LIMIT_PER_MINUTE: '100', BODY_LIMIT_BYTES: '1024' } });
const { clock } = app;
let user: TestUser;

beforeAll(async () => {
  contract = await loadContract();
  getCluster = contract.operations.get('getCluster') as OperationMeta;
  user = await newUser(app.db, clock);
});

describe('the contract at run time', () => {
  it('leaves the bundled document as it is on disk, once every validator is compiled', async () => {
    const onDisk = JSON.parse(await readFile(createRequire(import.meta.url).resolve('@platform/api-types/openapi.json'), 'utf8'));
    for (const meta of contract.operations.values()) {
      contract.api.validator.getRequestValidatorsForOperation(meta.operationId);
      for (const status of meta.responses.keys()) contract.api.validateResponse({}, meta.operation, Number(status) || 500);
    }
    expect(definition).toEqual(onDisk);
  });
});

describe('the response check', () => {
  const headers = { 'x-request-id': 'req_1', ratelimit: '"default";r=9;t=5', 'ratelimit-policy': '"default";q=10;w=60', 'content-type': 'application/json' };

  it('passes an answer as declared', () => {
    expect(responseProblems(contract, getCluster, 200, headers, cluster)).toEqual([]);
    expect(responseProblems(contract, getCluster, 404, headers, { error: { code: 'not_found', message: 'Cluster x not found.' } })).toEqual([]);
    // The HTTP layer's own headers (security, CORS) are no operation's to declare.
    expect(
      responseProblems(contract, getCluster, 200, { ...headers, 'x-frame-options': 'DENY', 'access-control-allow-origin': 'https://app.example' }, cluster),
    ).toEqual([]);
  });

  it('refuses an undeclared status, an undeclared header and a body the schema refuses', () => {
    expect(responseProblems(contract, getCluster, 418, headers, cluster)).toEqual(['status 418 is not declared']);
    expect(responseProblems(contract, getCluster, 200, { ...headers, 'x-debug': '1' }, cluster)).toEqual(['header x-debug is not declared on 200']);
    // A 401 is not counted by the rate limit: its RateLimit header would be undeclared.
    expect(
      responseProblems(contract, getCluster, 401, { ...headers, 'www-authenticate': 'Bearer' }, { error: { code: 'unauthorized', message: 'No token.' } }),
    ).toEqual(['header ratelimit is not declared on 401', 'header ratelimit-policy is not declared on 401']);
    expect(responseProblems(contract, getCluster, 200, headers, { ...cluster, secret: 'x' })).toEqual([expect.stringMatching(/^body: .*additionalProperties/)]);
    expect(responseProblems(contract, getCluster, 404, headers, { error: { code: 'teapot', message: 'x' } })).toEqual([expect.stringMatching(/^body: .*enum/)]);
  });

  it('turns an answer that breaks the contract into a 500 naming what broke', () => {
    const ctx = { state: { operation: getCluster }, status: 418, response: { headers: {} }, body: undefined } as unknown as Context;
    expect(enforceDeclaredResponse(contract, ctx)).toBe(false);
    expect(ctx.status).toBe(500);
    expect(ctx.body).toEqual({ error: { code: 'internal_error', message: 'The answer of getCluster breaks the contract: status 418 is not declared.' } });
  });
});

/** A raw request: fetch refuses a body on GET. */
function send(method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(`${app.baseUrl}${path}`, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('a body sent to an operation that takes none', () => {
  const auth = () => ({ authorization: `Bearer ${user.token}`, 'content-type': 'application/json' });

  it('names a field of a JSON object as an unknown field (422), as a body with a schema would, whether sized or chunked', async () => {
    const sized = await send('GET', '/v1/clusters', { ...auth(), 'content-length': '9' }, '{"all":1}');
    expect(sized.status).toBe(422);
    expect(sized.body.error).toMatchObject({
      code: 'validation_error',
      param: 'all',
      message: 'Body field all is not allowed: GET /v1/clusters takes no request body.',
    });
    const chunked = await send('DELETE', '/v1/clusters/cl_01jd2x8m5r7t9v1w3y5a7c9e1g', { ...auth(), 'transfer-encoding': 'chunked' }, '{"force":true}');
    expect(chunked.status).toBe(422);
    expect(chunked.body.error).toMatchObject({ code: 'validation_error', param: 'force' });
    const marked = await send('POST', '/v1/auth/logout', { ...auth(), 'content-length': '13' }, '{"read":true}');
    expect(marked.body.error).toMatchObject({ code: 'validation_error', param: 'read' });
    // Still signed in: nothing was done.
    expect((await send('GET', '/v1/clusters', { authorization: `Bearer ${user.token}` })).status).toBe(200);
  });

  it('refuses JSON other than an object, JSON that does not parse and any other type of body with 415', async () => {
    for (const [type, body] of [
      ['application/json', '[1]'],
      ['application/json', '{"all"'],
      ['text/plain', 'all'],
    ]) {
      const reply = await send(
        'GET',
        '/v1/clusters',
        { authorization: `Bearer ${user.token}`, 'content-type': type!, 'content-length': String(body!.length) },
        body,
      );
      expect(reply.status, body).toBe(415);
      expect(reply.body.error).toMatchObject({ code: 'unsupported_media_type', param: 'body', message: 'GET /v1/clusters takes no request body.' });
    }
  });

  it('is not refused when empty (Content-Length: 0), nor when it is an empty JSON object', async () => {
    const reply = await send('GET', '/v1/clusters', { authorization: `Bearer ${user.token}`, 'content-length': '0' });
    expect(reply.status).toBe(200);
    const auth = { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' };
    expect((await send('GET', '/v1/clusters', { ...auth, 'content-length': '4' }, ' {} ')).status).toBe(200);
    // What many HTTP clients send with a POST that takes no body.
    expect((await send('POST', '/v1/user/sessions/revoke_others', { ...auth, 'content-length': '2' }, '{}')).status).toBe(200);
  });
});

describe('statuses the contract declares', () => {
  it('413 for a body over the limit, with the RateLimit headers every counted answer carries', async () => {
    const reply = await call(app.baseUrl, 'POST', '/v1/workspaces', { token: user.token, body: { name: 'x'.repeat(2000) } });
    expect(reply.status).toBe(413);
    expect(reply.body.error.code).toBe('payload_too_large');
    expect(reply.headers.get('RateLimit')).toMatch(/^"default";r=\d+;t=\d+$/);
  });
});

describe('bounds the contract gives every request string and integer', () => {
  it('an integer beyond what JavaScript and bigint hold exactly is 422, not stored as another number', async () => {
    const reply = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: 'ci', expires_at: 2 ** 53 + 2, scopes: ['*'] } });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'expires_at' });
  });

  it('an id longer than any id is 422 naming the field, not a 404 echoing it', async () => {
    const reply = await call(app.baseUrl, 'POST', '/v1/installs', { token: user.token, body: { product_id: `prd_${'x'.repeat(200)}`, region_id: 'fsn1' } });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'product_id' });
  });

  it('a path parameter over its maxLength is 422 (declared on every operation with path parameters)', async () => {
    const reply = await call(app.baseUrl, 'GET', `/v1/clusters/cl_${'x'.repeat(100)}`, { token: user.token });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'clusterId' });
  });
});

describe('Notification.type', () => {
  it('is an enum of exactly the types the server sends (each notify call is typed by it)', () => {
    const schemas = (contract.api.definition.components as { schemas: Record<string, { properties: Record<string, { enum: string[] }> }> }).schemas;
    const type = schemas.Notification?.properties.type as { enum: string[] };
    expect([...type.enum].sort()).toEqual([
      'cluster.failed',
      'cluster.running',
      'install.failed',
      'install.running',
      'machine.failed',
      'machine.provision_failed',
      'quota.reached',
      'suspension.failed',
      'suspension.resume_failed',
      'suspension.resumed',
      'token.expiring_soon',
      'webhook_endpoint.disabled',
    ]);
  });
});
