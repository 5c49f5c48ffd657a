// Suspensions: the only writer of `suspensions`. suspending → suspended (a snapshot, no server) → resuming →
// resumed, or failed; only a suspended machine is resumed (409 otherwise, decided under the row's lock). A resume
// that fails with the snapshot kept and no server left goes back to suspended, so it can be resumed again.
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database, NewRow, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { WorkflowStarter } from '../engine/engine.ts';
import { conflict, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { type PageInput, workspacePage } from '../services/lists.ts';
import { memberWorkspaces, type WorkspaceCaller } from '../services/tenancy.ts';
import { recordEvent, recordEventAndNotify } from './events.ts';

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
    // The machine's row, locked as its deletion locks it: a machine being deleted is not resumed (its resume would
    // make a server that nothing owns), and a deletion that comes later cancels this resume.
    const machine = await trx.selectFrom('machines').select('status').where('provider_id', '=', suspension.provider_id).forUpdate().executeTakeFirst();
    if (machine?.status !== 'suspended') {
      throw conflict(
        `Machine ${suspension.provider_id} of suspension ${suspension.id} is ${machine?.status ?? 'deleted'}; only a suspended machine can be resumed.`,
        machine?.status === 'deleting'
          ? 'The machine is being deleted, with its snapshot; request a new machine instead.'
          : 'Read the machine to see its state.',
        { status: suspension.status, machine_status: machine?.status ?? null },
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

// The ends of the workflows. Each is told as an event in the transaction of its change, and, but for a suspension
// that went as asked, to the workspace's members with it; each answers false when the suspension was not in the
// status it leaves (a re-run after a crash: done and told already).

/** suspending → suspended: the machine's server is gone, its snapshot kept. */
export async function markSuspended(db: Db, id: string, now: number): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await transition(trx, id, 'suspending', 'suspended');
    if (row) await recordEvent(trx, eventOf('suspension.suspended', row), now);
    return row !== undefined;
  });
}

/** suspending → failed: `message` says why and what became of the machine, a warning when it runs again. */
export async function failSuspension(db: Db, id: string, { message, machineRuns }: { message: string; machineRuns: boolean }, now: number): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await transition(trx, id, 'suspending', 'failed');
    if (row) {
      await recordEventAndNotify(trx, eventOf('suspension.failed', row), now, {
        title: `Suspending ${row.node_name} failed`,
        body: message,
        severity: machineRuns ? 'warning' : 'critical',
      });
    }
    return row !== undefined;
  });
}

/**
 * resuming → resumed: the machine runs again, on a new server made from `snapshotId`, which the resume has deleted
 * (the record's `snapshot_id` is null from now on, as the contract says).
 */
export async function markResumed(db: Db, id: string, snapshotId: string, now: number): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await transition(trx, id, 'resuming', 'resumed', { snapshot_id: null });
    if (row) {
      await recordEventAndNotify(trx, eventOf('suspension.resumed', row), now, {
        title: `${row.node_name} is running again`,
        body: `Restored from snapshot ${snapshotId} on a new server.`,
        severity: 'info',
      });
    }
    return row !== undefined;
  });
}

/**
 * A resume failed, with why. `resumable`: its snapshot is kept and no server of it is left, so the machine is as it
 * was before the resume: resuming → suspended, and it can be resumed again. Otherwise resuming → failed.
 */
export async function failResume(db: Db, id: string, message: string, now: number, { resumable }: { resumable: boolean }): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await transition(trx, id, 'resuming', resumable ? 'suspended' : 'failed');
    if (row) {
      await recordEventAndNotify(trx, eventOf('suspension.resume_failed', row), now, {
        title: `Resuming ${row.node_name} failed`,
        body: row.status === 'suspended' ? `${message} The machine is suspended as before: resume it again, or delete it.` : message,
        severity: row.status === 'suspended' ? 'warning' : 'critical',
      });
    }
    return row !== undefined;
  });
}

const transition = (db: Db, id: string, from: Status, status: Status, also: { snapshot_id?: null } = {}) =>
  db
    .updateTable('suspensions')
    .set({ status, ...also })
    .where('id', '=', id)
    .where('status', '=', from)
    .returningAll()
    .executeTakeFirst();

/** The event of a change of the suspension, typed by its literal type (what may also notify). */
const eventOf = <T extends Extract<Schema<'EventType'>, `suspension.${string}`>>(type: T, row: Row<'suspensions'>) => ({
  type,
  workspace_id: row.workspace_id,
  object_type: 'suspension' as const,
  object_id: row.id,
  object: toSuspension(row),
});

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

/** The demo data's suspensions (db/seed.ts), written as they are: no creation's rules, quota or workflow. */
export async function seedSuspensions(db: Kysely<Database>, rows: NewRow<'suspensions'>[]): Promise<void> {
  await db.insertInto('suspensions').values(rows).execute();
}
