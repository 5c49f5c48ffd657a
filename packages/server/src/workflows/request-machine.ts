// Provision a machine: wait for a slot (queued), create the server (adopting one an earlier run created) with
// the cluster's join script, wait until it runs and its node is Ready, then free the slot for the next queued
// machine. A failed creation puts the machine back in the queue and the cluster into backoff
// (services/provisioning.ts). A machine whose node is not Ready within MACHINE_BOOT_TIMEOUT_SECONDS has its server
// deleted and fails, freeing its slot, and counts as a failure toward the cluster's backoff.

import type { WorkflowDeadlines } from '../config.ts';
import type { StepContext, StepDeadline, StepResult, WorkflowDefinition } from '../engine/engine.ts';
import { ProviderError } from '../providers/types.ts';
import { clusterById } from '../resources/clusters.ts';
import { claimSlot, failProvisioning, machineForWorkflow, markMachine, requeueMachine, setMachineState } from '../resources/machines.ts';
import { backoffOf, lockCluster, nextQueued, offeringOf, recordFailure, recordSuccess, slotAvailable } from '../services/provisioning.ts';
import { machineCredential } from './credentials.ts';

/** How long a queued machine waits before looking for a slot again (a freed slot wakes it sooner). */
const queuedWait = (checks: number) => Math.min(2 ** checks, 60);

/** A locked or changed resource (`busy`) is tried again after this wait, this many times, before it counts as a failure. */
const BUSY_WAIT_SECONDS = 5;
const BUSY_RETRIES = 6;

const machineOf = (ctx: StepContext) => machineForWorkflow(ctx.db, ctx.workflow.subject_id);

/** Frees the machine's slot: the next queued machine of the cluster is due now. */
async function freeSlot(ctx: StepContext, trx: StepContext['db'], clusterId: string): Promise<void> {
  const next = await nextQueued(trx, clusterId);
  if (next) await ctx.wake(trx, next);
}

const provision: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      return ctx.db.transaction().execute(async (trx): Promise<StepResult> => {
        const claim = await claimSlot(trx, ctx.workflow.subject_id, ctx.clock.now());
        if (claim.slot === 'gone') return { done: true }; // deleted while queued
        if (claim.slot === 'provisioning') {
          // Taken now (or by an earlier run). Another slot may be free too: a backoff just ended, or the cluster just
          // began to run, and only one machine was woken for it. The next queued machine looks now, not on its timer,
          // and wakes the one after it in turn while slots are free.
          const cluster = claim.takenIn;
          if (cluster && (await slotAvailable(trx, cluster, ctx.clock.now()))) await freeSlot(ctx, trx, cluster.id);
          return { next: 'create' };
        }
        const checks = ctx.workflow.attempts + 1;
        return { wait: queuedWait(checks), attempts: checks };
      });
    },

    async create(ctx) {
      const machine = await machineOf(ctx);
      if (!machine) return { done: true };
      const cluster = await clusterById(ctx.db, machine.cluster_id);
      if (!cluster) return { done: true };
      const { user_data } = await ctx.driver.joinMachine({
        cluster_id: machine.cluster_id,
        machine_id: machine.provider_id,
        node_name: machine.node_name,
        kubernetes_release: cluster.kaas_release,
      });
      const credential = await machineCredential(ctx, machine.provider_id);
      const server = await ctx.provider.createServer({
        name: machine.node_name,
        server_type: machine.server_type,
        location: machine.provider_config.region,
        image: machine.provider_config.image,
        labels: { workflow: ctx.workflow.id, machine: machine.provider_id },
        cluster_id: machine.cluster_id,
        user_data,
        ...(credential ? { credential } : {}),
      });
      await setMachineState(ctx.db, machine.provider_id, { server_id: server.id });
      return { next: 'boot', state: { server_id: server.id } };
    },

    async boot(ctx) {
      const server = await ctx.provider.getServer(String(ctx.state.server_id), await machineCredential(ctx, ctx.workflow.subject_id));
      if (!server) return { next: 'create' }; // gone before it ran: create another
      // What it waits for is kept, for the reason given if the boot deadline passes.
      if (server.status !== 'running') return { wait: 2, state: { boot: `its server is still ${server.status}` } };
      // Ready means the node joined the cluster and is Ready, not only that its server runs.
      const machine = await machineOf(ctx);
      if (machine && !(await ctx.driver.nodeReady(machine.cluster_id, machine.node_name)))
        return { wait: 2, state: { boot: 'its server runs but its node has not joined the cluster or is not Ready' } };
      return { next: 'ready' };
    },

    async ready(ctx) {
      const machine = await machineOf(ctx);
      if (!machine) return { done: true };
      await ctx.db.transaction().execute(async (trx) => {
        await lockCluster(trx, machine.cluster_id);
        await markMachine(trx, machine.provider_id, 'ready', ctx.clock.now());
        await recordSuccess(trx, machine.cluster_id);
        await freeSlot(ctx, trx, machine.cluster_id);
      });
      return { done: true };
    },
  },

  // Creating or booting the server failed: back to the queue, and the cluster backs off.
  async onError(ctx, error, attempts) {
    if (error instanceof ProviderError) {
      // A refused credential, a missing permission, the project's own limit or a request the provider refuses as
      // sent cannot succeed on a retry: the machine fails now, its notification saying which (ProviderErrorKind).
      if (error.final) return { failed: error.message };
      // Locked by another action, or changed meanwhile: again shortly, a few times, before it counts as a failure.
      if (error.kind === 'busy' && attempts <= BUSY_RETRIES) return { wait: BUSY_WAIT_SECONDS, attempts };
    }
    const machine = await machineOf(ctx);
    if (!machine) return { done: true };
    const now = ctx.clock.now();
    const message = error instanceof Error ? error.message : String(error);
    const backoff = await ctx.db.transaction().execute(async (trx) => {
      await lockCluster(trx, machine.cluster_id);
      // Back to the queue, counted toward the backoff and told once: a re-run of this after a crash finds the
      // machine queued already, and waits out the backoff counted then.
      const requeued = await requeueMachine(trx, machine, message, now);
      if (requeued) return requeued;
      const { offering } = await offeringOf(trx, { id: machine.cluster_id, workspace_id: machine.workspace_id });
      return (await backoffOf(trx, machine.cluster_id, offering, now)) ?? { until: now, failures: 0 };
    });
    ctx.logger.info(backoff, 'provision failed; cluster backs off');
    return { wait: Math.max(0, backoff.until - now), next: 'start', attempts: 0 };
  },

  async fail(ctx, message) {
    const machine = await machineOf(ctx);
    return async (trx) => {
      if (!machine) return;
      // Told (event and notification) by the change itself.
      await failProvisioning(trx, machine.provider_id, message, ctx.clock.now());
      await freeSlot(ctx, trx, machine.cluster_id);
    };
  },
};

/**
 * A node not Ready by the deadline will not be (a cloud-init that failed, a control plane it cannot reach): its
 * server is deleted, the failure counts toward the cluster's backoff, and `fail` marks the machine failed, frees its
 * slot for the next queued machine and tells the workspace.
 */
const bootDeadline = (seconds: number): StepDeadline => ({
  seconds: () => seconds,
  async expired(ctx) {
    const machine = await machineOf(ctx);
    if (!machine) return { done: true };
    await ctx.provider.deleteServer(String(ctx.state.server_id), await machineCredential(ctx, machine.provider_id));
    await ctx.db.transaction().execute(async (trx) => {
      await lockCluster(trx, machine.cluster_id);
      const { offering } = await offeringOf(trx, { id: machine.cluster_id, workspace_id: machine.workspace_id });
      await recordFailure(trx, machine.cluster_id, offering, ctx.clock.now());
    });
    const why = typeof ctx.state.boot === 'string' ? ctx.state.boot : 'its node is not Ready';
    return { failed: `${machine.node_name} was not Ready ${seconds} s after its server was created (${why}); the server was deleted.` };
  },
});

export const requestMachineWorkflow = (deadlines: WorkflowDeadlines): WorkflowDefinition => ({
  ...provision,
  deadlines: { boot: bootDeadline(deadlines.machineBootSeconds) },
  boundedElsewhere: {
    start:
      "a queued machine waits for its cluster's control plane (bounded by its ready deadline), for a slot (each machine ahead frees its slot by its boot deadline) and out the cluster's backoff (at most 300 s)",
  },
});
