// Provision a machine: wait for a slot (queued), create the server (adopting one an earlier run created),
// wait until it runs, then free the slot for the next queued machine. A failed creation puts the machine back
// in the queue and the cluster into backoff (services/provisioning.ts).
import { ProviderAuthError } from '../providers/types.ts';
import { notifyWorkspace } from '../services/notifications.ts';
import { machineCredential } from './credentials.ts';
import { backoffOf, lockCluster, nextQueued, offeringOf, recordFailure, recordSuccess, slotAvailable } from '../services/provisioning.ts';
import type { StepContext, StepResult, WorkflowDefinition } from './engine.ts';

/** How long a queued machine waits before looking for a slot again (a freed slot wakes it sooner). */
const queuedWait = (checks: number) => Math.min(2 ** checks, 60);

async function machineOf(ctx: StepContext) {
  return ctx.db
    .selectFrom('machines')
    .innerJoin('clusters', 'clusters.id', 'machines.cluster_id')
    .innerJoin('compute_configs', 'compute_configs.id', 'machines.compute_config_id')
    .selectAll('machines')
    .select(['clusters.workspace_id', 'clusters.status as cluster_status', 'compute_configs.provider_config'])
    .where('machines.provider_id', '=', ctx.workflow.subject_id)
    .executeTakeFirst();
}

/** Frees the machine's slot: the next queued machine of the cluster is due now. */
async function freeSlot(ctx: StepContext, trx: StepContext['db'], clusterId: string): Promise<void> {
  const next = await nextQueued(trx, clusterId);
  if (next) await ctx.wake(trx, next);
}

export const provision: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      return ctx.db.transaction().execute(async (trx): Promise<StepResult> => {
        const machine = await trx.selectFrom('machines').selectAll().where('provider_id', '=', ctx.workflow.subject_id).forUpdate().executeTakeFirst();
        if (!machine) return { done: true }; // deleted while queued
        if (machine.status === 'provisioning') return { next: 'create' }; // a re-run after the slot was taken
        const cluster = await trx.selectFrom('clusters').select(['id', 'workspace_id', 'status']).where('id', '=', machine.cluster_id).executeTakeFirstOrThrow();
        await lockCluster(trx, cluster.id);
        if (await slotAvailable(trx, cluster, ctx.clock.now())) {
          await trx.updateTable('machines').set({ status: 'provisioning' }).where('provider_id', '=', machine.provider_id).execute();
          return { next: 'create' };
        }
        const checks = ctx.workflow.attempts + 1;
        return { wait: queuedWait(checks), attempts: checks };
      });
    },

    async create(ctx) {
      const machine = await machineOf(ctx);
      if (!machine) return { done: true };
      const credential = await machineCredential(ctx, machine.provider_id);
      const server = await ctx.provider.createServer({
        name: machine.node_name,
        server_type: machine.server_type,
        location: machine.provider_config.region,
        image: machine.provider_config.image,
        labels: { workflow: ctx.workflow.id, machine: machine.provider_id },
        ...(credential ? { credential } : {}),
      });
      await ctx.db.updateTable('machines').set({ server_id: server.id }).where('provider_id', '=', machine.provider_id).execute();
      return { next: 'boot', state: { server_id: server.id } };
    },

    async boot(ctx) {
      const server = await ctx.provider.getServer(String(ctx.state.server_id), await machineCredential(ctx, ctx.workflow.subject_id));
      if (!server) return { next: 'create' }; // gone before it ran: create another
      if (server.status !== 'running') return { wait: 2 };
      return { next: 'ready' };
    },

    async ready(ctx) {
      const machine = await machineOf(ctx);
      if (!machine) return { done: true };
      await ctx.db.transaction().execute(async (trx) => {
        await lockCluster(trx, machine.cluster_id);
        await trx.updateTable('machines').set({ status: 'ready' }).where('provider_id', '=', machine.provider_id).execute();
        await recordSuccess(trx, machine.cluster_id);
        await freeSlot(ctx, trx, machine.cluster_id);
      });
      return { done: true };
    },
  },

  // Creating or booting the server failed: back to the queue, and the cluster backs off.
  async onError(ctx, error) {
    // A refused token cannot succeed on a retry: the machine fails now, its notification naming the credential.
    if (error instanceof ProviderAuthError) return { failed: error.message };
    const machine = await machineOf(ctx);
    if (!machine) return { done: true };
    const now = ctx.clock.now();
    const message = error instanceof Error ? error.message : String(error);
    const backoff = await ctx.db.transaction().execute(async (trx) => {
      await lockCluster(trx, machine.cluster_id);
      // Back to the queue, counted once: a re-run of this after a crash finds the machine queued already.
      const requeued = await trx.updateTable('machines').set({ status: 'queued', server_id: null }).where('provider_id', '=', machine.provider_id).where('status', '=', 'provisioning').executeTakeFirst();
      const { offering } = await offeringOf(trx, machine.workspace_id);
      if (requeued.numUpdatedRows === 0n) return (await backoffOf(trx, machine.cluster_id, offering, now)) ?? { until: now, failures: 0 };
      const backoff = await recordFailure(trx, machine.cluster_id, offering, now);
      await notifyWorkspace(trx, machine.workspace_id, now, {
        type: 'machine.provision_failed',
        resource_type: 'machine',
        resource_id: machine.provider_id,
        title: `Provisioning ${machine.node_name} failed`,
        body: `${message}. The next attempt is in ${backoff.until - now} s.`,
        severity: 'warning',
      });
      return backoff;
    });
    ctx.logger.info(backoff, 'provision failed; cluster backs off');
    return { wait: Math.max(0, backoff.until - now), next: 'start', attempts: 0 };
  },

  async fail(ctx, message) {
    const machine = await machineOf(ctx);
    if (!machine) return;
    await ctx.db.transaction().execute(async (trx) => {
      await trx.updateTable('machines').set({ status: 'failed' }).where('provider_id', '=', machine.provider_id).execute();
      await freeSlot(ctx, trx, machine.cluster_id);
      await notifyWorkspace(trx, machine.workspace_id, ctx.clock.now(), {
        type: 'machine.failed',
        resource_type: 'machine',
        resource_id: machine.provider_id,
        title: `Machine ${machine.node_name} failed`,
        body: message,
        severity: 'critical',
      });
    });
  },
};
