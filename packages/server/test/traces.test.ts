// OpenTelemetry traces as an operator turns them on (the OTEL_* variables), received by an OTLP/HTTP receiver
// of the test's own: one createInstall's tree, from the caller's traceparent through the request's SQL to the
// install workflow's steps (run later by the workers, joined through the workflow's row) and their provider calls,
// and the webhook delivery of the event a step recorded.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPlatformClient } from '@platform/client';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { startTracing, type Tracing } from '../src/telemetry/sdk.ts';
import { runningCluster } from './fixtures.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './support/otlp-receiver.ts';
import { call, eventually, newUser, SIMULATED_WORKFLOWS_ENV, serverLogger, type TestUser, useTestServer, workersSettled } from './support.ts';

let receiver: OtlpReceiver;
let tracer: Tracing;
const logged: string[] = [];
const hooks = createServer((_req, res) => res.writeHead(204).end());

// Before the server starts: its pools' connections are made with the statement spans on.
beforeAll(async () => {
  receiver = await startOtlpReceiver();
  const env = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'platform-test' };
  Object.assign(process.env, env);
  tracer = startTracing(loadConfig(env).tracing!);
  await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await tracer.shutdown();
  await receiver.close();
  await new Promise((resolve) => hooks.close(resolve));
});

const app = useTestServer({
  env: { ...SIMULATED_WORKFLOWS_ENV, WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true' },
  parts: { logger: serverLogger((line) => logged.push(line)) },
  runtime: { tickMs: 20, orphanAfterSeconds: 1, webhooks: true },
});

/** The caller's own span: the request's span is its child. */
const callerTrace = randomBytes(16).toString('hex');
const callerSpan = randomBytes(8).toString('hex');

describe('a createInstall traced from its caller', () => {
  let spans: ReceivedSpan[] = [];
  let installId = '';
  let user: TestUser;

  beforeAll(async () => {
    user = await newUser(app.db, app.clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
    const cluster = await runningCluster(app, user, 'traced');
    const hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
    await api.POST('/v1/webhook_endpoints', { body: { url: hookUrl, event_types: ['install.running'] } });
    const product = await api.POST('/v1/products', {
      body: {
        name: 'Traced shop',
        cluster_ids: [cluster.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' } }],
      },
    });
    const created = await call(app.baseUrl, 'POST', '/v1/installs', {
      token: user.token,
      body: { product_id: product.id, region_id: 'fsn1' },
      headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` },
    });
    expect(created.status).toBe(202);
    installId = created.body.id;
    await workersSettled(app.db, app.clock);
    app.clock.advance(8);
    await eventually(
      () => api.GET('/v1/installs/{id}', { params: { path: { id: installId } } }),
      (i) => i.status === 'running',
      'the install to run',
    );
    await eventually(
      async () => {
        await tracer.flush();
        return receiver.spans.filter((s) => s.traceId === callerTrace);
      },
      // The delivery may end before the step that recorded its event does: both are waited for.
      (traced) => traced.some((s) => s.name === 'webhook delivery' && traced.some((parent) => parent.spanId === s.parentSpanId)),
      'the delivery span and its parent to be exported',
    );
    spans = receiver.spans.filter((s) => s.traceId === callerTrace);
  });

  const named = (name: string) => spans.filter((s) => s.name === name);
  const childrenOf = (span: ReceivedSpan) => spans.filter((s) => s.parentSpanId === span.spanId);

  it("is exported as OTLP/HTTP protobuf with the service's name", () => {
    expect(receiver.contentTypes).toContain('application/x-protobuf');
    expect(spans[0]?.resource['service.name']).toBe('platform-test');
  });

  it("makes the request a server span named by its operationId, a child of the caller's traceparent", () => {
    const [request] = named('createInstall');
    expect(request, `spans of the trace: ${spans.map((s) => s.name).join(', ')}`).toBeDefined();
    expect(request).toMatchObject({ parentSpanId: callerSpan, kind: 2 });
    expect(request!.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 202, 'http.route': '/v1/installs' });
  });

  it('puts the SQL the request ran under it, as statement text without the values', () => {
    const request = named('createInstall')[0]!;
    const sql = childrenOf(request).filter((s) => s.attributes['db.system.name'] === 'postgresql');
    const insert = sql.find((s) => /^insert into "installs"/i.test(String(s.attributes['db.query.text'])));
    expect(insert, `statements: ${sql.map((s) => s.attributes['db.query.text']).join('\n')}`).toMatchObject({ name: 'INSERT', kind: 3 });
    expect(String(insert!.attributes['db.query.text'])).toMatch(/\$1/);
    for (const statement of sql) expect(String(statement.attributes['db.query.text'])).not.toContain(installId);
    expect(sql.map((s) => s.name)).toEqual(expect.arrayContaining(['BEGIN', 'COMMIT']));
  });

  it("makes each step of the install's workflow a child of the request, and its provider calls children of the step", () => {
    const request = named('createInstall')[0]!;
    const steps = spans.filter((s) => s.attributes['workflow.kind'] === 'createInstall');
    expect(steps.map((s) => s.attributes['workflow.step'])).toEqual(expect.arrayContaining(['start', 'release', 'await']));
    for (const step of steps) expect(step.parentSpanId, step.name).toBe(request.spanId);
    const release = steps.find((s) => s.attributes['workflow.step'] === 'release')!;
    const calls = childrenOf(release).filter((s) => s.attributes['platform.provider'] !== undefined);
    expect(calls.map((s) => s.name)).toContain('simulated upsertRelease');
    expect(calls.every((s) => s.kind === 3)).toBe(true);
    // A step's own statements are its children too.
    expect(childrenOf(release).some((s) => s.attributes['db.system.name'] === 'postgresql')).toBe(true);
  });

  it('makes the webhook delivery of the event a step recorded a child of that step', () => {
    const [delivery] = named('webhook delivery');
    const parent = spans.find((s) => s.spanId === delivery!.parentSpanId);
    expect(parent?.attributes['workflow.kind']).toBe('createInstall');
    expect(delivery!.attributes).toMatchObject({ 'webhook.outcome': 'succeeded', 'http.response.status_code': 204 });
  });

  it("leaves the log tail's polls, shared with later followers, out of the trace of the stream that started them", async () => {
    const trace = randomBytes(16).toString('hex');
    const stream = new AbortController();
    const response = await fetch(`${app.baseUrl}/v1/installs/${installId}/logs`, {
      headers: { authorization: `Bearer ${user.token}`, accept: 'text/event-stream', traceparent: `00-${trace}-${randomBytes(8).toString('hex')}-01` },
      signal: stream.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    await reader.read();
    // The tail polls the cluster every 50 ms (LOG_POLL_MS): ten polls and more while the stream is open.
    await new Promise((resolve) => setTimeout(resolve, 500));
    stream.abort();
    await reader.read().catch(() => {});
    const traced = await eventually(
      async () => {
        await tracer.flush();
        return receiver.spans.filter((s) => s.traceId === trace);
      },
      (found) => found.some((s) => s.name === 'streamInstallLogs'),
      'the stream request span',
    );
    const polls = traced.filter((s) => String(s.attributes['db.query.text']).includes('simulated_cloud'));
    expect(polls.length, traced.map((s) => s.name).join(', ')).toBeLessThan(3);
  });

  it("writes the trace id in the request's access log line", () => {
    const line = logged
      .map((l) => JSON.parse(l) as { msg: string; path?: string; traceId?: string })
      .find((l) => l.msg === 'request' && l.path === '/v1/installs');
    expect(line?.traceId).toBe(callerTrace);
  });
});

describe('an unexpected failure of a traced request', () => {
  /** GET /v1/regions while its table is away: a query that fails, not an outage, so a bare 500. */
  async function failingRequest(traceparent: string) {
    const user = await newUser(app.db, app.clock);
    await sql`ALTER TABLE regions RENAME TO regions_away`.execute(app.db);
    try {
      return await call(app.baseUrl, 'GET', '/v1/regions', { token: user.token, headers: { traceparent } });
    } finally {
      await sql`ALTER TABLE regions_away RENAME TO regions`.execute(app.db);
    }
  }

  it("names the request's trace in the 500's details, beside its request id, and marks its span failed", async () => {
    const trace = randomBytes(16).toString('hex');
    const reply = await failingRequest(`00-${trace}-${randomBytes(8).toString('hex')}-01`);
    expect(reply.status).toBe(500);
    expect(reply.body.error.details).toEqual({ request_id: reply.headers.get('x-request-id'), trace_id: trace });
    const span = await eventually(
      async () => {
        await tracer.flush();
        return receiver.spans.find((s) => s.traceId === trace && s.kind === 2);
      },
      (found) => found !== undefined,
      'the failed request span',
    );
    expect(span).toMatchObject({ name: 'listRegions', statusCode: 2 });
    // The statement that failed is a failed span of its own, under the request's.
    expect(receiver.spans.find((s) => s.traceId === trace && s.parentSpanId === span!.spanId && s.statusCode === 2)?.name).toBe('SELECT');
  });

  it('names no trace where the caller did not sample the request', async () => {
    const reply = await failingRequest(`00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-00`);
    expect(reply.status).toBe(500);
    expect(reply.body.error.details).toEqual({ request_id: reply.headers.get('x-request-id') });
  });
});
