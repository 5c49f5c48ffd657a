// The subject of both suspension kinds (suspendMachine, resumeSuspension): the suspension and its machine.
import type { StepContext } from '../engine/engine.ts';
import { machineForWorkflow } from '../resources/machines.ts';
import { suspensionById } from '../resources/suspensions.ts';

/** The suspension and its machine; undefined once either is gone. */
export async function subjectOf(ctx: StepContext) {
  const suspension = await suspensionById(ctx.db, ctx.workflow.subject_id);
  if (!suspension) return undefined;
  const machine = await machineForWorkflow(ctx.db, suspension.provider_id);
  return machine ? { suspension, machine } : undefined;
}
