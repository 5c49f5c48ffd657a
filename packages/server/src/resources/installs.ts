// Installs: the only writer of `installs`. An install of a product starts pending; its createInstall workflow
// places it on a running cluster of the product in its region (installing), deploys one release per source
// (running, or failed with a status_message); regenerateProduct moves running installs to a new template.
// updateInstall changes the overrides of a running or failed install (one change at a time), and deleteInstall
// uninstalls its releases, then removes it. What
// an install references (its product, its cluster) lives in its workspace, checked again where workflows act.
import type { Schema } from '@platform/api-types';
import type { Kysely, Transaction } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { cancelWorkflows, type WorkflowStarter } from '../engine/engine.ts';
import { conflict, notFound, validationError } from '../errors.ts';
import { newId } from '../ids.ts';
import { type PageInput, workspacePage } from '../services/lists.ts';
import { memberWorkspaces, type WorkspaceCaller, type WorkspaceRef } from '../services/tenancy.ts';
import { recordEvent, recordEventAndNotify } from './events.ts';
import { revisionOf } from './install-revisions.ts';
import { productOfWorkspace } from './products.ts';
import { requireRegion } from './regions.ts';

type Db = Kysely<Database>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toInstall = (row: Row<'installs'>): Schema<'Install'> => ({
  id: row.id,
  workspace_id: row.workspace_id,
  product_id: row.product_id,
  region_id: row.region_id,
  cluster_id: row.cluster_id,
  status: row.status,
  workflow_id: row.workflow_id,
  overrides: row.overrides,
  status_message: row.status_message,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** Each override names a source of the product, each source at most once; 422 naming the override otherwise. */
function checkOverrides(overrides: Schema<'InstallOverride'>[], sources: { id: string }[]): void {
  const sourceIds = new Set(sources.map((s) => s.id));
  const seen = new Set<string>();
  overrides.forEach((override, i) => {
    const param = `overrides[${i}].template_helm_source_id`;
    if (!sourceIds.has(override.template_helm_source_id)) {
      throw validationError(param, `The product has no helm source ${override.template_helm_source_id}.`, "Use the id of one of the product's sources.");
    }
    if (seen.has(override.template_helm_source_id)) {
      throw validationError(param, `Helm source ${override.template_helm_source_id} is overridden twice.`, 'Merge the values into one override per source.');
    }
    seen.add(override.template_helm_source_id);
  });
}

export const listInstalls = (db: Db, input: PageInput) => workspacePage(db, input, 'installs', toInstall);

/** The id of an install the user may see (a member of its workspace); 404 otherwise. */
export async function visibleInstallId(db: Db, caller: WorkspaceCaller, id: string): Promise<string> {
  return (await visibleInstall(db, caller, id)).id;
}

async function visibleInstall(db: Db, caller: WorkspaceCaller, id: string): Promise<Row<'installs'>> {
  const row = await db.selectFrom('installs').selectAll().where('id', '=', id).where('workspace_id', 'in', memberWorkspaces(db, caller)).executeTakeFirst();
  if (!row) throw notFound('Install', id);
  return row;
}

export const getInstall = async (db: Db, caller: WorkspaceCaller, id: string): Promise<Schema<'Install'>> => toInstall(await visibleInstall(db, caller, id));

/** A new install of a product of the workspace (none: the product is not found), with its workflow. */
export async function createInstall(
  db: Db,
  workspace: WorkspaceRef | undefined,
  input: Schema<'InstallCreate'>,
  { now, workflows }: { now: number; workflows: WorkflowStarter },
): Promise<Schema<'Install'>> {
  const product = workspace ? await productOfWorkspace(db, input.product_id, workspace.id) : undefined;
  if (!product) throw notFound('Product', input.product_id, 'product_id');
  const regionId = await requireRegion(db, input.region_id);
  const overrides = input.overrides ?? [];
  checkOverrides(overrides, product.sources);
  const row = await inTransaction(db, async (trx) => {
    // Held until the install is written: a product deleted meanwhile is not found rather than a foreign-key error.
    const held = await trx.selectFrom('products').select('id').where('id', '=', product.id).forShare().executeTakeFirst();
    if (!held) throw notFound('Product', input.product_id, 'product_id');
    const installId = newId('ins');
    const workflowId = await workflows.start(trx, 'createInstall', installId);
    const row = await trx
      .insertInto('installs')
      .values({
        id: installId,
        workspace_id: product.workspace_id,
        product_id: product.id,
        region_id: regionId,
        cluster_id: null,
        status: 'pending',
        workflow_id: workflowId,
        overrides: JSON.stringify(overrides),
        status_message: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await tell(trx, 'install.created', row, now);
    return row;
  });
  return toInstall(row);
}

/** Statuses in which a change of the install may start: no workflow of it is in flight. */
const SETTLED: Schema<'InstallStatus'>[] = ['running', 'failed'];

/** The install, locked, when no change of it is in flight; 409 otherwise. */
async function lockSettled(trx: Transaction<Database>, caller: WorkspaceCaller, id: string): Promise<Row<'installs'>> {
  const install = await visibleInstall(trx, caller, id);
  const locked = await trx.selectFrom('installs').selectAll().where('id', '=', install.id).forUpdate().executeTakeFirstOrThrow();
  if (!SETTLED.includes(locked.status)) {
    throw conflict(`Install ${locked.id} is ${locked.status}; one change at a time.`, 'Wait until the install is running or failed, then try again.', {
      status: locked.status,
    });
  }
  return locked;
}

/**
 * running / failed → installing (pending when it was never placed) with the new overrides, and its updateInstall
 * workflow re-renders the releases. One change at a time: 409 while another is in flight.
 */
export async function updateInstall(
  db: Db,
  caller: WorkspaceCaller,
  id: string,
  input: Schema<'InstallUpdate'>,
  { now, workflows }: { now: number; workflows: WorkflowStarter },
): Promise<Schema<'Install'>> {
  const row = await inTransaction(db, async (trx) => {
    const locked = await lockSettled(trx, caller, id);
    const product = await productOfWorkspace(trx, locked.product_id, locked.workspace_id);
    if (!product) throw notFound('Product', locked.product_id);
    checkOverrides(input.overrides, product.sources);
    const workflowId = await workflows.start(trx, 'updateInstall', locked.id);
    const updated = await trx
      .updateTable('installs')
      .set({
        overrides: JSON.stringify(input.overrides),
        status: locked.cluster_id ? 'installing' : 'pending',
        workflow_id: workflowId,
        status_message: null,
        updated_at: now,
      })
      .where('id', '=', locked.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await tell(trx, 'install.updated', updated, now);
    return updated;
  });
  return toInstall(row);
}

/**
 * running / failed → installing with a revision's overrides; its rollbackInstall workflow redeploys the revision's
 * template, sources and overrides. One change at a time, as for an update; 422 for a revision it does not have.
 */
export async function rollbackInstall(
  db: Db,
  caller: WorkspaceCaller,
  id: string,
  input: Schema<'InstallRollback'>,
  { now, workflows }: { now: number; workflows: WorkflowStarter },
): Promise<Schema<'Install'>> {
  const row = await inTransaction(db, async (trx) => {
    const locked = await lockSettled(trx, caller, id);
    const revision = await revisionOf(trx, locked.id, input.revision);
    if (!revision || !locked.cluster_id) {
      throw validationError(
        'revision',
        `Install ${locked.id} has no revision ${input.revision}.`,
        'List its revisions (GET /v1/installs/{id}/revisions) and name one of them.',
      );
    }
    const workflowId = await workflows.start(trx, 'rollbackInstall', locked.id, { revision: revision.revision });
    const rolledBack = await trx
      .updateTable('installs')
      .set({ overrides: JSON.stringify(revision.overrides), status: 'installing', workflow_id: workflowId, status_message: null, updated_at: now })
      .where('id', '=', locked.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await tell(trx, 'install.rolled_back', rolledBack, now);
    return rolledBack;
  });
  return toInstall(row);
}

/**
 * any → uninstalling: whatever was under way for the install (its install workflow) stops, and its deleteInstall
 * workflow removes the releases and then the install. Uninstalling it again answers the install as it is.
 */
export async function deleteInstall(
  db: Db,
  caller: WorkspaceCaller,
  id: string,
  { now, workflows }: { now: number; workflows: WorkflowStarter },
): Promise<Schema<'Install'>> {
  const install = await visibleInstall(db, caller, id);
  const row = await inTransaction(db, async (trx) => {
    const locked = await trx.selectFrom('installs').selectAll().where('id', '=', install.id).forUpdate().executeTakeFirst();
    if (!locked) throw notFound('Install', id);
    if (locked.status === 'uninstalling') return locked;
    const cancelled = await cancelWorkflows(trx, [locked.id], 'cancelled: the install was uninstalled', now);
    const workflowId = await workflows.start(trx, 'deleteInstall', locked.id, { cancelled });
    return trx
      .updateTable('installs')
      .set({ status: 'uninstalling', workflow_id: workflowId, status_message: null, updated_at: now })
      .where('id', '=', locked.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return toInstall(row);
}

// What the workflows do to an install.

/** uninstalling → failed with its message: the uninstall gave up; uninstalling it again starts over. */
export async function failUninstall(db: Db, id: string, message: string, now: number): Promise<void> {
  await inTransaction(db, async (trx) => {
    const row = await trx
      .updateTable('installs')
      .set({ status: 'failed', status_message: `Uninstall failed: ${message}`, updated_at: now })
      .where('id', '=', id)
      .where('status', '=', 'uninstalling')
      .returningAll()
      .executeTakeFirst();
    if (row) await tell(trx, 'install.failed', row, now);
  });
}

/** The install is gone: its releases are uninstalled. Its last event holds it as it was (uninstalling). */
export async function removeInstall(db: Db, id: string, now: number): Promise<void> {
  await inTransaction(db, async (trx) => {
    const row = await trx.deleteFrom('installs').where('id', '=', id).where('status', '=', 'uninstalling').returningAll().executeTakeFirst();
    if (row) await tell(trx, 'install.uninstalled', row, now);
  });
}

export const installById = (db: Db, id: string) => db.selectFrom('installs').selectAll().where('id', '=', id).executeTakeFirst();

/** pending → installing on the chosen cluster (not when it is being uninstalled meanwhile). */
export async function placeInstall(db: Db, id: string, clusterId: string, now: number): Promise<void> {
  await db
    .updateTable('installs')
    .set({ cluster_id: clusterId, status: 'installing', status_message: null, updated_at: now })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/** The template the install's releases were deployed at (updated_at too when given). */
export async function setInstallTemplate(db: Db, id: string, templateId: string, now?: number): Promise<void> {
  await db
    .updateTable('installs')
    .set({ template_id: templateId, ...(now === undefined ? {} : { updated_at: now }) })
    .where('id', '=', id)
    .execute();
}

/**
 * → running, or → failed with its message: a deploy's end, told as an event and to the workspace's members in the
 * same transaction; false when it was so already (only the run that changes it tells).
 */
export async function finishInstall(db: Db, id: string, outcome: { status: 'running' } | { status: 'failed'; message: string }, now: number): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await trx
      .updateTable('installs')
      .set({ status: outcome.status, status_message: outcome.status === 'failed' ? outcome.message : null, updated_at: now })
      .where('id', '=', id)
      .where('status', 'not in', [outcome.status, 'uninstalling'])
      .returningAll()
      .executeTakeFirst();
    if (!row) return false;
    const notice =
      outcome.status === 'running'
        ? { title: `Install ${row.id} is running`, body: `Its releases are deployed on cluster ${row.cluster_id}.`, severity: 'info' as const }
        : { title: `Install ${row.id} failed`, body: outcome.message, severity: 'critical' as const };
    await recordEventAndNotify(trx, eventOf(`install.${outcome.status}`, row), now, notice);
    return true;
  });
}

type InstallEvent = Extract<Schema<'EventType'>, `install.${string}`>;

/** The event of a change of the install, typed by its literal type (what may also notify). */
const eventOf = <T extends InstallEvent>(type: T, row: Row<'installs'>) => ({
  type,
  workspace_id: row.workspace_id,
  object_type: 'install' as const,
  object_id: row.id,
  object: toInstall(row),
});

const tell = (db: Db, type: InstallEvent, row: Row<'installs'>, now: number) => recordEvent(db, eventOf(type, row), now);

/**
 * The running installs of a product not yet at its template; only those of the product's workspace on clusters of
 * that workspace (checked again as the workflow acts).
 */
export const installsBehindTemplate = (db: Db, product: { id: string; workspace_id: string; template_id: string }) =>
  db
    .selectFrom('installs')
    .selectAll('installs')
    .innerJoin('clusters', (join) => join.onRef('clusters.id', '=', 'installs.cluster_id').on('clusters.workspace_id', '=', product.workspace_id))
    .where('installs.workspace_id', '=', product.workspace_id)
    .where('product_id', '=', product.id)
    .where('installs.status', '=', 'running')
    .where((eb) => eb.or([eb('installs.template_id', 'is', null), eb('installs.template_id', '!=', product.template_id)]))
    .execute();
