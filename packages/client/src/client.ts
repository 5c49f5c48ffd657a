// createPlatformClient: openapi-fetch's methods, typed by the generated `paths`, that resolve to the success
// body and reject with a PlatformError; one method per operationId (generated in operations.ts) over the same
// calls; plus paginate(), streamInstallLogs() and streamEvents().
import type { Schema } from '@platform/api-types';
import { type DeprecationHandler, warnOnConsole } from './deprecation.ts';
import { PlatformError } from './errors.ts';
import { type EventStreamOptions, streamEvents } from './events.ts';
import { type InstallId, type LogEvent, type LogStreamOptions, streamLogs } from './logs.ts';
import { type OperationRoute, operationRoutes, type PlatformOperations } from './operations.ts';
import { type RetryOptions, retryPolicy } from './retry.ts';
import { createTransport, type HttpMethod, type LooseInit } from './transport.ts';
import type {
  CallInit,
  CallMethod,
  IdempotentOperations,
  InitArgs,
  JsonGetPaths,
  ListItem,
  ListOperationItem,
  ListOperations,
  ListPaths,
  OperationArgs,
  OperationOf,
} from './types.ts';

export interface PlatformClientOptions {
  /** The service's base address, e.g. `http://127.0.0.1:4010` (the mock) or `https://api.platform.example`. */
  baseUrl: string;
  /**
   * Sent as `Authorization: Bearer <token>`: a PAT (`svc_pat_…`), a session token or an OAuth2 JWT. Omit it
   * only for the device sign-in calls (`requestDeviceCode`, `pollDeviceToken`), which take none.
   */
  token?: string | undefined;
  /** Sent as `X-Workspace-Id` on every call; a call's own `workspaceId` overrides it. */
  workspaceId?: string | undefined;
  /** The fetch to use (tests inject one). Default: the global fetch, looked up at call time. */
  fetch?: (input: Request) => Promise<Response>;
  /** Retry policy, or `false` for a single attempt (and no log stream reconnection). */
  retry?: RetryOptions | false;
  /** Time limit in milliseconds of each attempt; 0 disables it. Default 30 000. */
  timeoutMs?: number;
  /**
   * Told once per process for each deprecated operation the service answers (its `Deprecation`, `Sunset` and
   * `Link` headers). Default: a warning on the console.
   */
  onDeprecation?: DeprecationHandler;
}

/**
 * The client: one method per operationId (`listClusters({ limit })`, `getCluster({ clusterId })`,
 * `createInstall({ body })`), and openapi-fetch's path-based methods (`GET('/v1/clusters', …)`) beside them.
 */
export interface PlatformClient extends PlatformOperations {
  /** Calls a GET operation. The log stream is not among the paths: read it with `streamInstallLogs`. */
  GET: CallMethod<'get', JsonGetPaths>;
  /** Calls a POST operation; retried only when it carries an `idempotency-key`. */
  POST: CallMethod<'post'>;
  /** Calls a PATCH operation; retried only when it carries an `idempotency-key`. */
  PATCH: CallMethod<'patch'>;
  /** Calls a DELETE operation; resolves to `undefined` on 204. */
  DELETE: CallMethod<'delete'>;
  /**
   * Every record of a list operation, page after page, following `pagination.cursor` until `has_more` is false.
   * A `cursor` in the query starts after it; `limit` sets the page size.
   */
  paginate<Id extends ListOperations>(operationId: Id, ...args: OperationArgs<Id>): AsyncGenerator<ListOperationItem<Id>, void, undefined>;
  paginate<P extends ListPaths>(path: P, ...init: InitArgs<CallInit<OperationOf<P, 'get'>>>): AsyncGenerator<ListItem<P>, void, undefined>;
  /**
   * The install's log stream: `log` events, then one `end` event, after which the iteration is done. A dropped
   * connection is resumed with `Last-Event-ID` (governed by the retry policy).
   */
  streamInstallLogs(id: InstallId, options?: LogStreamOptions): AsyncGenerator<LogEvent, void, undefined>;
  /**
   * The workspace's events, oldest first, then each new one as it is recorded; the iteration goes on until the
   * caller stops it (`break`, or `signal`). A dropped connection is resumed with `Last-Event-ID`.
   */
  streamEvents(options?: EventStreamOptions): AsyncGenerator<Schema<'Event'>, void, undefined>;
}

// Operations whose contract declares `idempotency-key`: the client makes one up when the caller gives none, so
// that their retries are safe. `satisfies` ties the list to the contract: a new one fails the type check.
const generatesIdempotencyKey = { 'POST /v1/installs': true, 'PATCH /v1/installs/{id}': true } satisfies Record<IdempotentOperations, true>;
const autoKeyOperations = new Set<string>(Object.keys(generatesIdempotencyKey));

export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const retry = retryPolicy(options.retry);
  const send = createTransport({
    baseUrl: options.baseUrl,
    token: options.token,
    workspaceId: options.workspaceId,
    fetch: options.fetch,
    retry,
    timeoutMs: options.timeoutMs ?? 30_000,
    onDeprecation: options.onDeprecation ?? warnOnConsole,
  });

  const method =
    (name: HttpMethod) =>
    async (path: string, init: LooseInit = {}): Promise<unknown> => {
      const needsKey = autoKeyOperations.has(`${name} ${path}`) && init.idempotencyKey === undefined && init.params?.header?.['idempotency-key'] === undefined;
      // Made once per call, so every retry of the call sends the same key.
      const { data } = await send(name, path, needsKey ? { ...init, idempotencyKey: newIdempotencyKey() } : init, 'json');
      return data;
    };
  const get = method('GET');

  async function* paginate(target: string, args: LooseInit | OperationArgsObject = {}): AsyncGenerator<unknown, void, undefined> {
    // An operationId (`listClusters`) or a path (`/v1/clusters`).
    const route = target.startsWith('/') ? undefined : routeOf(target);
    const path = route?.path ?? target;
    const init = route ? toInit(route, args as OperationArgsObject) : (args as LooseInit);
    const query = init.params?.query ?? {};
    let cursor = query.cursor;
    for (;;) {
      const page = await get(path, { ...init, params: { ...init.params, query: { ...query, cursor } } });
      if (!isListPage(page)) throw new PlatformError(`GET ${path} did not answer a list envelope`);
      // The cursor points after the last record returned: one that did not move brings nothing new (an empty
      // page echoes it; the mock's static example pages repeat it), and following it would loop forever.
      if (cursor !== undefined && page.pagination.cursor === cursor) return;
      yield* page.data;
      if (!page.pagination.has_more || page.data.length === 0) return;
      cursor = page.pagination.cursor;
    }
  }

  const calls = { GET: get, POST: method('POST'), PATCH: method('PATCH'), DELETE: method('DELETE') };
  const byOperation = Object.fromEntries(
    Object.entries(operationRoutes).map(([id, route]: [string, OperationRoute]) => {
      const call = calls[route.method];
      return [id, (args: OperationArgsObject = {}) => call(route.path, toInit(route, args))];
    }),
  ) as unknown as PlatformOperations;

  // The typed surface over the loose implementation: the types come from `paths`, the runtime takes any path.
  return {
    ...byOperation,
    GET: get as PlatformClient['GET'],
    POST: method('POST') as PlatformClient['POST'],
    PATCH: method('PATCH') as PlatformClient['PATCH'],
    DELETE: method('DELETE') as PlatformClient['DELETE'],
    paginate: paginate as PlatformClient['paginate'],
    streamInstallLogs: (id, logOptions) => streamLogs(send, retry, id, logOptions),
    streamEvents: (eventOptions) => streamEvents(send, retry, eventOptions),
  };
}

/** An operation-named method's argument object, as the runtime sees it. */
type OperationArgsObject = Record<string, unknown> & Pick<LooseInit, 'signal' | 'timeoutMs' | 'headers' | 'body'>;

function routeOf(operationId: string): OperationRoute {
  if (!Object.hasOwn(operationRoutes, operationId)) throw new PlatformError(`Unknown operation ${operationId}`);
  return operationRoutes[operationId as keyof typeof operationRoutes];
}

/** Sorts an argument object into openapi-fetch's `params` and the call options, as the route says. */
function toInit(route: OperationRoute, args: OperationArgsObject): LooseInit {
  const pick = (names: readonly string[]) => Object.fromEntries(names.filter((name) => args[name] !== undefined).map((name) => [name, args[name]]));
  const init: LooseInit = {
    params: { path: pick(route.path_params), query: pick(route.query) },
    signal: args.signal,
    timeoutMs: args.timeoutMs,
    headers: args.headers,
  };
  if (args.body !== undefined) init.body = args.body;
  // Only where the operation declares the header: `workspaceId` is a path parameter of getWorkspace.
  if (route.headers.includes('workspaceId')) init.workspaceId = args.workspaceId as string | undefined;
  if (route.headers.includes('idempotencyKey')) init.idempotencyKey = args.idempotencyKey as string | undefined;
  return init;
}

function isListPage(body: unknown): body is { data: unknown[]; pagination: { cursor: string; has_more: boolean } } {
  if (typeof body !== 'object' || body === null || !('data' in body) || !('pagination' in body)) return false;
  const { data, pagination } = body;
  return Array.isArray(data) && typeof pagination === 'object' && pagination !== null && 'has_more' in pagination && 'cursor' in pagination;
}

function newIdempotencyKey(): string {
  // Browsers offer randomUUID only in secure contexts; getRandomValues everywhere.
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, '0')).join('');
}
