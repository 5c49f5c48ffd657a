// Builds the Koa application from its parts; main.ts serves it and tests call it in-process.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { OperationId } from '@platform/api-types';
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import Koa from 'koa';
import type { Kysely } from 'kysely';
import pino, { type Logger } from 'pino';
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import type { Database } from './db/schema.ts';
import { createAuthenticator } from './http/auth.ts';
import { readBody } from './http/body.ts';
import { loadContract, validateRequest } from './http/contract.ts';
import { devicePage } from './http/device-page.ts';
import { ApiError, validationError } from './http/errors.ts';
import { OAuthError } from './http/oauth.ts';
import { Router } from './http/router.ts';
import { handlers } from './operations/index.ts';
import { secretBox } from './services/secrets.ts';
import { defaultResolve, type Resolver } from './services/ssrf.ts';
import { apiRateLimiter } from './services/api-rate-limit.ts';
import { type Caller, callerKey, type HandlerEnv, type OperationInput } from './operations/types.ts';
import { rowOnlyStarter, type WorkflowStarter } from './workflows/engine.ts';
import { createComputeProvider } from './providers/index.ts';
import { SimulatedCloud } from './providers/simulated.ts';
import { LogTails } from './services/log-tails.ts';
import type { ClusterDriver, ComputeProvider } from './providers/types.ts';

export interface AppOptions {
  db: Kysely<Database>;
  config: Config;
  clock?: Clock;
  logger?: Logger;
  /** The key that seals write-only secrets (see services/secrets.ts). */
  secretsKey: Buffer;
  /** Starts workflows; default: rows only, for a worker process elsewhere to pick up. */
  workflows?: WorkflowStarter;
  /** The cloud provider and cluster driver; default: the simulated cloud on this database. */
  provider?: ComputeProvider;
  driver?: ClusterDriver;
  /** Aborted when the process begins to shut down (long-lived streams end). */
  shutdown?: AbortSignal;
  /** Resolves host names for the SSRF checks; default DNS (tests inject one, the machines have no public DNS). */
  resolveHost?: Resolver;
}

const JSON_CSP = "default-src 'none'; frame-ancestors 'none'";
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// Connection-level failures and PostgreSQL's "cannot connect now" class: the database is unreachable.
const DATABASE_DOWN_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006']);

function isDatabaseDown(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && DATABASE_DOWN_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect|connection error and is not queryable|Client was closed and is not queryable/.test(message);
}

/**
 * PostgreSQL text cannot hold U+0000: a NUL anywhere in a parameter or body string would fail the query (a 500).
 * It is the caller's error, so it is a 422 naming the field.
 */
function refuseNul(value: unknown, path: string): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw validationError(path || 'body', `${path || 'The body'} contains the NUL character (U+0000).`, 'Remove the NUL character.');
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => refuseNul(item, `${path}[${i}]`));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('\u0000')) throw validationError(path || 'body', `A property name in ${path || 'the body'} contains the NUL character (U+0000).`, 'Remove the NUL character.');
      refuseNul(item, path ? `${path}.${key}` : key);
    }
  }
}

async function docsHtml(): Promise<string> {
  const require = createRequire(import.meta.url);
  return readFile(require.resolve('@platform/docs/dist/index.html'), 'utf8');
}

/**
 * Writes a stream's chunks as they come, honouring backpressure; a client that reads nothing for `stallMs`
 * is dropped, so a stalled connection never buffers more than one chunk.
 */
async function writeStream(res: ServerResponse, stream: AsyncIterable<string>, stallMs: number, abort: AbortController): Promise<void> {
  const iterator = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done || res.destroyed) break;
      if (!res.write(next.value)) {
        const timer = new AbortController();
        const drained = await Promise.race([
          once(res, 'drain', { signal: timer.signal }).then(() => true, () => false),
          sleep(stallMs, undefined, { signal: timer.signal }).then(() => false, () => false),
        ]);
        timer.abort();
        if (!drained) {
          abort.abort();
          res.destroy();
          break;
        }
      }
    }
  } finally {
    await iterator.return?.();
    if (!res.destroyed) res.end();
  }
}

export async function createApp(options: AppOptions): Promise<Koa> {
  const { db, config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? pino({ level: config.logLevel, redact: ['req.headers.authorization'] });
  const contract = await loadContract();
  const router = new Router([...contract.operations.values()]);
  const authenticate = createAuthenticator(db, clock, config);
  const rateLimiter = apiRateLimiter(db, clock);
  const simulated = options.provider && options.driver ? undefined : new SimulatedCloud(db, clock);
  const driver = options.driver ?? (simulated as SimulatedCloud);
  const env: HandlerEnv = {
    db,
    clock,
    config,
    logger,
    secrets: secretBox(options.secretsKey),
    workflows: options.workflows ?? rowOnlyStarter(clock),
    provider: options.provider ?? createComputeProvider(config, { db, logger, simulated: simulated as SimulatedCloud }),
    driver,
    shutdown: options.shutdown ?? new AbortController().signal,
    logTails: new LogTails({ db, driver, pollMs: config.logPollMs }),
    resolveHost: options.resolveHost ?? defaultResolve,
  };
  const openapiJson = JSON.stringify(definition);
  const docs = await docsHtml().catch(() => undefined);

  const app = new Koa();
  app.proxy = false;
  app.silent = true;

  // Request id, one log line per request, and the contract's error body for everything that goes wrong.
  app.use(async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '')}`;
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const started = performance.now();
    try {
      await next();
    } catch (thrown) {
      let error: ApiError | OAuthError;
      if (thrown instanceof ApiError || thrown instanceof OAuthError) {
        error = thrown;
      } else if (isDatabaseDown(thrown)) {
        error = new ApiError(503, 'service_unavailable', 'The service is temporarily unavailable.', {
          suggestion: 'Retry after the number of seconds in Retry-After.',
          headers: { 'Retry-After': '5' },
        });
      } else {
        logger.error({ err: thrown, requestId }, 'unhandled error');
        error = new ApiError(500, 'internal_error', 'Something went wrong on our side.', {
          suggestion: 'Retry later; if it persists, contact support with the request id.',
          details: { request_id: requestId },
        });
      }
      ctx.status = error.status;
      if (error instanceof ApiError) ctx.set(error.headers);
      ctx.body = error.body();
    }
    logger.info({ requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) }, 'request');
  });

  // Security headers on every answer, errors included. The CSP suits JSON and event streams (nothing may load
  // or frame them); /docs drops it (its page runs inline scripts) and /device sends its own.
  const securityHeaders: Record<string, string> = {
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': JSON_CSP,
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-store',
  };
  if (config.hstsMaxAge > 0) securityHeaders['Strict-Transport-Security'] = `max-age=${config.hstsMaxAge}`;
  app.use(async (ctx, next) => {
    ctx.set(securityHeaders);
    await next();
  });

  app.use(async (ctx) => {
    if (ctx.method === 'GET' && ctx.path === '/openapi.json') {
      ctx.type = 'application/json';
      ctx.body = openapiJson;
      return;
    }
    if (ctx.method === 'GET' && (ctx.path === '/docs' || ctx.path === '/docs/') && docs) {
      ctx.type = 'text/html';
      ctx.set('Cache-Control', 'public, max-age=300');
      ctx.remove('Content-Security-Policy');
      ctx.body = docs;
      return;
    }
    if (ctx.method === 'GET' && ctx.path === '/device') {
      ctx.type = 'text/html';
      ctx.set(devicePage.headers);
      ctx.body = devicePage.html;
      return;
    }
    const rawPath = ctx.url.split('?')[0] ?? '/';
    const match = router.match(ctx.method, rawPath);
    if (match.kind === 'not_found') {
      throw new ApiError(404, 'not_found', `No endpoint ${ctx.method} ${ctx.path}.`, {
        suggestion: 'See /docs for the endpoints of this API; every path starts with /v1.',
      });
    }
    if (match.kind === 'method_not_allowed') {
      throw new ApiError(405, 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`, {
        suggestion: `Use one of: ${match.allow.join(', ')}.`,
        headers: { Allow: match.allow.join(', ') },
      });
    }
    const meta = contract.operations.get(match.operation.operationId);
    if (!meta) throw new Error(`no metadata for ${match.operation.operationId}`);

    // An operation scoped by X-Workspace-Id has the workspace looked up together with the token.
    const workspaceHeader = meta.headerNames.has('x-workspace-id') ? ctx.headers['x-workspace-id'] : undefined;
    const caller: Caller | undefined = meta.authenticated
      ? await authenticate(ctx.get('Authorization') || undefined, typeof workspaceHeader === 'string' ? workspaceHeader : undefined)
      : undefined;

    // The rate limit, before the body is read: per token (per user for JWTs), or per client address for the
    // operations without authentication (the device flow's first two steps). Every answer says where it stands.
    const limit = caller ? config.rateLimitPerMinute : config.rateLimitDevicePerMinute;
    if (limit > 0) {
      const key = caller ? callerKey(caller) : `ip:${ctx.ip}`;
      ctx.set(await rateLimiter.hit(key, { name: caller ? 'default' : 'device', limit }));
    }

    let body: unknown;
    let query: Record<string, unknown>;
    try {
      if (meta.hasJsonBody || meta.hasFormBody) body = await readBody(ctx, meta, config.bodyLimitBytes);
      query = validateRequest(contract, meta, { params: match.params, query: ctx.query, headers: ctx.headers, body });
      refuseNul({ ...match.params, ...query }, '');
      refuseNul(body, '');
    } catch (error) {
      // The device token endpoint answers even an unreadable request in the OAuth 2.0 error body.
      throw meta.oauthErrors ? OAuthError.fromRequestError(error) : error;
    }

    const headers: Record<string, string> = {};
    for (const [lower, name] of meta.headerNames) {
      const value = ctx.headers[lower];
      if (typeof value === 'string') headers[name] = value;
    }

    // Aborted when the client goes away before the response is complete (long-lived streams watch it).
    const abort = new AbortController();
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) abort.abort();
    });
    const input: OperationInput<OperationId> = {
      params: match.params as never,
      query: query as never,
      headers: headers as never,
      body: body as never,
      caller: caller as Caller,
      requestId: ctx.state.requestId as string,
      signal: abort.signal,
      // Koa's ctx.origin is the Origin header; this is the scheme and Host the request was sent to.
      origin: `${ctx.protocol}://${ctx.host || `${config.host}:${config.port}`}`,
    };
    const handler = handlers[meta.operationId] as (input: OperationInput<OperationId>, env: HandlerEnv) => Promise<{
      status: number;
      body?: unknown;
      stream?: AsyncIterable<string>;
      headers?: Record<string, string>;
    }>;
    const output = await handler(input, env);

    if (output.headers) ctx.set(output.headers);
    ctx.status = output.status;
    if (output.stream) {
      ctx.type = 'text/event-stream';
      ctx.set('Cache-Control', 'no-cache');
      ctx.set('X-Accel-Buffering', 'no');
      ctx.respond = false;
      ctx.res.writeHead(ctx.status, ctx.response.headers as Record<string, string>);
      // The client learns at once that its stream is open, not with the first line (which may be a while).
      ctx.res.flushHeaders();
      await writeStream(ctx.res, output.stream, config.streamStallMs, abort);
      return;
    }
    if (config.validateResponses && output.status !== 204) {
      const result = contract.api.validateResponse(output.body, meta.operation, output.status);
      if (!result.valid) {
        logger.error({ operationId: meta.operationId, errors: result.errors }, 'response breaks the contract');
        throw new Error(`Response of ${meta.operationId} breaks the contract: ${JSON.stringify(result.errors)}`);
      }
    }
    if (output.status !== 204) ctx.body = output.body;
  });

  return app;
}
