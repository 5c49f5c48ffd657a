// resumeSuspension: a new server from the snapshot, wait until it runs and its node is Ready, delete the snapshot
// → machine `ready` with the same node_name, suspension `resumed`. Each provider call is idempotent by the
// workflow's label, so a re-run after a crash adopts the server the earlier run made.
import type { WorkflowDeadlines } from '../config.ts';
import type { StepDeadline, WorkflowDefinition } from '../engine/engine.ts';
import { markMachine, setMachineState } from '../resources/machines.ts';
import { failResume, markResumed } from '../resources/suspensions.ts';
import { machineCredential } from './credentials.ts';
import { subjectOf } from './suspension-subject.ts';

const resumeSuspension: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      const subject = await subjectOf(ctx);
      if (!subject) return { done: true };
      const snapshotId = subject.suspension.snapshot_id;
      if (!snapshotId) return { failed: 'The suspension has no snapshot to resume from.' };
      const credential = await machineCredential(ctx, subject.machine.provider_id);
      const server = await ctx.provider.createServer({
        name: subject.machine.node_name,
        server_type: subject.machine.server_type,
        location: subject.machine.provider_config.region,
        image: snapshotId,
        labels: { workflow: ctx.workflow.id, machine: subject.machine.provider_id },
        cluster_id: subject.machine.cluster_id,
        ...(credential ? { credential } : {}),
      });
      await setMachineState(ctx.db, subject.machine.provider_id, { server_id: server.id });
      return { next: 'boot', state: { server_id: server.id, snapshot_id: snapshotId } };
    },
    async boot(ctx) {
      const subject = await subjectOf(ctx);
      if (!subject) return { done: true };
      const server = await ctx.provider.getServer(String(ctx.state.server_id), await machineCredential(ctx, subject.machine.provider_id));
      if (!server) return { next: 'start' };
      if (server.status !== 'running') return { wait: 2, state: { boot: `its server is still ${server.status}` } };
      // Ready again means the node is Ready in the cluster again, as for a provisioned machine.
      if (!(await ctx.driver.nodeReady(subject.machine.cluster_id, subject.machine.node_name)))
        return { wait: 2, state: { boot: 'its server runs but its node is not Ready in the cluster' } };
      return { next: 'delete_snapshot' };
    },
    async delete_snapshot(ctx) {
      const subject = await subjectOf(ctx);
      if (!subject) return { done: true };
      await ctx.provider.deleteSnapshot(String(ctx.state.snapshot_id), await machineCredential(ctx, subject.machine.provider_id));
      const now = ctx.clock.now();
      await ctx.db.transaction().execute(async (trx) => {
        // Told (event and notification) by the change itself.
        if (!(await markResumed(trx, subject.suspension.id, String(ctx.state.snapshot_id), now))) return; // a re-run after a crash: done already
        await markMachine(trx, subject.machine.provider_id, 'ready', now);
      });
      return { done: true };
    },
  },
  async fail(ctx, message) {
    // A server this resume made and left is deleted, so the machine is as it was before: its snapshot (a resuming
    // suspension's snapshot changes only as it is resumed) and no server, to be resumed again (failResume). Told
    // (event and notification) by the change itself, once: a re-run after a crash finds it settled already.
    const subject = await subjectOf(ctx);
    let serverLeft = false;
    if (subject?.machine.server_id) {
      try {
        await ctx.provider.deleteServer(subject.machine.server_id, await machineCredential(ctx, subject.machine.provider_id));
        await setMachineState(ctx.db, subject.machine.provider_id, { server_id: null });
      } catch (error) {
        ctx.logger.warn(
          { err: error, machine: subject.machine.provider_id },
          'deleting the server of a failed resume failed; the suspension is failed, and deleting the machine deletes the server',
        );
        serverLeft = true;
      }
    }
    const resumable = subject?.suspension.snapshot_id != null && !serverLeft;
    return (trx) => failResume(trx, ctx.workflow.subject_id, message, ctx.clock.now(), { resumable }).then(() => {});
  },
};

/**
 * A resumed node not Ready by the machine boot deadline: the new server is deleted and the resume fails; the
 * snapshot is kept, so the machine's disk is not lost.
 */
const resumeBootDeadline = (seconds: number): StepDeadline => ({
  seconds: () => seconds,
  async expired(ctx) {
    const subject = await subjectOf(ctx);
    if (!subject) return { done: true };
    await ctx.provider.deleteServer(String(ctx.state.server_id), await machineCredential(ctx, subject.machine.provider_id));
    await setMachineState(ctx.db, subject.machine.provider_id, { server_id: null });
    const why = typeof ctx.state.boot === 'string' ? ctx.state.boot : 'its node is not Ready';
    return {
      failed: `${subject.machine.node_name} was not Ready ${seconds} s after its server was created from snapshot ${String(ctx.state.snapshot_id)} (${why}); the server was deleted and the snapshot kept.`,
    };
  },
});

export const resumeSuspensionWorkflow = (deadlines: WorkflowDeadlines): WorkflowDefinition => ({
  ...resumeSuspension,
  deadlines: { boot: resumeBootDeadline(deadlines.machineBootSeconds) },
});
