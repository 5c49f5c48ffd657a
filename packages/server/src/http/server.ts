// The HTTP server around the app: bounds on what a connection may hold, the contract's error body for what
// Node's own parser refuses, and a drain that answers rather than resets.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from '../config.ts';

export type HttpLimits = Pick<Config, 'headersTimeoutMs' | 'bodyTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections'>;

export interface HttpServer {
  server: Server;
  listen(port: number, host: string): Promise<AddressInfo>;
  /**
   * Stops taking work: requests that arrive from now on (including ones already queued on the socket) are answered
   * 503 with `Connection: close` and `Retry-After`, never reset; resolves when the requests in flight have ended
   * (or `graceMs` has passed and they were cut) and the listener is closed.
   */
  drain(graceMs: number): Promise<void>;
}

/** How long the listener stays open after the last request in flight, answering newcomers 503. */
const DRAIN_LINGER_MS = 200;

const errorJson = (code: string, message: string, suggestion: string, requestId: string) =>
  JSON.stringify({ error: { code, message, suggestion, details: { request_id: requestId } } });

/** Node's parser refused the request before the app saw it: answer in the contract's error body anyway. */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'The request line and headers are larger than the server accepts (16 KB).']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'The request was not received in time.']
        : [400, 'Bad Request', 'The request is not valid HTTP/1.1.'];
  const requestId = `req_${randomUUID().replaceAll('-', '')}`;
  const body = errorJson('bad_request', message, 'Send a well-formed request with shorter headers and URL, in one go.', requestId);
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** 503 before the app runs (starting) or after it stopped taking requests (shutting down), closing the connection. */
export function answerUnavailable(res: ServerResponse, message: string): void {
  const requestId = `req_${randomUUID().replaceAll('-', '')}`;
  const body = errorJson('service_unavailable', message, 'Retry after the number of seconds in Retry-After; another server will answer.', requestId);
  res.shouldKeepAlive = false;
  res.writeHead(503, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    'Retry-After': '1',
    Connection: 'close',
    'X-Request-Id': requestId,
    'Cache-Control': 'no-store',
  });
  res.end(body);
}

export function createHttpServer(handler: RequestListener, limits: HttpLimits): HttpServer {
  let draining = false;
  let inFlight = 0;
  let idle: (() => void) | undefined;
  // Node looks for connections past their timeouts every connectionsCheckingInterval (30 s by default, which
  // would let a stalled client keep its connection up to 30 s past the bound).
  const server = createServer({ connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs) }, (req: IncomingMessage, res: ServerResponse) => {
    if (draining) {
      answerUnavailable(res, 'The server is shutting down.');
      return;
    }
    inFlight++;
    res.once('close', () => {
      inFlight--;
      if (inFlight === 0) idle?.();
    });
    handler(req, res);
  });
  // A request's headers, and then its whole body, must arrive within these bounds: a client that trickles a body
  // cannot hold a connection and its buffer for minutes.
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.bodyTimeoutMs;
  // Node closes an idle keep-alive connection after 5 s by default: a client (or a load balancer keeping its own
  // pool) that sends on it as it closes sees a reset. Idle connections stay longer than balancers keep theirs, and
  // Node announces the bound in `Keep-Alive: timeout=` so a client's pool retires them first.
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  server.on('clientError', answerClientError);

  return {
    server,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      }),
    drain: (graceMs) =>
      new Promise<void>((resolve) => {
        draining = true;
        const close = () => {
          idle = undefined;
          // Closes the listener and the idle keep-alive connections; resolves when the last connection has gone.
          server.close(() => resolve());
        };
        // In flight past the grace period: cut.
        setTimeout(() => {
          close();
          server.closeAllConnections();
        }, graceMs).unref();
        // Connections the kernel queued before the listener closes are still accepted and answered 503 meanwhile.
        idle = () => setTimeout(close, DRAIN_LINGER_MS).unref();
        if (inFlight === 0) idle();
      }),
  };
}
