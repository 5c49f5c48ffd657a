// Types derived from the generated `paths`: which paths each method takes, what a call accepts and what it
// resolves to. Nothing here lists paths or operations by hand.
import type { OperationId, operations, paths, Schema } from '@platform/api-types';
import type { ParamsOption, RequestBodyOption } from 'openapi-fetch';

export type { OperationId, operations, paths };

/** The methods the client offers, as openapi-fetch names them (lowercase in `paths`). */
export type Method = 'get' | 'post' | 'patch' | 'delete';

/** The paths that have an operation for `M`. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P] extends { [K in M]: object } ? P : never;
}[keyof paths];

/** The operation object of a path and method. */
export type OperationOf<P extends keyof paths, M extends Method> = paths[P][M];

type HeaderParams<Op> = Op extends { parameters: { header?: infer H } } ? NonNullable<H> : never;

/** Whether the operation declares the request header `Name`. */
export type DeclaresHeader<Op, Name extends string> = [HeaderParams<Op>] extends [never] ? false : Name extends keyof HeaderParams<Op> ? true : false;

/** Options of every call, beside openapi-fetch's `params` and `body`. */
export interface BaseCallOptions {
  /** Aborts the call (and its retries); the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Per-attempt time limit in milliseconds, overriding the client's; 0 disables it. */
  timeoutMs?: number;
  /** Extra request headers (for instance an `X-Request-Id` to trace the call). */
  headers?: Record<string, string>;
}

/** `workspaceId` where the operation takes `X-Workspace-Id`, `idempotencyKey` where it takes `idempotency-key`. */
export type HeaderOptions<Op> = (DeclaresHeader<Op, 'X-Workspace-Id'> extends true
  ? {
      /** Sends `X-Workspace-Id`, overriding the client's `workspaceId` for this call. */
      workspaceId?: string;
    }
  : unknown) &
  (DeclaresHeader<Op, 'idempotency-key'> extends true
    ? {
        /** Sends `idempotency-key`: the call is then safe to retry. One is generated when omitted. */
        idempotencyKey?: string;
      }
    : unknown);

/** What a call of an operation accepts: openapi-fetch's `params` and `body`, and the client's own options. */
export type CallInit<Op> = ParamsOption<Op> & RequestBodyOption<Op> & BaseCallOptions & HeaderOptions<Op>;

/** The init argument, optional when nothing in it is required. */
export type InitArgs<Init> = object extends Init ? [init?: Init] : [init: Init];

type SuccessStatus = 200 | 201 | 202 | 204;

/** The JSON body of the operation's success response; `undefined` for one without a body (204). */
export type SuccessBody<Op> = Op extends { responses: infer Responses }
  ? {
      [Status in keyof Responses & SuccessStatus]: Responses[Status] extends {
        content: { 'application/json': infer Body };
      }
        ? Body
        : undefined;
    }[keyof Responses & SuccessStatus]
  : never;

/** Paths whose GET answers a Server-Sent Events stream: read through `streamInstallLogs`, never as JSON. */
export type EventStreamPaths = {
  [P in PathsWith<'get'>]: OperationOf<P, 'get'> extends {
    responses: { 200: { content: { 'text/event-stream': unknown } } };
  }
    ? P
    : never;
}[PathsWith<'get'>];

/** The paths `GET` takes: every GET path except the event streams. */
export type JsonGetPaths = Exclude<PathsWith<'get'>, EventStreamPaths>;

/** The paths whose GET answers the list envelope `{data: [...], pagination}`: what `paginate` takes. */
export type ListPaths = {
  [P in JsonGetPaths]: SuccessBody<OperationOf<P, 'get'>> extends {
    data: unknown[];
    pagination: Schema<'Pagination'>;
  }
    ? P
    : never;
}[JsonGetPaths];

/** One record of a list path's pages. */
export type ListItem<P extends ListPaths> = SuccessBody<OperationOf<P, 'get'>> extends { data: (infer Item)[] } ? Item : never;

/** One method of the client: typed by the path's operation, resolving to its success body. */
export type CallMethod<M extends Method, Paths extends PathsWith<M> = PathsWith<M>> = <P extends Paths>(
  path: P,
  ...init: InitArgs<CallInit<OperationOf<P, M>>>
) => Promise<SuccessBody<OperationOf<P, M>>>;

/** `Uppercase<method> path` of every operation that declares `idempotency-key`. */
export type IdempotentOperations = {
  [M in Method]: {
    [P in PathsWith<M>]: DeclaresHeader<OperationOf<P, M>, 'idempotency-key'> extends true ? `${Uppercase<M>} ${P}` : never;
  }[PathsWith<M>];
}[Method];

/** A parameter group of an operation (`path`, `query`), or nothing when it declares none. */
type ParameterGroup<Op, In extends string> = Op extends { parameters: { [K in In]?: infer Group } }
  ? [NonNullable<Group>] extends [never]
    ? unknown
    : NonNullable<Group>
  : unknown;

/** `body`: required when the contract requires the request body, absent when the operation takes none. */
type BodyOption<Op> = Op extends { requestBody?: infer Body }
  ? [NonNullable<Body>] extends [never]
    ? unknown
    : NonNullable<Body> extends { content: { 'application/json': infer Json } }
      ? undefined extends Body
        ? { body?: Json }
        : { body: Json }
      : unknown
  : unknown;

/** The one argument object of an operation-named method: path and query parameters, `body`, and the call options. */
export type OperationInit<Id extends OperationId> = ParameterGroup<operations[Id], 'path'> &
  ParameterGroup<operations[Id], 'query'> &
  BodyOption<operations[Id]> &
  BaseCallOptions &
  HeaderOptions<operations[Id]>;

/** The arguments of an operation-named method: the argument object, optional when nothing in it is required. */
export type OperationArgs<Id extends OperationId> = InitArgs<OperationInit<Id>>;

/** What an operation-named method resolves to: the success body, `undefined` for 204. */
export type OperationResult<Id extends OperationId> = SuccessBody<operations[Id]>;

/** The operationIds whose success body is the list envelope: what `paginate` takes beside list paths. */
export type ListOperations = {
  [Id in OperationId]: OperationResult<Id> extends { data: unknown[]; pagination: Schema<'Pagination'> } ? Id : never;
}[OperationId];

/** One record of a list operation's pages. */
export type ListOperationItem<Id extends ListOperations> = OperationResult<Id> extends { data: (infer Item)[] } ? Item : never;
