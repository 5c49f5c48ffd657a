// Suspend: graceful stop, snapshot, delete the server → suspension `suspended`, machine `suspended`.
// Resume: a new server from the snapshot, wait until it runs and its node is Ready, delete the snapshot → machine `ready` with the
// same node_name, suspension `resumed`. Each provider call is idempotent by the workflow's label, so a re-run
// after a crash adopts the snapshot or server the earlier run made.

import type { WorkflowDeadlines } from '../config.ts';
import type { StepContext, StepDeadline, WorkflowDefinition } from '../engine/engine.ts';
import { machineForWorkflow, markMachine, setMachineState } from '../resources/machines.ts';
import { notifyWorkspace } from '../resources/notifications.ts';
import { recordSnapshot, setSuspensionStatus, suspensionById } from '../resources/suspensions.ts';
import { machineCredential } from './credentials.ts';

/** A snapshot still not available this long (s) after it was asked for fails the suspension. */
const SNAPSHOT_DEADLINE_SECONDS = 3600;
const KEPT = 'The machine keeps its server.';

/** The snapshot that never became available goes, and the suspension fails (its server is kept). */
const snapshotDeadline: StepDeadline = {
  seconds: () => SNAPSHOT_DEADLINE_SECONDS,
  async expired(ctx) {
    const subject = await subjectOf(ctx);
    if (!subject) return { done: true };
    await ctx.provider.deleteSnapshot(String(ctx.state.snapshot_id), await machineCredential(ctx, subject.machine.provider_id));
    return { failed: `Snapshot ${String(ctx.state.snapshot_id)} was not available ${SNAPSHOT_DEADLINE_SECONDS / 60} minutes after it was asked for. ${KEPT}` };
  },
};

async function subjectOf(ctx: StepContext) {
  const suspension = await suspensionById(ctx.db, ctx.workflow.subject_id);
  if (!suspension) return undefined;
  const machine = await machineForWorkflow(ctx.db, suspension.provider_id);
  return machine ? { suspension, machine } : undefined;
}

export const suspendMachineWorkflow: WorkflowDefinition = {
  deadlines: { await_snapshot: snapshotDeadline },
  steps: {
    async start(ctx) {
      const subject = await subjectOf(ctx);
      if (!subject) return { done: true };
      const serverId = (ctx.state.server_id as string | undefined) ?? subject.machine.server_id;
      if (!serverId) return { failed: 'The machine has no server to suspend.' };
      await ctx.provider.shutdownServer(serverId, await machineCredential(ctx, subject.machine.provider_id));
      return { next: 'snapshot', state: { server_id: serverId } };
    },
    async snapshot(ctx) {
      const subject = await subjectOf(ctx);
      if (!subject) return { done: true };
      const snapshot = await ctx.provider.createSnapshot(
        String(ctx.state.server_id),
        { workflow: ctx.workflow.id, machine: subject.machine.provider_id },
        await machineCredential(ctx, subject.machine.provider_id),
      );
      await recordSnapshot(ctx.db, subject.suspension.id, snapshot.id);
      return { next: 'await_snapshot', state: { snapshot_id: snapshot.id } };
    },
    async await_snapshot(ctx) {
      const subject = await subjectOf(ctx);
      if (!subject) return { done: true };
      const credential = await machineCredential(ctx, subject.machine.provider_id);
      const snapshot = await ctx.provider.getSnapshot(String(ctx.state.snapshot_id), credential);
      if (!snapshot) return { failed: `The snapshot disappeared before it completed. ${KEPT}` };
      // The provider could not make it (Hetzner's image status `unavailable`): it never becomes available, and goes.
      if (snapshot.status === 'failed') {
        await ctx.provider.deleteSnapshot(snapshot.id, credential);
        return { failed: `The cloud provider could not make snapshot ${snapshot.id} (its status is unavailable). ${KEPT}` };
      }
      if (snapshot.status !== 'available') return { wait: 3 };
      return { next: 'delete_server' };
    },
    async delete_server(ctx) {
      const subject = await subjectOf(ctx);
      if (!subject) return { done: true };
      await ctx.provider.deleteServer(String(ctx.state.server_id), await machineCredential(ctx, subject.machine.provider_id));
      await ctx.db.transaction().execute(async (trx) => {
        await setMachineState(trx, subject.machine.provider_id, { status: 'suspended', server_id: null });
        await setSuspensionStatus(trx, subject.suspension.id, 'suspending', 'suspended', ctx.clock.now());
      });
      return { done: true };
    },
  },
  async fail(ctx, message) {
    const subject = await subjectOf(ctx);
    if (!subject) return;
    // The server was shut down for the snapshot: `ready` is true only once it runs again, else the machine is failed.
    const back = await powerBackOn(ctx, subject.machine);
    await ctx.db.transaction().execute(async (trx) => {
      const now = ctx.clock.now();
      if (!(await setSuspensionStatus(trx, subject.suspension.id, 'suspending', 'failed', now))) return; // told already
      await markMachine(trx, subject.machine.provider_id, back.running ? 'ready' : 'failed', now);
      await notifyWorkspace(trx, subject.suspension.workspace_id, now, {
        type: 'suspension.failed',
        resource_type: 'suspension',
        resource_id: subject.suspension.id,
        title: `Suspending ${subject.machine.node_name} failed`,
        body: `${message} ${back.said}`,
        severity: back.running ? 'warning' : 'critical',
      });
    });
  },
};

/** Powers the machine's server on again after a suspension that failed; says whether it runs, and in words. */
async function powerBackOn(ctx: StepContext, machine: { provider_id: string; server_id: string | null }): Promise<{ running: boolean; said: string }> {
  const lost = 'The machine is failed: delete it, or request a new one.';
  if (!machine.server_id) return { running: false, said: `It has no server any more. ${lost}` };
  try {
    const credential = await machineCredential(ctx, machine.provider_id);
    await ctx.provider.powerOnServer(machine.server_id, credential);
    const server = await ctx.provider.getServer(machine.server_id, credential);
    if (!server) return { running: false, said: `Its server ${machine.server_id} is gone. ${lost}` };
    if (server.status === 'off') return { running: false, said: `Its server ${machine.server_id} stays off. ${lost}` };
    return { running: true, said: `Its server ${machine.server_id} was powered on again (${server.status}).` };
  } catch (error) {
    ctx.logger.warn({ err: error, server_id: machine.server_id }, 'powering the server on after a failed suspension failed');
    return { running: false, said: `Its server ${machine.server_id} could not be powered on again (${(error as Error).message}). ${lost}` };
  }
}

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
        if (!(await setSuspensionStatus(trx, subject.suspension.id, 'resuming', 'resumed', now))) return; // a re-run after a crash: done already
        await markMachine(trx, subject.machine.provider_id, 'ready', now);
        await notifyWorkspace(trx, subject.suspension.workspace_id, now, {
          type: 'suspension.resumed',
          resource_type: 'suspension',
          resource_id: subject.suspension.id,
          title: `${subject.machine.node_name} is running again`,
          body: `Restored from snapshot ${subject.suspension.snapshot_id} on a new server.`,
          severity: 'info',
        });
      });
      return { done: true };
    },
  },
  async fail(ctx, message) {
    const subject = await subjectOf(ctx);
    if (!subject) return;
    await ctx.db.transaction().execute(async (trx) => {
      const now = ctx.clock.now();
      if (!(await setSuspensionStatus(trx, subject.suspension.id, 'resuming', 'failed', now))) return; // told already
      await notifyWorkspace(trx, subject.suspension.workspace_id, now, {
        type: 'suspension.resume_failed',
        resource_type: 'suspension',
        resource_id: subject.suspension.id,
        title: `Resuming ${subject.machine.node_name} failed`,
        body: message,
        severity: 'critical',
      });
    });
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
