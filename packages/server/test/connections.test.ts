// What a connection may hold and what it gets back when HTTP itself goes wrong: bounded header and body read
// times, a small body limit where no token is needed, answers in the contract's error body (with X-Request-Id)
// to what Node's parser refuses, browsers from listed origins only (CORS), and a drain that answers 503 instead
// of resetting. Raw sockets where a client library would hide what is on the wire.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createHttpServer } from '../src/http/server.ts';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

let alice: TestUser;

const app = useTestServer({
  env: {
    HEADERS_TIMEOUT_SECONDS: '1',
    BODY_TIMEOUT_SECONDS: '1',
    CORS_ORIGINS: 'https://app.example.com,http://localhost:5173',
  },
});
const { clock } = app;

beforeAll(async () => {
  alice = await newUser(app.db, clock);
});

/** Writes `text` on a raw connection and resolves with everything the server sends until it closes. */
async function raw(baseUrl: string, write: (socket: Socket) => void | Promise<void>): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString('utf8');
  });
  const closed = once(socket, 'close');
  await write(socket);
  await closed;
  return received;
}

const statusOf = (response: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

describe('what Node’s parser refuses gets the contract’s error body and a request id', () => {
  it.each([
    ['a malformed request line → 400', 'GARBAGE\r\n\r\n', 400],
    ['headers larger than 16 KB → 431', `GET /v1/regions HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ['a URL larger than 16 KB → 431', `GET /v1/clusters/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
  ])('%s', async (_what, request, status) => {
    const response = await raw(app.baseUrl, (socket) => void socket.write(request));
    expect(statusOf(response)).toBe(status);
    expect(response).toMatch(/\r\nX-Request-Id: req_[0-9a-f]{32}\r\n/i);
    expect(bodyOf(response).error).toMatchObject({ code: 'bad_request', message: expect.any(String) });
  });
});

describe('read time bounds (HEADERS_TIMEOUT_SECONDS, BODY_TIMEOUT_SECONDS)', () => {
  it('a client that stalls in its headers is answered 408 and disconnected', async () => {
    const started = Date.now();
    const response = await raw(app.baseUrl, (socket) => void socket.write('POST /v1/clusters HTTP/1.1\r\nHost: x\r\n'));
    expect(statusOf(response)).toBe(408);
    expect(bodyOf(response).error.code).toBe('bad_request');
    expect(Date.now() - started).toBeLessThan(10_000);
  });
  it('a client that stalls half-way through its body is answered 408 and disconnected', async () => {
    const started = Date.now();
    const body = JSON.stringify({ name: 'stalled', region_id: 'fsn1' });
    const response = await raw(
      app.baseUrl,
      (socket) =>
        void socket.write(
          `POST /v1/clusters HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
        ),
    );
    expect(statusOf(response)).toBe(408);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
  it('defaults: 10 s for headers, 30 s for the whole request', () => {
    expect(loadConfig({})).toMatchObject({ headersTimeoutMs: 10_000, bodyTimeoutMs: 30_000, maxConnections: 10_000, unauthenticatedBodyLimitBytes: 8192 });
  });
});

describe('operations that need no token take small bodies only', () => {
  it('the device code endpoint refuses 9 KB with 413 (an authenticated operation takes it)', async () => {
    const big = `client_id=cli&scope=${'a'.repeat(9_000)}`;
    const reply = await call(app.baseUrl, 'POST', '/v1/auth/device/code', { body: big, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(reply.status).toBe(413);
    expect(reply.body.error.code).toBe('payload_too_large');
  });
});

describe('CORS for the origins in CORS_ORIGINS', () => {
  const preflight = (origin: string) =>
    fetch(`${app.baseUrl}/v1/clusters`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
  it('answers a listed origin’s preflight 204 with what it may send', async () => {
    const response = await preflight('https://app.example.com');
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(response.headers.get('access-control-allow-methods')).toContain('POST');
    expect(response.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    expect(response.headers.get('vary')).toContain('Origin');
  });
  it('lets a listed origin read answers, errors included, and their request id', async () => {
    const ok = await fetch(`${app.baseUrl}/v1/workspaces`, { headers: { origin: 'http://localhost:5173', authorization: `Bearer ${alice.token}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(ok.headers.get('access-control-expose-headers')).toContain('X-Request-Id');
    const denied = await fetch(`${app.baseUrl}/v1/workspaces`, { headers: { origin: 'http://localhost:5173' } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
  });
  it('refuses another origin’s preflight (403 in the error body) and gives its requests no CORS headers', async () => {
    const response = await preflight('https://evil.example');
    expect(response.status).toBe(403);
    expect((await response.json()).error).toMatchObject({ code: 'forbidden', param: 'Origin' });
    const plain = await fetch(`${app.baseUrl}/v1/regions`, { headers: { origin: 'https://evil.example', authorization: `Bearer ${alice.token}` } });
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
  });
  it('no origin is listed by default', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://app.example.com/' })).toThrow(/CORS_ORIGINS/);
  });
});

describe('idle keep-alive connections (KEEP_ALIVE_TIMEOUT_SECONDS)', () => {
  it('stay open longer than the idle timeout of a load balancer in front, and say so in Keep-Alive', async () => {
    const { hostname, port } = new URL(app.baseUrl);
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
    });
    let closed = false;
    socket.on('close', () => {
      closed = true;
    });
    const answered = async (count: number) => {
      for (let waited = 0; (received.match(/\r\n\r\n\{"status":"ok"\}/g) ?? []).length < count; waited += 20) {
        if (waited > 5_000) throw new Error(`no answer ${count}; received: ${received}`);
        await sleep(20);
      }
    };
    try {
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await answered(1);
      expect(received).toMatch(/\r\nKeep-Alive: timeout=75\r\n/i);
      // Past Node's own 5 s, which closed the connection as a client (or a balancer's pool) sent on it: a reset.
      await sleep(6_000);
      expect(closed).toBe(false);
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await answered(2);
      expect(statusOf(received.slice(received.lastIndexOf('HTTP/1.1 ')))).toBe(200);
    } finally {
      socket.destroy();
    }
  });
  it('defaults to 75 s, past the 60 s most load balancers keep an idle connection', () => {
    expect(loadConfig({}).keepAliveTimeoutMs).toBe(75_000);
    expect(() => loadConfig({ KEEP_ALIVE_TIMEOUT_SECONDS: '0' })).toThrow(/KEEP_ALIVE_TIMEOUT_SECONDS/);
  });
});

describe('drain', () => {
  it('finishes the requests in flight, answers newcomers 503 with Connection: close and Retry-After, resets nothing', async () => {
    const { listen, drain } = createHttpServer(
      async (_req, res) => {
        await sleep(300);
        res.writeHead(200, { 'content-type': 'text/plain' }).end('done');
      },
      { headersTimeoutMs: 5_000, bodyTimeoutMs: 5_000, keepAliveTimeoutMs: 5_000, maxConnections: 100 },
    );
    const { port } = await listen(0, '127.0.0.1');
    const url = `http://127.0.0.1:${port}/`;
    const inFlight = fetch(url).then(async (r) => [r.status, await r.text()] as const);
    await sleep(50);
    const drained = drain(5_000);
    // A request that arrives once the drain began, on a new connection: answered, not reset.
    const late = await raw(url, (socket) => void socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect(statusOf(late)).toBe(503);
    expect(late).toMatch(/\r\nConnection: close\r\n/i);
    expect(late).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(bodyOf(late).error.code).toBe('service_unavailable');
    expect(await inFlight).toEqual([200, 'done']);
    await drained;
  });
});
