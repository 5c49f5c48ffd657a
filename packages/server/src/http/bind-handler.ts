// What the binding adds to a handler, read from the contract once per operation, so no handler writes it out:
//   - idempotency wherever the operation declares the `idempotency-key` header (services/idempotency.ts): the
//     change runs in the transaction that stores its answer, a repeat is answered with it (Idempotent-Replayed);
//   - a change acting in the workspace X-Workspace-Id names (or the caller's default one) holds that workspace's
//     row until it commits, so a deletion of the workspace racing it finds what it made (409) or went first (403).
// Both wrap the handler's change (the whole handler, or the `change` stage of a staged one).
import type { OperationId } from '@platform/api-types';
import { type Caller, type HandlerEnv, type OperationInput, type StagedHandler, staged } from '../operations/types.ts';
import { requestHash, withIdempotencyKey } from '../services/idempotency.ts';
import { holdActingWorkspace } from '../services/tenancy.ts';
import type { Output } from './audit.ts';
import type { OperationMeta } from './contract.ts';
import type { WorkspaceSource } from './workspace.ts';

type Input = OperationInput<OperationId>;
export type AnyHandler = (input: Input, env: HandlerEnv) => Promise<Output>;
type Change = (input: Input, env: HandlerEnv, prepared: unknown) => Promise<Output>;

/** The handler with its change wrapped: a staged handler keeps its other stages. */
function wrapChange(handler: AnyHandler, wrap: (change: Change) => Change): AnyHandler {
  const stages = (handler as Partial<StagedHandler<OperationId>>).stages;
  if (stages) return staged({ ...stages, change: wrap(stages.change as Change) as never }) as unknown as AnyHandler;
  const change = wrap((input, env) => handler(input, env));
  return (input, env) => change(input, env, undefined);
}

/**
 * A token's restriction is part of what its request asks (a restricted token never replays an answer given in
 * another workspace); absent for the others, so their keys' hashes stay what they were.
 */
const restrictionOf = (caller: Caller) => (caller.workspaceIds === null ? {} : { restriction: caller.workspaceIds });

const idempotent =
  (operation: OperationId) =>
  (change: Change): Change =>
  async (input, env, prepared) => {
    const key = (input.headers as { 'idempotency-key'?: string })['idempotency-key'];
    if (key === undefined) return change(input, env, prepared);
    const workspace = (input.headers as { 'X-Workspace-Id'?: string })['X-Workspace-Id'] ?? null;
    const hash = requestHash(operation, { ...input.params, body: input.body, workspace, ...restrictionOf(input.caller) });
    const scope = { userId: input.caller.userId, key, operation, hash };
    const { response, replayed } = await withIdempotencyKey(env.db, env.clock, scope, async (trx) => {
      const output = await change(input, { ...env, db: trx }, prepared);
      return { ...output, body: output.body };
    });
    // The first response again: its status, body and the headers its handler set.
    return replayed ? { status: response.status, body: response.body, headers: { ...response.headers, 'Idempotent-Replayed': 'true' } } : response;
  };

const holdingWorkspace =
  (change: Change): Change =>
  async (input, env, prepared) => {
    if (input.workspace) await holdActingWorkspace(env.db, input.workspace);
    return change(input, env, prepared);
  };

export function bindHandler(meta: OperationMeta, source: WorkspaceSource, handler: AnyHandler): AnyHandler {
  let bound = handler;
  if (meta.audit === 'change' && source.kind === 'header') bound = wrapChange(bound, holdingWorkspace);
  if (meta.headerNames.has('idempotency-key')) bound = wrapChange(bound, idempotent(meta.operationId));
  return bound;
}
