// Create a cluster: the driver creates its control plane and it comes up (PROVISIONING → RUNNING), then
// machines queued for it may start. A control plane not RUNNING within the deadline makes the cluster ERROR.
import type { WorkflowDeadlines } from '../config.ts';
import type { StepContext, WorkflowDefinition } from '../engine/engine.ts';
import { clusterById, markClusterFailed, markClusterRunning } from '../resources/clusters.ts';
import { nextQueued } from '../services/provisioning.ts';

const clusterOf = (ctx: StepContext) => clusterById(ctx.db, ctx.workflow.subject_id);

export const createClusterWorkflow = (deadlines: WorkflowDeadlines): WorkflowDefinition => ({
  steps: {
    async start(ctx) {
      const cluster = await clusterOf(ctx);
      if (!cluster) return { done: true };
      await ctx.driver.createCluster({ cluster_id: cluster.id, kubernetes_release: cluster.kaas_release });
      return { next: 'await' };
    },
    async await(ctx) {
      const controlPlane = await ctx.driver.getCluster(ctx.workflow.subject_id);
      if (!controlPlane) return { next: 'start' }; // gone before it ran: create it again
      if (controlPlane.status === 'ERROR') return { failed: controlPlane.message ?? 'The control plane failed.' };
      if (controlPlane.status !== 'RUNNING') return { wait: 2 };
      return { next: 'running' };
    },
    async running(ctx) {
      const cluster = await clusterOf(ctx);
      if (!cluster) return { done: true };
      // Its nodes turn Ready only once the pod network is up: installed with the control plane, before machines start.
      await ctx.driver.ensureNetwork(cluster.id);
      await ctx.db.transaction().execute(async (trx) => {
        // Told (event and notification) by the change itself.
        if (!(await markClusterRunning(trx, cluster.id, ctx.clock.now()))) return; // a re-run after a crash: done already
        // Machines requested while the control plane came up wait queued; the oldest may start now.
        const next = await nextQueued(trx, cluster.id);
        if (next) await ctx.wake(trx, next);
      });
      return { done: true };
    },
  },
  deadlines: {
    // A rollout that never gets a ready replica (an image that cannot be pulled, a datastore that is down) looks
    // like any rollout from outside: only the time it takes tells them apart.
    await: {
      seconds: () => deadlines.clusterReadySeconds,
      async expired(ctx, waited) {
        const controlPlane = await ctx.driver.getCluster(ctx.workflow.subject_id);
        // Ready by now, though no worker looked in time (workers down, a clock that jumped): not a failure.
        if (controlPlane?.status === 'RUNNING') return { next: 'running' };
        ctx.logger.warn({ waited, controlPlane }, 'the control plane did not become ready in time');
        const minutes = Math.round(deadlines.clusterReadySeconds / 60);
        return {
          failed: `The control plane did not become ready within ${minutes} minutes. Delete the cluster and create it again; if that fails too, the platform's operators can see why in its management cluster.`,
        };
      },
    },
  },
  async fail(ctx, message) {
    // Told (event and notification) by the change itself.
    return (trx) => markClusterFailed(trx, ctx.workflow.subject_id, message, ctx.clock.now()).then(() => {});
  },
});
