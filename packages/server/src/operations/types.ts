// Handler types, derived from the generated contract types: a handler receives the validated request of its
// operation and returns one of the success responses the contract documents for it.
import type {
  HeaderParams,
  OperationId,
  operations,
  PathParams,
  ReceivedBody,
  ReceivedQuery,
  ResponseBody,
  ResponseStatus,
  WorkspaceRequired,
} from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/schema.ts';
import type { WorkflowStarter } from '../engine/engine.ts';
import type { ClusterDriver, ComputeProvider } from '../providers/types.ts';
import type { LogTails } from '../services/log-tails.ts';
import type { Scopes } from '../services/scopes.ts';
import type { SecretBox } from '../services/secrets.ts';
import type { Resolver } from '../services/ssrf.ts';
import type { ActingWorkspace, NamedWorkspace } from '../services/tenancy.ts';

export interface Caller {
  userId: string;
  kind: 'pat' | 'session' | 'jwt';
  /** The token's row, for PATs and session tokens. */
  tokenId: string | null;
  /** What the token may do: every scope for a session token, else a PAT's scopes or a JWT's `scope` claim. */
  scopes: Scopes;
  /** The workspaces a PAT is restricted to; null: every workspace of the user (see tenancy.ts). */
  workspaceIds: readonly string[] | null;
  /** The workspace the request names in X-Workspace-Id, looked up with the token (see tenancy.ts). */
  namedWorkspace?: NamedWorkspace;
}

/**
 * The key a caller's requests and streams are counted under: the user, whatever token they use, so minting more
 * tokens multiplies no limit.
 */
export function callerKey(caller: Caller): string {
  return `user:${caller.userId}`;
}

export interface OperationInput<Op extends OperationId> {
  params: PathParams<Op>;
  /** With the contract's defaults filled in (by the request validator). */
  query: ReceivedQuery<Op>;
  headers: HeaderParams<Op>;
  body: ReceivedBody<Op>;
  caller: Caller;
  /**
   * The workspace the request acts in, resolved by the binding (http/workspace.ts): the one X-Workspace-Id names,
   * else, for an operation addressing no resource by id, the caller's default one; undefined when there is none,
   * except for the operations that act in one (`x-requires-workspace`), which the binding answers 422 instead.
   */
  workspace: Op extends WorkspaceRequired ? ActingWorkspace : ActingWorkspace | undefined;
  /**
   * The workspace whose role the binding checked (http/authorize.ts): for an operation on a resource addressed by id
   * with an `x-required-role` above viewer, that resource's workspace; undefined where none was looked up (no such
   * resource, or one of a workspace the caller is not in: the operation answers 404).
   */
  roleWorkspaceId: string | undefined;
  requestId: string;
  signal: AbortSignal;
  /** The scheme and host the request was sent to (`http://127.0.0.1:8080`), for links in responses. */
  origin: string;
}

export interface HandlerEnv {
  db: Kysely<Database>;
  clock: Clock;
  config: Config;
  logger: Logger;
  secrets: SecretBox;
  /** Starts workflows in the transaction that creates their subject. */
  workflows: WorkflowStarter;
  /** The cloud provider (drift checks read the actual servers) and the clusters (the log stream). */
  provider: ComputeProvider;
  driver: ClusterDriver;
  /** Aborted when the process begins to shut down: long-lived streams end so clients reconnect elsewhere. */
  shutdown: AbortSignal;
  /** The tails of the installs followed in this process, shared by their log streams. */
  logTails: LogTails;
  /** Resolves host names for the SSRF checks of registry_url and repo_url (DNS by default; tests inject one). */
  resolveHost: Resolver;
}

type SuccessStatus<Op extends OperationId> = Extract<ResponseStatus<Op>, 200 | 201 | 202 | 204>;

/** Server-Sent Events, written as they are yielded; the iterator ends the stream. */
export type EventStream = AsyncIterable<string>;

type StreamsEvents<Op extends OperationId> = operations[Op]['responses'] extends { 200: { content: { 'text/event-stream': unknown } } } ? true : false;

export type OperationOutput<Op extends OperationId> =
  StreamsEvents<Op> extends true
    ? {
        status: 200;
        stream: EventStream;
        /** The workspace the stream shows: the caller's membership and role there are checked again while it is open. */
        workspaceId: string;
        headers?: Record<string, string>;
      }
    : {
        [S in SuccessStatus<Op>]: {
          status: S;
          body: S extends 204 ? undefined : ResponseBody<Op, S>;
          headers?: Record<string, string>;
          /** Ids of what the change touched beyond its path and answer, listed in its audit event. */
          auditTargets?: string[];
        };
      }[SuccessStatus<Op>];

export type Handler<Op extends OperationId> = (input: OperationInput<Op>, env: HandlerEnv) => Promise<OperationOutput<Op>>;

/**
 * An operation that changes something runs in one transaction with its audit event (http/audit.ts), and a
 * transaction is never held open across a call to a cloud provider or to DNS: such calls go in `before` (ahead of
 * the transaction; what it returns is handed to `change`) or `after` (once the change is committed). Inside
 * `change`, env.provider, env.driver and env.resolveHost refuse to be called. `before` is also the place of a
 * write that must stand whatever becomes of the request (an attempt counted against a limit): in `change` it
 * would roll back with a refusal.
 */
export interface Stages<Op extends OperationId, P> {
  before?(input: OperationInput<Op>, env: HandlerEnv): Promise<P>;
  change(input: OperationInput<Op>, env: HandlerEnv, prepared: P): Promise<OperationOutput<Op>>;
  /** Its failure is logged: the change is made and answered. It is handed what `before` returned, too. */
  after?(input: OperationInput<Op>, env: HandlerEnv, output: OperationOutput<Op>, prepared: P): Promise<void>;
}

export type StagedHandler<Op extends OperationId> = Handler<Op> & { stages: Stages<Op, unknown> };

/** A handler in stages; called as a plain handler (outside the binding), the stages run one after the other. */
export function staged<Op extends OperationId, P = void>(stages: Stages<Op, P>): StagedHandler<Op> {
  const handler: Handler<Op> = async (input, env) => {
    const prepared = (await stages.before?.(input, env)) as P;
    const output = await stages.change(input, env, prepared);
    await stages.after?.(input, env, output, prepared);
    return output;
  };
  return Object.assign(handler, { stages: stages as Stages<Op, unknown> });
}

/** One handler per operationId of the contract: an operation without a handler fails the type check. */
export type Handlers = { [Op in OperationId]: Handler<Op> };
