// Suspensions: the only writer of `suspensions`. suspending → suspended (a snapshot, no server) → resuming →
// resumed, or failed; only a suspended machine is resumed (409 otherwise, decided under the row's lock).
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { WorkflowStarter } from '../engine/engine.ts';
import { conflict, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { type PageInput, workspacePage } from '../services/lists.ts';
import { memberWorkspaces, type WorkspaceCaller } from '../services/tenancy.ts';
import { recordEvent } from './events.ts';

type Db = Kysely<Database>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toSuspension = (row: Row<'suspensions'>): Schema<'Suspension'> => ({
  id: row.id,
  workspace_id: row.workspace_id,
  cluster_id: row.cluster_id,
  provider_id: row.provider_id,
  node_name: row.node_name,
  reason: row.reason,
  status: row.status,
  snapshot_id: row.snapshot_id,
  created_at: row.created_at,
  expires_at: row.expires_at,
});
type Status = Row<'suspensions'>['status'];

export const listSuspensions = (db: Db, input: PageInput) => workspacePage(db, input, 'suspensions', toSuspension);

export async function getSuspension(db: Db, caller: WorkspaceCaller, id: string): Promise<Schema<'Suspension'>> {
  const row = await db.selectFrom('suspensions').selectAll().where('id', '=', id).where('workspace_id', 'in', memberWorkspaces(db, caller)).executeTakeFirst();
  if (!row) throw notFound('Suspension', id);
  return toSuspension(row);
}

/** A manual suspension of a machine (in the transaction that marks the machine suspending); its workflow starts. */
export async function startSuspension(
  trx: Db,
  machine: { provider_id: string; cluster_id: string; node_name: string },
  workspaceId: string,
  { now, workflows }: { now: number; workflows: WorkflowStarter },
): Promise<Schema<'Suspension'>> {
  const id = newId('sus');
  await workflows.start(trx, 'suspendMachine', id);
  const row = await trx
    .insertInto('suspensions')
    .values({
      id,
      workspace_id: workspaceId,
      cluster_id: machine.cluster_id,
      provider_id: machine.provider_id,
      node_name: machine.node_name,
      reason: 'manual',
      status: 'suspending',
      snapshot_id: null,
      created_at: now,
      expires_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toSuspension(row);
}

/** suspended → resuming, under the row's lock; the resume workflow starts in the same transaction. */
export async function resumeSuspension(db: Db, caller: WorkspaceCaller, id: string, workflows: WorkflowStarter): Promise<Schema<'Suspension'>> {
  const row = await inTransaction(db, async (trx) => {
    const suspension = await trx
      .selectFrom('suspensions')
      .selectAll()
      .where('id', '=', id)
      .where('workspace_id', 'in', memberWorkspaces(trx, caller))
      .forUpdate()
      .executeTakeFirst();
    if (!suspension) throw notFound('Suspension', id);
    if (suspension.status !== 'suspended') {
      throw conflict(
        `Suspension ${suspension.id} is ${suspension.status}, not suspended.`,
        'Only a suspended machine can be resumed; read the suspension to follow it.',
        { status: suspension.status },
      );
    }
    await workflows.start(trx, 'resumeSuspension', suspension.id);
    return trx.updateTable('suspensions').set({ status: 'resuming' }).where('id', '=', suspension.id).returningAll().executeTakeFirstOrThrow();
  });
  return toSuspension(row);
}

export const suspensionById = (db: Db, id: string) => db.selectFrom('suspensions').selectAll().where('id', '=', id).executeTakeFirst();

export async function recordSnapshot(db: Db, id: string, snapshotId: string): Promise<void> {
  await db.updateTable('suspensions').set({ snapshot_id: snapshotId }).where('id', '=', id).execute();
}

/** The event each end of a workflow tells: `from` → `status`. */
const EVENTS: Partial<Record<`${Status}→${Status}`, Schema<'EventType'>>> = {
  'suspending→suspended': 'suspension.suspended',
  'suspending→failed': 'suspension.failed',
  'resuming→resumed': 'suspension.resumed',
  'resuming→failed': 'suspension.resume_failed',
};

/**
 * `from` → `status`, told as an event when it ends a workflow; false when the suspension is not `from` (a re-run
 * after a crash: done and told already).
 */
export async function setSuspensionStatus(db: Db, id: string, from: Status, status: Status, now: number): Promise<boolean> {
  const row = await db.updateTable('suspensions').set({ status }).where('id', '=', id).where('status', '=', from).returningAll().executeTakeFirst();
  if (!row) return false;
  const type = EVENTS[`${from}→${status}`];
  if (type) await recordEvent(db, { type, workspace_id: row.workspace_id, object_type: 'suspension', object_id: row.id, object: toSuspension(row) }, now);
  return true;
}

/** The snapshots that suspensions not resumed hold (what the leftovers reconciler must keep). */
export async function heldSnapshotIds(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('suspensions').select('snapshot_id').where('snapshot_id', 'is not', null).where('status', '!=', 'resumed').execute();
  return rows.map((row) => row.snapshot_id!);
}

/** The ids and snapshots of a machine's suspensions (what deleting the machine cancels and removes). */
export const suspensionsOfMachine = (db: Db, providerId: string) =>
  db.selectFrom('suspensions').select(['id', 'snapshot_id']).where('provider_id', '=', providerId).execute();

export async function deleteSuspensionsOfMachine(trx: Db, providerId: string): Promise<void> {
  await trx.deleteFrom('suspensions').where('provider_id', '=', providerId).execute();
}
