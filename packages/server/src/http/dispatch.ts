// The API itself: match the request to an operation of the contract, authenticate, count it against the rate
// limit, check the caller's role and workspace, read and validate its input, call the operation's handler (a change
// in one transaction with its audit event: audit.ts) and write its answer.
import type { OperationId } from '@platform/api-types';
import type { Context, Middleware } from 'koa';
import type { Config } from '../config.ts';
import { ApiError, OAuthError, unauthorized } from '../errors.ts';
import { handlers } from '../operations/index.ts';
import { type Caller, callerKey, type HandlerEnv, type OperationInput } from '../operations/types.ts';
import { type AccessChanges, accessChangesMadeHere } from '../services/access-changes.ts';
import type { apiRateLimiter } from '../services/api-rate-limit.ts';
import { metrics } from '../telemetry/metrics.ts';
import { detached } from '../telemetry/tracing.ts';
import { type AuditedRequest, auditLog, type Output } from './audit.ts';
import type { Authenticator } from './auth.ts';
import { createAuthorizer } from './authorize.ts';
import { type AnyHandler, bindHandler } from './bind-handler.ts';
import { readBody } from './body.ts';
import { clientAddress } from './client-address.ts';
import { type Contract, enforceDeclaredResponse, type OperationMeta, validateRequest } from './contract.ts';
import { writeStream } from './event-stream.ts';
import { checkRequestValue } from './input-checks.ts';
import { Router } from './router.ts';
import { checkScope } from './scopes.ts';
import { streamAccessCheck } from './stream-access.ts';
import { actingWorkspace, type WorkspaceSource, workspaceSourceOf } from './workspace.ts';

export interface DispatchParts {
  contract: Contract;
  authenticate: Authenticator;
  rateLimiter: ReturnType<typeof apiRateLimiter>;
  env: HandlerEnv;
  config: Config;
  /** Tells open streams at once that their caller's access changed; without it they check on their timer only. */
  accessChanges?: AccessChanges;
}

/** How many times a header (named in lower case) was sent. */
function fieldLines(rawHeaders: string[], name: string): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === name.length && rawHeaders[i]!.toLowerCase() === name) count++;
  return count;
}

export function dispatch({ contract, authenticate, rateLimiter, env, config, accessChanges }: DispatchParts): Middleware {
  const router = new Router([...contract.operations.values()]);
  const addressOf = clientAddress(config.trustProxy);
  const authorize = createAuthorizer(env.db, contract.operations.values());
  const audit = auditLog(env);
  // Per operation, read from the contract once: where its workspace comes from, and its handler as the binding
  // runs it (idempotency, the workspace held: bind-handler.ts).
  const bound = new Map<OperationId, { source: WorkspaceSource; handler: AnyHandler }>();
  for (const meta of contract.operations.values()) {
    const source = workspaceSourceOf(meta);
    bound.set(meta.operationId, { source, handler: bindHandler(meta, source, handlers[meta.operationId] as AnyHandler) });
  }

  /** The operation the request names; 404 and 405 (with Allow) otherwise. */
  function route(ctx: Context): { meta: OperationMeta; params: Record<string, string> } {
    const match = router.match(ctx.method, ctx.url.split('?')[0] ?? '/');
    if (match.kind === 'not_found') {
      throw new ApiError('not_found', `No endpoint ${ctx.method} ${ctx.path}.`, {
        suggestion: 'See /docs for the endpoints of this API; every path starts with /v1.',
      });
    }
    if (match.kind === 'undecodable') {
      throw new ApiError('bad_request', `The path parameter ${match.param} is not percent-encoded UTF-8.`, {
        param: match.param,
        suggestion: 'Percent-encode the value as UTF-8 bytes (encodeURIComponent does).',
      });
    }
    if (match.kind === 'method_not_allowed') {
      throw new ApiError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`, {
        suggestion: `Use one of: ${match.allow.join(', ')}.`,
        headers: { Allow: match.allow.join(', ') },
      });
    }
    const meta = contract.operations.get(match.operation.operationId);
    if (!meta) throw new Error(`no metadata for ${match.operation.operationId}`);
    // Every answer of a deprecated operation says so, its errors too (http/deprecation.ts); so does every answer to
    // a request that sends a deprecated parameter (the operation's headers win).
    if (meta.deprecation) ctx.set(meta.deprecation);
    else for (const [sent, announced] of meta.deprecatedParameters) if (ctx.query[sent] !== undefined || ctx.headers[sent] !== undefined) ctx.set(announced);
    // For the declared-responses check (with VALIDATE_RESPONSES), which runs once the answer is made.
    ctx.state.operation = meta;
    return { meta, params: match.params };
  }

  /** The X-Workspace-Id of an operation that takes one, as sent. */
  const workspaceHeaderOf = (ctx: Context, meta: OperationMeta): string | undefined => {
    const value = meta.headerNames.has('x-workspace-id') ? ctx.headers['x-workspace-id'] : undefined;
    return typeof value === 'string' ? value : undefined;
  };

  /** Who calls; an operation scoped by X-Workspace-Id has the workspace looked up together with the token. */
  function authenticateFor(ctx: Context, meta: OperationMeta, fresh = false): Promise<Caller> | undefined {
    if (!meta.authenticated) return undefined;
    // Node keeps the first of two Authorization headers; a proxy may have read the other. Two credentials in one
    // request are ambiguous (RFC 6750 §3.1's invalid_request), so neither is taken.
    if (fieldLines(ctx.req.rawHeaders, 'authorization') > 1) {
      throw unauthorized('The request carries more than one Authorization header.', 'Send one Authorization header, with one token.');
    }
    return authenticate(
      ctx.get('Authorization') || undefined,
      workspaceHeaderOf(ctx, meta),
      { address: addressOf(ctx.req), userAgent: ctx.get('User-Agent') || undefined },
      fresh,
    );
  }

  /**
   * The rate limit, before the body is read: per user (all their tokens together), or per client address for the
   * operations without authentication (the device flow's first two steps). Every answer says where it stands.
   */
  async function countRequest(ctx: Context, caller: Caller | undefined): Promise<void> {
    const limit = caller ? config.rateLimitPerMinute : config.rateLimitDevicePerMinute;
    if (limit <= 0) return;
    const key = caller ? callerKey(caller) : `ip:${addressOf(ctx.req)}`;
    ctx.set(await rateLimiter.hit(key, { name: caller ? 'default' : 'device', limit }));
  }

  /** Body, query and declared headers, validated against the contract. */
  async function readInput(ctx: Context, meta: OperationMeta, params: Record<string, string>) {
    let body: unknown;
    let query: Record<string, unknown>;
    try {
      // Operations that need no token take only small bodies: nobody unknown can make the server hold a large one.
      const limit = meta.authenticated ? config.bodyLimitBytes : config.unauthenticatedBodyLimitBytes;
      body = await readBody(ctx, meta, limit);
      // Before the schemas: an integer the body's JSON cannot hold exactly is named as such, not as a wrong type.
      checkRequestValue(body);
      query = validateRequest(contract, meta, { params, query: ctx.query, headers: ctx.headers, body });
      checkRequestValue({ ...params, ...query });
    } catch (error) {
      // The device token endpoint answers even an unreadable request in the OAuth 2.0 error body.
      throw meta.oauthErrors ? OAuthError.fromRequestError(error) : error;
    }
    const headers: Record<string, string> = {};
    for (const [lower, name] of meta.headerNames) {
      const value = ctx.headers[lower];
      if (typeof value === 'string') headers[name] = value;
    }
    return { body, query, headers };
  }

  async function respond(ctx: Context, meta: OperationMeta, caller: Caller | undefined, output: Output, abort: AbortController): Promise<void> {
    if (output.headers) ctx.set(output.headers);
    ctx.status = output.status;
    if (output.stream) {
      if (!caller || output.workspaceId === undefined) throw new Error(`${meta.operationId}: a stream needs a caller and its workspace`);
      const guard = {
        // Read afresh: the periodic check also finds what no announcement told of.
        check: streamAccessCheck(env.db, meta, output.workspaceId, () => authenticateFor(ctx, meta, true)!),
        intervalMs: config.streamReauthSeconds * 1000,
        watch: (changed: () => void) => accessChanges?.watch(caller.userId, changed) ?? (() => {}),
      };
      ctx.type = 'text/event-stream';
      ctx.set('Cache-Control', 'no-cache');
      ctx.set('X-Accel-Buffering', 'no');
      // A stream's head is checked before it is sent (declared-responses.ts checks every other answer).
      if (config.validateResponses && !enforceDeclaredResponse(contract, ctx)) return;
      ctx.respond = false;
      ctx.res.writeHead(ctx.status, ctx.response.headers as Record<string, string>);
      // The client learns at once that its stream is open, not with the first line (which may be a while).
      ctx.res.flushHeaders();
      const open = metrics?.streamsOpen.labels({ stream: meta.operationId });
      open?.inc();
      try {
        // The request's span covers the stream; its polls and checks, for as long as it is open, make no spans of it.
        await detached(() => writeStream(ctx.res, output.stream!, config.streamStallMs, abort, guard));
      } finally {
        open?.dec();
      }
      return;
    }
    if (output.status !== 204) ctx.body = output.body;
  }

  return async (ctx) => {
    const { meta, params } = route(ctx);
    const caller = await authenticateFor(ctx, meta);
    const audited: AuditedRequest | undefined =
      meta.audit && caller ? { meta, params, caller, requestId: ctx.state.requestId as string, clientAddress: addressOf(ctx.req) } : undefined;
    try {
      await serve(ctx, meta, params, caller, audited);
    } catch (error) {
      if (audited) await audit.refused(audited, error);
      throw error;
    }
  };

  async function serve(ctx: Context, meta: OperationMeta, params: Record<string, string>, caller: Caller | undefined, audited: AuditedRequest | undefined) {
    checkScope(meta, caller);
    await countRequest(ctx, caller);
    // Where the request acts, before what it asks: a caller who may not act in the workspace is told so (403, or 404
    // for a workspace in the path), not what else is wrong with the request.
    const workspaceHeader = workspaceHeaderOf(ctx, meta);
    // The path's values reach the database in these look-ups: what no column may hold (a NUL) is refused first.
    checkRequestValue(params);
    let roleWorkspaceId: string | undefined;
    await authorize(meta, params, caller, workspaceHeader, (membership) => {
      roleWorkspaceId = membership.workspaceId;
      if (audited) audited.membership = membership;
    });
    const { source, handler } = bound.get(meta.operationId)!;
    const workspace = caller && (await actingWorkspace(env.db, source, caller, workspaceHeader));
    const { body, query, headers } = await readInput(ctx, meta, params);
    // Aborted when the client goes away before the response is complete (long-lived streams watch it).
    const abort = new AbortController();
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) abort.abort();
    });
    const input: OperationInput<OperationId> = {
      params: params as never,
      query: query as never,
      headers: headers as never,
      body: body as never,
      caller: caller as Caller,
      workspace,
      roleWorkspaceId,
      requestId: ctx.state.requestId as string,
      signal: abort.signal,
      // Koa's ctx.origin is the Origin header; this is the scheme and Host the request was sent to.
      origin: `${ctx.protocol}://${ctx.host || `${config.host}:${config.port}`}`,
    };
    const changesBefore = accessChangesMadeHere();
    const output = audited ? await audit.run(audited, handler, input) : await handler(input, env);
    // A change of access made here is heard before it is answered: the caller's next request meets it, not what
    // was kept of the access before it (services/access-cache.ts).
    if (accessChanges && accessChangesMadeHere() !== changesBefore) await accessChanges.heard();
    await respond(ctx, meta, caller, output, abort);
  }
}
