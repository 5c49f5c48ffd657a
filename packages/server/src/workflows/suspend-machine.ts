import type { StepContext, StepDeadline, WorkflowDefinition } from '../engine/engine.ts';
import { markMachine, setMachineState } from '../resources/machines.ts';
import { failSuspension, markSuspended, recordSnapshot } from '../resources/suspensions.ts';
import { machineCredential } from './credentials.ts';
import { subjectOf } from './suspension-subject.ts';

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
        await markSuspended(trx, subject.suspension.id, ctx.clock.now());
      });
      return { done: true };
    },
  },
  async fail(ctx, message) {
    const subject = await subjectOf(ctx);
    if (!subject) return async () => {};
    // The server was shut down for the snapshot: `ready` is true only once it runs again, else the machine is failed.
    const back = await powerBackOn(ctx, subject.machine);
    return async (trx) => {
      const now = ctx.clock.now();
      // Told (event and notification) by the change itself, once.
      const told = await failSuspension(trx, subject.suspension.id, { message: `${message} ${back.said}`, machineRuns: back.running }, now);
      if (told) await markMachine(trx, subject.machine.provider_id, back.running ? 'ready' : 'failed', now);
    };
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
