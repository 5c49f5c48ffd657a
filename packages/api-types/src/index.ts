// Helpers derived from the generated types; nothing here restates what the contract says.
import type { BodyDefaults, QueryDefaults, WorkspaceRequired } from '../generated/defaults.d.ts';
import type { components, operations, paths, webhooks } from '../generated/schema.d.ts';

export type { components, operations, paths, webhooks };

/** Every operationId of the contract. */
export type OperationId = keyof operations;

/** A named schema of the contract: `Schema<'Cluster'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

type Parameters<Op extends OperationId> = operations[Op]['parameters'];
export type PathParams<Op extends OperationId> = NonNullable<Parameters<Op>['path']>;
export type QueryParams<Op extends OperationId> = NonNullable<Parameters<Op>['query']>;
export type HeaderParams<Op extends OperationId> = NonNullable<Parameters<Op>['header']>;

/** The JSON request body of an operation, or `never` when it takes none. */
export type RequestBody<Op extends OperationId> = operations[Op] extends {
  requestBody: { content: { 'application/json': infer Body } };
}
  ? Body
  : operations[Op] extends { requestBody?: { content: { 'application/json': infer Body } } }
    ? Body
    : never;

type Responses<Op extends OperationId> = operations[Op]['responses'];

/** The status codes an operation documents. */
export type ResponseStatus<Op extends OperationId> = keyof Responses<Op> & number;

/** The body of one documented response of an operation (by media type, JSON by default). */
export type ResponseBody<Op extends OperationId, Status extends ResponseStatus<Op>, Media extends string = 'application/json'> = Responses<Op>[Status] extends {
  content: infer Content;
}
  ? Content extends Record<Media, infer Body>
    ? Body
    : never
  : never;

type SuccessStatus<Op extends OperationId> = Extract<ResponseStatus<Op>, 200 | 201 | 202 | 204>;

/** The body of an operation's success response (`never` for 204 No Content). */
export type SuccessBody<Op extends OperationId> = ResponseBody<Op, SuccessStatus<Op>>;

/** The shared error body every non-2xx response carries. */
export type ErrorBody = components['schemas']['Error'];
export type ErrorCode = ErrorBody['error']['code'];

/** The names of `Map[Op]`, or never when the operation has none. */
type DefaultedNames<Map, Op> = Op extends keyof Map ? Map[Op] : never;
/** `T` with the named fields present: the contract gives them a default, which the server's validator fills in. */
type WithDefaults<T, Names> = T & { [K in Extract<Names, keyof T>]-?: Exclude<T[K], undefined> };

/** The query parameters a server handler receives: those with a default in the contract are always there. */
export type ReceivedQuery<Op extends OperationId> = WithDefaults<QueryParams<Op>, DefaultedNames<QueryDefaults, Op>>;
/** The JSON body a server handler receives: top-level fields with a default in the contract are always there. */
export type ReceivedBody<Op extends OperationId> = [RequestBody<Op>] extends [never] ? never : WithDefaults<RequestBody<Op>, DefaultedNames<BodyDefaults, Op>>;

/** The operations that act in a workspace (`x-requires-workspace`): the server's binding gives their handlers one. */
export type { WorkspaceRequired };
