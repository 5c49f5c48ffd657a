// Delete a machine: wait for any step of its other workflows that is running now (they were cancelled, but a
// provider call may be in flight), delete its server and, for a suspended machine, its snapshot, then remove
// the machine and free its provisioning slot. The machine lists as `deleting` until then.

import { anyRunning, retryThenFail, type StepContext, type WorkflowDefinition } from '../engine/engine.ts';
import { ProviderError } from '../providers/types.ts';
import { machineById, removeMachine, tellDeletionFailed } from '../resources/machines.ts';
import { deleteSuspensionsOfMachine, suspensionsOfMachine } from '../resources/suspensions.ts';
import { lockCluster, nextQueued } from '../services/provisioning.ts';
import { machineCredential } from './credentials.ts';

const machineOf = (ctx: StepContext) => machineById(ctx.db, ctx.workflow.subject_id);

/**
 * A server locked by an Action still running (Hetzner's 423 `locked`: a shutdown, a snapshot, a create that has not
 * ended) is tried again, every 2, 4, … up to 30 s, until it is gone or this long (s) has passed since the first lock.
 */
const LOCKED_DEADLINE_SECONDS = 900;

export const deleteMachineWorkflow: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      const cancelled = (ctx.state.cancelled as string[] | undefined) ?? [];
      if (await anyRunning(ctx.db, cancelled)) return { wait: 1 };
      return { next: 'delete_server' };
    },
    async delete_server(ctx) {
      const machine = await machineOf(ctx);
      if (!machine) return { done: true };
      const credential = await machineCredential(ctx, machine.provider_id);
      if (machine.server_id) await ctx.provider.deleteServer(machine.server_id, credential);
      for (const { snapshot_id } of await suspensionsOfMachine(ctx.db, machine.provider_id)) {
        if (snapshot_id && (await ctx.provider.getSnapshot(snapshot_id, credential))) await ctx.provider.deleteSnapshot(snapshot_id, credential);
      }
      return { next: 'remove' };
    },
    async remove(ctx) {
      const machine = await machineOf(ctx);
      if (!machine) return { done: true };
      await ctx.db.transaction().execute(async (trx) => {
        await lockCluster(trx, machine.cluster_id);
        await deleteSuspensionsOfMachine(trx, machine.provider_id);
        await removeMachine(trx, machine.provider_id);
        const next = await nextQueued(trx, machine.cluster_id);
        if (next) await ctx.wake(trx, next);
      });
      return { done: true };
    },
  },
  async onError(ctx, error, attempts) {
    if (error instanceof ProviderError && error.kind === 'busy') {
      const since = Number(ctx.state.locked_since ?? ctx.clock.now());
      if (ctx.clock.now() - since < LOCKED_DEADLINE_SECONDS) return { wait: Math.min(2 ** attempts, 30), attempts, state: { locked_since: since } };
      return { failed: `${error.message} The server was still locked ${LOCKED_DEADLINE_SECONDS / 60} minutes later.` };
    }
    return retryThenFail(error, attempts);
  },
  async fail(ctx, message) {
    // The provider refused the deletion: the machine stays `deleting` with the reason in the workflow's error and
    // a notification, and deleting it again retries.
    ctx.logger.error({ message }, 'machine deletion failed');
    return (trx) => tellDeletionFailed(trx, ctx.workflow.subject_id, message, ctx.clock.now());
  },
};
