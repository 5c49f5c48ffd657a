// A connection reset before any answer, on a real loopback socket (the other tests inject fetch): what a client
// meets when a server or balancer closes a keep-alive connection just as the request goes out. The request may not
// have been processed, so the client sends it again only where a repeat is safe: a GET, or a POST with an
// idempotency key (createInstall makes one).
import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createPlatformClient, PlatformNetworkError } from '../src/index.ts';
import { rejection, token } from './support.ts';

const install = { id: 'ins_1', status: 'pending' };

/** A server that resets the first `resets` connections once a request arrives on them, then answers `body`. */
async function resettingServer(resets: number, body: unknown) {
  const requests: string[] = [];
  const server = createServer((socket: Socket) => {
    socket.once('data', (chunk) => {
      requests.push(chunk.toString('latin1').split('\r\n')[0] ?? '');
      if (requests.length <= resets) {
        socket.resetAndDestroy();
        return;
      }
      const json = JSON.stringify(body);
      socket.end(`HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\nConnection: close\r\n\r\n${json}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { baseUrl: `http://127.0.0.1:${port}`, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

const client = (baseUrl: string) => createPlatformClient({ baseUrl, token, retry: { sleep: async () => {}, random: () => 0.5 } });

describe('a connection reset before any answer', () => {
  it('is sent again when it carries an idempotency key (createInstall makes one)', async () => {
    const server = await resettingServer(1, install);
    close = server.close;
    await expect(client(server.baseUrl).POST('/v1/installs', { body: { product_id: 'prd_1', region_id: 'fsn1' } })).resolves.toEqual(install);
    expect(server.requests).toEqual(['POST /v1/installs HTTP/1.1', 'POST /v1/installs HTTP/1.1']);
  });

  it('is not sent again without a key: the caller learns the request may or may not have been processed', async () => {
    const server = await resettingServer(1, { id: 'tok_1' });
    close = server.close;
    const error = await rejection(client(server.baseUrl).POST('/v1/user/tokens', { body: { name: 'ci', scopes: ['*'] } }));
    expect(error).toBeInstanceOf(PlatformNetworkError);
    expect((error as Error).message).toMatch(/^POST http:\/\/127\.0\.0\.1:\d+\/v1\/user\/tokens failed: /);
    expect(server.requests).toHaveLength(1);
  });
});
