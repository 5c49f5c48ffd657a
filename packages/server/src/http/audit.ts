// The audit log's part of the binding, for every operation the contract says is recorded (OperationMeta.audit),
// with no code per operation:
//   - a change runs its handler in one transaction, handed to it as env.db, and writes its audit event in that
//     transaction before commit: the event exists exactly when the change does;
//   - a read that hands out credentials (x-audited) writes its event after the handler, before the answer goes;
//   - a refused request (4xx) writes one event, `denied` (forbidden) or `failed`, on its own: its transaction
//     rolled back, so nothing changed. 5xx (an outage, a bug) and 429 are not recorded: the first cannot be
//     written, and the second would let a caller past its limit make writes anyway.
// Requests without an authenticated caller are not recorded: they name no actor anyone could be shown, and anyone
// could make the server write rows with them (a 401 is answered before any rate limit counts).
// A transaction is never held open across a call to a cloud provider or to DNS: operations that make one put it
// in a stage outside the transaction (operations/types.ts, `staged`), and inside it those calls throw.
import type { OperationId } from '@platform/api-types';
import { ApiError } from '../errors.ts';
import type { Caller, HandlerEnv, OperationInput, StagedHandler } from '../operations/types.ts';
import { type RequestAuditInput, recordRequestEvent } from '../resources/audit-events.ts';
import type { Membership } from '../services/roles.ts';
import type { OperationMeta } from './contract.ts';

export type Output = {
  status: number;
  body?: unknown;
  stream?: AsyncIterable<string>;
  /** A stream's workspace: the caller's access to it is checked again while the stream is open. */
  workspaceId?: string;
  /** Ids of what the change touched beyond its path and answer (invitations withdrawn with a member). */
  auditTargets?: string[];
  headers?: Record<string, string>;
};
type AnyHandler = (input: OperationInput<OperationId>, env: HandlerEnv) => Promise<Output>;

/** A request the audit log records, as the binding learns about it. */
export interface AuditedRequest {
  meta: OperationMeta;
  params: Record<string, string>;
  caller: Caller;
  requestId: string;
  clientAddress: string;
  /** The caller's membership of the workspace the operation acts in, when authorization looked it up. */
  membership?: Membership;
}

/** Stands in for a provider or driver inside a transaction: every call throws, naming what to do instead. */
function refusing<T extends object>(name: string): T {
  return new Proxy({} as T, {
    get: (_target, property) =>
      property === 'then'
        ? undefined
        : () => {
            throw new Error(`${name}.${String(property)} was called inside a request's transaction; call it in the operation's before or after stage`);
          },
  });
}

export function auditLog(env: HandlerEnv) {
  const guarded: HandlerEnv = {
    ...env,
    provider: refusing('provider'),
    driver: refusing('driver'),
    resolveHost: async () => {
      throw new Error("resolveHost was called inside a request's transaction; call it in the operation's before stage");
    },
  };

  /** The workspace the request acted in, when the caller is (or, having left it, was) a member of it. */
  function workspaceOf(request: AuditedRequest, output: Output | undefined): string | null {
    if (request.membership) return request.membership.workspaceId;
    const body = output?.body as { workspace_id?: unknown } | undefined;
    if (output && request.params.workspaceId !== undefined) return request.params.workspaceId;
    if (typeof body?.workspace_id === 'string') return body.workspace_id;
    return request.caller.namedWorkspace?.ref?.id ?? null;
  }

  /** The ids the path names, and of what a creation (201) or a started workflow (202) made. */
  function targetsOf(request: AuditedRequest, output: Output | undefined): string[] {
    const targets = [...Object.values(request.params), ...(output?.auditTargets ?? [])];
    const body = output?.body as { id?: unknown; workflow_id?: unknown } | undefined;
    if (output && (output.status === 201 || output.status === 202)) {
      for (const id of [body?.id, body?.workflow_id]) if (typeof id === 'string') targets.push(id);
    }
    return targets;
  }

  function eventOf(request: AuditedRequest, output: Output | undefined, refusal?: ApiError): RequestAuditInput {
    return {
      actor_id: request.caller.userId,
      token_kind: request.caller.kind,
      token_id: request.caller.tokenId,
      workspace_id: workspaceOf(request, output),
      operation: request.meta.operationId,
      target_ids: targetsOf(request, output),
      request_id: request.requestId,
      outcome: refusal === undefined ? 'succeeded' : refusal.code === 'forbidden' ? 'denied' : 'failed',
      status: refusal?.status ?? output?.status ?? null,
      error_code: refusal?.code ?? null,
      client_address: request.clientAddress || null,
    };
  }

  return {
    /** Runs the handler of a recorded operation and writes its event (see the top of this file). */
    async run(request: AuditedRequest, handler: AnyHandler, input: OperationInput<OperationId>): Promise<Output> {
      if (request.meta.audit === 'read') {
        const output = await handler(input, env);
        await recordRequestEvent(env.db, eventOf(request, output), env.clock.now());
        return output;
      }
      const stages = (handler as Partial<StagedHandler<OperationId>>).stages;
      const prepared = await stages?.before?.(input, env);
      const output = await env.db.transaction().execute(async (trx) => {
        const inside = { ...guarded, db: trx };
        const result = (stages ? await stages.change(input, inside, prepared) : await handler(input, inside)) as Output;
        await recordRequestEvent(trx, eventOf(request, result), env.clock.now());
        return result;
      });
      await stages?.after?.(input, env, output as never, prepared).catch((error: unknown) => {
        env.logger.warn({ err: error, operation: request.meta.operationId, requestId: request.requestId }, 'an after-commit step failed');
      });
      return output;
    },

    /** Records a refused request (its change, if any, rolled back); a failure to record it is logged, not answered. */
    async refused(request: AuditedRequest, error: unknown): Promise<void> {
      if (!(error instanceof ApiError) || error.status >= 500 || error.code === 'rate_limited') return;
      await recordRequestEvent(env.db, eventOf(request, undefined, error), env.clock.now()).catch((failure: unknown) => {
        env.logger.warn({ err: failure, operation: request.meta.operationId, requestId: request.requestId }, 'recording a refused request failed');
      });
    },
  };
}
