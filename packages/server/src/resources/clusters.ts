// Clusters: the only writer of `clusters`. A cluster is created PROVISIONING (its workflow brings the control
// plane up: RUNNING, or ERROR), counts toward kaas/clusters, and is deleted only when it holds no machine nor install.
import type { ReceivedBody, Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, NewRow, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { deleteWorkflowsOf, type WorkflowStarter } from '../engine/engine.ts';
import { ApiError, conflict, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { type ClusterDriver, type ComputeProvider, ControlPlaneUnavailable } from '../providers/types.ts';
import { type PageInput, workspacePage } from '../services/lists.ts';
import { enforceQuota } from '../services/quotas.ts';
import type { SecretBox } from '../services/secrets.ts';
import { memberWorkspaces, type WorkspaceCaller, type WorkspaceRef } from '../services/tenancy.ts';
import { activeCredentials } from './cloud-credentials.ts';
import { recordEvent, recordEventAndNotify } from './events.ts';

type Db = Kysely<Database>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toCluster = (row: Row<'clusters'>): Schema<'Cluster'> => ({
  id: row.id,
  name: row.name,
  workspace_id: row.workspace_id,
  region_id: row.region_id,
  kaas: { version: row.kaas_version, status: row.status, status_message: row.status_message },
  created_at: row.created_at,
});

/** The event of a change of the cluster, typed by its literal type (what may also notify). */
const eventOf = <T extends Schema<'EventType'>>(type: T, row: Row<'clusters'>) => ({
  type,
  workspace_id: row.workspace_id,
  object_type: 'cluster' as const,
  object_id: row.id,
  object: toCluster(row),
});

export const listClusters = (db: Db, input: PageInput) => workspacePage(db, input, 'clusters', toCluster);

/** A cluster the user may see (a member of its workspace); 404 naming `param` otherwise. */
export async function visibleCluster(db: Db, caller: WorkspaceCaller, id: string, param?: string): Promise<Row<'clusters'>> {
  const row = await db.selectFrom('clusters').selectAll().where('id', '=', id).where('workspace_id', 'in', memberWorkspaces(db, caller)).executeTakeFirst();
  if (!row) throw notFound('Cluster', id, param);
  return row;
}

export const getCluster = async (db: Db, caller: WorkspaceCaller, id: string): Promise<Schema<'Cluster'>> => toCluster(await visibleCluster(db, caller, id));

export async function createCluster(
  db: Db,
  workspace: WorkspaceRef,
  input: ReceivedBody<'createCluster'>,
  /** The region checked, and the patch release of the cluster's version (`releaseForNewCluster`). */
  { regionId, release }: { regionId: string; release: string },
  { now, workflows }: { now: number; workflows: WorkflowStarter },
): Promise<Schema<'Cluster'>> {
  const row = await inTransaction(db, async (trx) => {
    await enforceQuota(trx, workspace, { 'kaas/clusters': 1 }, now);
    const taken = await trx.selectFrom('clusters').select('id').where('workspace_id', '=', workspace.id).where('name', '=', input.name).executeTakeFirst();
    if (taken) throw nameTaken(input.name);
    const id = newId('cl');
    await workflows.start(trx, 'createCluster', id);
    const row = await trx
      .insertInto('clusters')
      .values({
        id,
        workspace_id: workspace.id,
        name: input.name,
        region_id: regionId,
        kaas_version: input.kaas_version,
        kaas_release: release,
        status: 'PROVISIONING',
        status_message: 'Creating control plane',
        created_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordEvent(trx, eventOf('cluster.created', row), now);
    return row;
  });
  return toCluster(row);
}

/** A new name, unique in the workspace (the unique index decides a race between two renames): 409 naming `name`. */
export async function renameCluster(db: Db, caller: WorkspaceCaller, id: string, input: Schema<'ClusterUpdate'>): Promise<Schema<'Cluster'>> {
  const cluster = await visibleCluster(db, caller, id);
  const row = await db
    .updateTable('clusters')
    .set({ name: input.name })
    .where('id', '=', cluster.id)
    .returningAll()
    .executeTakeFirst()
    .catch((error: unknown) => {
      if ((error as { code?: string }).code === '23505') throw nameTaken(input.name);
      throw error;
    });
  if (!row) throw notFound('Cluster', id);
  return toCluster(row);
}

const nameTaken = (name: string) => conflict(`The workspace has a cluster named ${name} already.`, 'Choose another name.', undefined, 'name');

export async function deleteCluster(db: Db, caller: WorkspaceCaller, id: string): Promise<void> {
  await inTransaction(db, async (trx) => {
    const cluster = await visibleCluster(trx, caller, id);
    await trx.selectFrom('clusters').select('id').where('id', '=', cluster.id).forUpdate().execute();
    const { machines, installs } = await trx
      .selectNoFrom([
        sql<number>`(SELECT count(*) FROM machines WHERE cluster_id = ${cluster.id})::int`.as('machines'),
        sql<number>`(SELECT count(*) FROM installs WHERE cluster_id = ${cluster.id})::int`.as('installs'),
      ])
      .executeTakeFirstOrThrow();
    if (machines + installs > 0) {
      const held = Object.entries({ machines, installs }).filter(([, count]) => count > 0);
      const counted = held.map(([kind, count]) => `${count} ${count === 1 ? kind.slice(0, -1) : kind}`);
      throw new ApiError('conflict', `Cluster ${cluster.id} still has ${counted.join(' and ')}.`, {
        suggestion: `Delete its ${held.map(([kind]) => kind).join(' and ')} first.`,
        details: { machines, installs },
      });
    }
    await deleteWorkflowsOf(trx, [cluster.id]);
    await trx.deleteFrom('clusters').where('id', '=', cluster.id).execute();
  });
}

/**
 * After a cluster's deletion: its firewall and the load balancers made for it at the cloud provider go, in the
 * platform's project and in each of the workspace's BYOM projects (its servers are gone, as its machines are). A
 * firewall a leftover server still has is left to the leftovers reconciler, which deletes it after that server.
 */
export async function deleteClusterResources(
  db: Db,
  provider: ComputeProvider,
  secrets: SecretBox,
  clusterId: string,
  workspaceId: string | undefined,
): Promise<void> {
  if (!provider.deleteClusterResources) return;
  const byom = workspaceId === undefined ? [] : await activeCredentials(db, secrets, workspaceId);
  // One project's failure (a revoked token, an outage) does not keep the others' firewalls.
  const failures: unknown[] = [];
  for (const credential of [undefined, ...byom]) await provider.deleteClusterResources(clusterId, credential).catch((error: unknown) => failures.push(error));
  if (failures.length > 0) throw new AggregateError(failures, `deleting what cluster ${clusterId} has at the provider failed in ${failures.length} project(s)`);
}

/**
 * A kubeconfig of a running cluster (409 otherwise) with a token that expires after ttlSeconds. Who may have one
 * (admins and the owner) is the operation's x-required-role, enforced by the binding.
 */
export async function clusterKubeconfig(
  db: Db,
  driver: ClusterDriver,
  caller: WorkspaceCaller,
  id: string,
  ttlSeconds: number,
): Promise<Schema<'ClusterKubeconfig'>> {
  const cluster = await visibleCluster(db, caller, id);
  if (cluster.status !== 'RUNNING') {
    throw conflict(`Cluster ${cluster.id} is ${cluster.status}; a kubeconfig needs a running cluster.`, 'Wait until the cluster is RUNNING.', {
      status: cluster.status,
    });
  }
  try {
    const { kubeconfig, expires_at } = await driver.kubeconfig(cluster.id, ttlSeconds);
    return { cluster_id: cluster.id, kubeconfig, expires_at };
  } catch (error) {
    // A running cluster whose control plane does not serve now (asleep, no ready replica): it may again.
    if (!(error instanceof ControlPlaneUnavailable)) throw error;
    throw conflict(error.message, 'Retry once the control plane serves again; the cluster’s status_message says what it waits for.', {
      status: cluster.status,
    });
  }
}

/** The running clusters and what their status message says now: what the control-plane watch compares. */
export const runningClusters = (db: Db) => db.selectFrom('clusters').select(['id', 'status_message']).where('status', '=', 'RUNNING').execute();

/**
 * A running cluster's status message, as its control plane's state tells it (a roll, an upgrade, a certificate
 * rotation, asleep); null when there is nothing to say. Written only while the cluster runs, and only when it differs.
 */
export async function setRunningClusterMessage(db: Db, id: string, message: string | null): Promise<void> {
  await db
    .updateTable('clusters')
    .set({ status_message: message })
    .where('id', '=', id)
    .where('status', '=', 'RUNNING')
    .where(sql<boolean>`status_message IS DISTINCT FROM ${message}`)
    .execute();
}

/** The id of every cluster (what a cluster's firewall at the cloud provider must still serve). */
export const clusterIds = async (db: Db): Promise<string[]> => (await db.selectFrom('clusters').select('id').execute()).map((row) => row.id);

export const clusterById = (db: Db, id: string) => db.selectFrom('clusters').selectAll().where('id', '=', id).executeTakeFirst();

/**
 * PROVISIONING → RUNNING, told as an event and to the workspace's members in the same transaction; false when it
 * is not provisioning (a re-run after a crash: done already).
 */
export async function markClusterRunning(db: Db, id: string, now: number): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await trx
      .updateTable('clusters')
      .set({ status: 'RUNNING', status_message: null })
      .where('id', '=', id)
      .where('status', '=', 'PROVISIONING')
      .returningAll()
      .executeTakeFirst();
    if (!row) return false;
    await recordEventAndNotify(trx, eventOf('cluster.running', row), now, {
      title: `Cluster ${row.name} is running`,
      body: `Kubernetes ${row.kaas_version} in ${row.region_id} is ready for machines and installs.`,
      severity: 'info',
    });
    return true;
  });
}

/**
 * → ERROR with its message, told as an event and to the workspace's members in the same transaction; false when
 * it is so already (only the run that changes it tells).
 */
export async function markClusterFailed(db: Db, id: string, message: string, now: number): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await trx
      .updateTable('clusters')
      .set({ status: 'ERROR', status_message: message })
      .where('id', '=', id)
      .where('status', '<>', 'ERROR')
      .returningAll()
      .executeTakeFirst();
    if (!row) return false;
    await recordEventAndNotify(trx, eventOf('cluster.failed', row), now, {
      title: `Cluster ${row.name} could not be created`,
      body: message,
      severity: 'critical',
    });
    return true;
  });
}

/** Whether a cluster belongs to the given workspace (what an object references lives in its workspace). */
export const clusterInWorkspace = async (db: Db, clusterId: string, workspaceId: string): Promise<boolean> =>
  (await db.selectFrom('clusters').select('id').where('id', '=', clusterId).where('workspace_id', '=', workspaceId).executeTakeFirst()) !== undefined;

/** Which of these ids are clusters of the workspace. */
export async function clustersOfWorkspace(db: Db, workspaceId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('clusters').select('id').where('id', 'in', ids).where('workspace_id', '=', workspaceId).execute();
  return new Set(rows.map((c) => c.id));
}

/** The clusters among `ids` of the workspace in a region, oldest first: where an install may be placed. */
export async function placementCandidates(db: Db, workspaceId: string, regionId: string, ids: readonly string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('clusters')
    .select(['id', 'status'])
    .where('id', 'in', ids)
    .where('workspace_id', '=', workspaceId)
    .where('region_id', '=', regionId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The demo data's clusters (db/seed.ts), written as they are: no creation's rules, quota or workflow. */
export async function seedClusters(db: Kysely<Database>, rows: NewRow<'clusters'>[]): Promise<void> {
  await db.insertInto('clusters').values(rows).execute();
}
