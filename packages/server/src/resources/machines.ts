// Machines: the only writer of `machines`. A requested machine is `queued` until a provisioning slot of its
// cluster frees up (services/provisioning.ts), then provisioning → ready; ready → suspending → suspended (see
// suspensions.ts) → ready; any → deleting → gone. What a machine references (its cluster, its compute config)
// lives in one workspace, checked when it is requested.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, NewRow, Row } from '../db/schema.ts';
import { holdReferenced, inTransaction } from '../db/transaction.ts';
import { cancelWorkflows, type WorkflowStarter } from '../engine/engine.ts';
import { conflict, notFound, validationError } from '../errors.ts';
import { newId } from '../ids.ts';
import { type ComputeProvider, onSaleIn, type ServerOffering } from '../providers/types.ts';
import { type ClusterRef, computeStatus, lockCluster, offeringOf, recordFailure, slotAvailable } from '../services/provisioning.ts';
import { enforceQuota } from '../services/quotas.ts';
import type { SecretBox } from '../services/secrets.ts';
import { type ActingWorkspace, memberWorkspaces, type WorkspaceCaller } from '../services/tenancy.ts';
import { machineCredential, requireCredentialOfWorkspace } from './cloud-credentials.ts';
import { visibleCluster } from './clusters.ts';
import { matchesFilter, visibleComputeConfig } from './compute-configs.ts';
import { recordEvent, recordEventAndNotify } from './events.ts';
import { notifyWorkspace } from './notifications.ts';
import { startSuspension, suspensionsOfMachine } from './suspensions.ts';
import { ownerOf } from './workspaces.ts';

type Db = Kysely<Database>;

/**
 * A machine's node and server name: its cluster's name and `-worker-` and the end of its id. A server's name must
 * be an RFC 1123 hostname at Hetzner (a label of at most 63 characters, no trailing dash), and a node's a DNS label
 * for the kubelet, so a long cluster name (the contract allows 63) is cut to fit, without a dash at the cut.
 */
export function nodeName(clusterName: string, providerId: string): string {
  const suffix = `-worker-${providerId.slice(-6)}`;
  return `${clusterName.slice(0, 63 - suffix.length).replace(/-+$/, '')}${suffix}`;
}

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toMachine = (row: Row<'machines'>): Schema<'Machine'> => ({
  provider_id: row.provider_id,
  node_name: row.node_name,
  status: row.status,
  cluster_id: row.cluster_id,
  compute_config_id: row.compute_config_id,
  byom: row.byom,
  server_type: row.server_type,
  cpu: row.cpu,
  memory_bytes: row.memory_bytes,
  created_at: row.created_at,
});
type Status = Row<'machines'>['status'];
interface Effects {
  now: number;
  workflows: WorkflowStarter;
}

/** A machine the user may see (a member of its cluster's workspace), with its compute config's provider_config. */
async function visibleMachine(db: Db, caller: WorkspaceCaller, providerId: string) {
  const row = await db
    .selectFrom('machines')
    .innerJoin('clusters', 'clusters.id', 'machines.cluster_id')
    .innerJoin('compute_configs', 'compute_configs.id', 'machines.compute_config_id')
    .selectAll('machines')
    .select(['compute_configs.provider_config', 'clusters.region_id', 'clusters.workspace_id'])
    .where('machines.provider_id', '=', providerId)
    .where('clusters.workspace_id', 'in', memberWorkspaces(db, caller))
    .executeTakeFirst();
  if (!row) throw notFound('Machine', providerId);
  return row;
}

export const getMachine = async (db: Db, caller: WorkspaceCaller, providerId: string): Promise<Schema<'Machine'>> =>
  toMachine(await visibleMachine(db, caller, providerId));

export async function listMachines(db: Db, caller: WorkspaceCaller, clusterId: string): Promise<Schema<'Machine'>[]> {
  const cluster = await visibleCluster(db, caller, clusterId, 'cluster_id');
  const rows = await db.selectFrom('machines').selectAll().where('cluster_id', '=', cluster.id).orderBy('created_at').orderBy('provider_id').execute();
  return rows.map(toMachine);
}

/**
 * A new machine in a cluster: provisioning at once when the cluster has a free slot, else queued. It lives in its
 * cluster's workspace, so a named workspace must be that one, and the compute config must be of it too.
 */
export async function requestMachine(
  db: Db,
  caller: WorkspaceCaller,
  acting: ActingWorkspace | undefined,
  input: Schema<'MachineRequest'>,
  { now, workflows, offerings, oneProjectPerCluster = false }: Effects & { offerings: ServerOffering[]; oneProjectPerCluster?: boolean },
): Promise<Schema<'Machine'>> {
  const cluster = await visibleCluster(db, caller, input.cluster_id, 'cluster_id');
  const named = acting?.named ? acting : undefined;
  if (named && cluster.workspace_id !== named.id) {
    throw validationError(
      'cluster_id',
      `Cluster ${cluster.id} was not found in workspace ${named.id}.`,
      "List the workspace's clusters with GET /v1/clusters and use their ids.",
    );
  }
  const config = await visibleComputeConfig(db, caller, input.compute_config_id, 'compute_config_id');
  if (config.workspace_id !== cluster.workspace_id) {
    throw validationError(
      'compute_config_id',
      `Compute config ${config.id} belongs to another workspace than cluster ${cluster.id}.`,
      'Use a compute config of the cluster’s workspace.',
    );
  }
  // A switched-off credential makes no new machines (those made with it are still driven with it).
  if (config.cloud_credential_id) await requireCredentialOfWorkspace(db, config.cloud_credential_id, cluster.workspace_id, 'compute_config_id');
  const { machine_type_filter: filter, region } = config.provider_config;
  // Only what the config's region sells now: a type unavailable or deprecated there is never chosen, nor taken.
  const candidates = offerings.filter((t) => matchesFilter(filter, t.name) && onSaleIn(t, region));
  const serverType = input.server_type === undefined ? candidates[0] : candidates.find((t) => t.name === input.server_type);
  if (!serverType && input.server_type === undefined) {
    throw validationError(
      'compute_config_id',
      `No server type matching the compute config's filter ${filter} is on sale in region ${region} now.`,
      `Use a compute config whose filter matches one on sale in ${region}: ${offerings
        .filter((t) => onSaleIn(t, region))
        .map((t) => t.name)
        .join(', ')}.`,
    );
  }
  if (!serverType) {
    const offered = offerings.find((t) => t.name === input.server_type);
    throw validationError(
      'server_type',
      !offered
        ? `Server type ${input.server_type} is not one the provider offers.`
        : !matchesFilter(filter, offered.name)
          ? `Server type ${input.server_type} does not match the compute config's filter ${filter}.`
          : `Server type ${input.server_type} is not on sale in region ${region} (unavailable or deprecated there).`,
      `Choose one of: ${candidates.map((t) => t.name).join(', ')}.`,
    );
  }
  const byom = config.cloud_credential_id !== null;
  const workspace = await ownerOf(db, cluster.workspace_id);
  const row = await inTransaction(db, async (trx) => {
    // Held until the machine is written: a cluster or config deleted meanwhile is not found, not a foreign-key error.
    if (!(await holdReferenced(trx, 'clusters', cluster.id))) throw notFound('Cluster', cluster.id, 'cluster_id');
    if (!(await holdReferenced(trx, 'compute_configs', config.id))) throw notFound('Compute config', config.id, 'compute_config_id');
    // BYOM machines count toward no allocation quota, but toward the cluster's concurrency limit.
    if (!byom) await enforceQuota(trx, workspace, { 'compute/machines': 1, 'compute/cpu': serverType.cpu, 'compute/memory': serverType.memory_bytes }, now);
    // A free slot is taken at once; otherwise the machine waits queued (see services/provisioning.ts).
    await lockCluster(trx, cluster.id);
    if (oneProjectPerCluster) await requireClusterProject(trx, cluster.id, config.cloud_credential_id);
    const status = (await slotAvailable(trx, cluster, now)) ? 'provisioning' : 'queued';
    const providerId = `compute://${newId('mch')}`;
    await workflows.start(trx, 'requestMachine', providerId);
    return trx
      .insertInto('machines')
      .values({
        provider_id: providerId,
        cluster_id: cluster.id,
        compute_config_id: config.id,
        node_name: nodeName(cluster.name, providerId),
        status,
        byom,
        server_type: serverType.name,
        cpu: serverType.cpu,
        memory_bytes: serverType.memory_bytes,
        created_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return toMachine(row);
}

/**
 * Refuses a machine in another cloud project than the cluster's other machines (the platform's account, or a BYOM
 * credential's): each project's cluster firewall admits only its own servers, so nodes in two projects block each
 * other's VXLAN (8472) and kubelet traffic, and the cluster's Hetzner cloud controller manager holds one project's
 * token (its Secret `hcloud`), so it would take the other project's servers for gone and delete their Nodes.
 * Credentials are told apart by id: two credentials are two projects. Under the cluster's lock (lockCluster).
 */
async function requireClusterProject(trx: Db, clusterId: string, credentialId: string | null): Promise<void> {
  const other = await trx
    .selectFrom('machines')
    .innerJoin('compute_configs', 'compute_configs.id', 'machines.compute_config_id')
    .select(['machines.provider_id', 'compute_configs.id as config_id', 'compute_configs.cloud_credential_id'])
    .where('machines.cluster_id', '=', clusterId)
    .where(sql<boolean>`compute_configs.cloud_credential_id IS DISTINCT FROM ${credentialId}`)
    .executeTakeFirst();
  if (!other) return;
  const project = (credential: string | null) => (credential === null ? "the platform's account" : `the project of cloud credential ${credential}`);
  throw validationError(
    'compute_config_id',
    `Cluster ${clusterId}'s machines are in ${project(other.cloud_credential_id)} (machine ${other.provider_id}); a cluster's machines are all in one cloud project, and this compute config makes them in ${project(credentialId)}.`,
    `Use compute config ${other.config_id}, or another with ${other.cloud_credential_id === null ? 'no cloud credential' : `cloud credential ${other.cloud_credential_id}`}; or make a new cluster for this project's machines.`,
  );
}

/** any → deleting: whatever was under way for the machine stops; the deletion removes its server and snapshot. */
export async function deleteMachine(db: Db, caller: WorkspaceCaller, providerId: string, { now, workflows }: Effects): Promise<void> {
  const machine = await visibleMachine(db, caller, providerId);
  await inTransaction(db, async (trx) => {
    const locked = await trx.selectFrom('machines').select('status').where('provider_id', '=', machine.provider_id).forUpdate().executeTakeFirst();
    if (!locked || locked.status === 'deleting') return; // deleting already: the same outcome
    const suspensions = await suspensionsOfMachine(trx, machine.provider_id);
    const cancelled = await cancelWorkflows(trx, [machine.provider_id, ...suspensions.map((s) => s.id)], 'cancelled: the machine was deleted', now);
    await trx.updateTable('machines').set({ status: 'deleting' }).where('provider_id', '=', machine.provider_id).execute();
    await workflows.start(trx, 'deleteMachine', machine.provider_id, { cancelled });
  });
}

/** ready → suspending, with a new suspension whose workflow snapshots the server. */
export async function suspendMachine(db: Db, caller: WorkspaceCaller, providerId: string, effects: Effects): Promise<Schema<'Suspension'>> {
  return inTransaction(db, async (trx) => {
    const machine = await visibleMachine(trx, caller, providerId);
    const locked = await trx.selectFrom('machines').select('status').where('provider_id', '=', machine.provider_id).forUpdate().executeTakeFirstOrThrow();
    if (locked.status !== 'ready') {
      throw conflict(`Machine ${machine.provider_id} is ${locked.status}; only a ready machine can be suspended.`, 'Wait until the machine is ready.', {
        status: locked.status,
      });
    }
    await trx.updateTable('machines').set({ status: 'suspending' }).where('provider_id', '=', machine.provider_id).execute();
    return startSuspension(trx, machine, machine.workspace_id, effects);
  });
}

/**
 * Compares the compute config's desired state (image, server type, region) with what the provider reports of the
 * machine's server; without a server (queued, suspended) the machine's own record stands in.
 */
export async function checkDrift(
  db: Db,
  { provider, secrets }: { provider: ComputeProvider; secrets: SecretBox },
  caller: WorkspaceCaller,
  providerId: string,
  now: number,
): Promise<Schema<'DriftResult'>> {
  const machine = await visibleMachine(db, caller, providerId);
  const desired = machine.provider_config;
  // A BYOM machine's server is in the user's own project: only its credential can read it.
  const server = machine.server_id ? await provider.getServer(machine.server_id, await machineCredential(db, machine.provider_id, now, secrets)) : undefined;
  const actual = { server_type: server?.server_type ?? machine.server_type, region: server?.location ?? desired.region, image: server?.image ?? desired.image };
  const differences: { field: string; desired: string | null; actual: string | null }[] = [];
  if (!matchesFilter(desired.machine_type_filter, actual.server_type)) {
    differences.push({ field: 'server_type', desired: desired.machine_type_filter, actual: actual.server_type });
  }
  if (desired.region !== actual.region) differences.push({ field: 'region', desired: desired.region, actual: actual.region });
  // A server restored from a snapshot runs the snapshot's image, which was made from the desired one.
  if (server && !server.from_snapshot && desired.image !== actual.image) differences.push({ field: 'image', desired: desired.image, actual: actual.image });
  if (machine.server_id && !server && machine.status === 'ready') differences.push({ field: 'server', desired: machine.server_id, actual: null });
  const drifted = differences.length > 0;
  const said = (d: (typeof differences)[number]) =>
    d.field === 'server' ? `server ${d.desired} is gone at the provider` : `${d.field} is ${d.actual}, the compute config wants ${d.desired}`;
  // Without a server, what is compared is the machine's own record: the answer says so, not that a server matches.
  const reason = drifted
    ? `${differences.map(said).join('; ')}.`
    : server
      ? 'The machine matches its compute config.'
      : `The machine has no server now (it is ${machine.status}); its record matches its compute config.`;
  return { drifted, reason, checked_at: now, differences };
}

/** The machines of a cluster the user may see, and where its provisioning stands. */
export async function clusterComputeStatus(db: Db, caller: WorkspaceCaller, clusterId: string, now: number): Promise<Schema<'ComputeStatus'>> {
  return computeStatus(db, await visibleCluster(db, caller, clusterId), now);
}

// What the workflows do to a machine.

/** The machine, its cluster's workspace and status, and its compute config's provider_config. */
export const machineForWorkflow = (db: Db, providerId: string) =>
  db
    .selectFrom('machines')
    .innerJoin('clusters', 'clusters.id', 'machines.cluster_id')
    .innerJoin('compute_configs', 'compute_configs.id', 'machines.compute_config_id')
    .selectAll('machines')
    .select(['clusters.workspace_id', 'clusters.status as cluster_status', 'compute_configs.provider_config'])
    .where('machines.provider_id', '=', providerId)
    .executeTakeFirst();

/** The provider id of every machine (what a server labelled with one stands for). */
export const machineProviderIds = async (db: Db): Promise<string[]> =>
  (await db.selectFrom('machines').select('provider_id').execute()).map((row) => row.provider_id);

export const machineById = (db: Db, providerId: string) => db.selectFrom('machines').selectAll().where('provider_id', '=', providerId).executeTakeFirst();

/**
 * queued → provisioning when the cluster has a free slot, decided under the machine's row lock and the cluster's
 * provisioning lock: `gone` (deleted while queued), `provisioning` (taken now or by an earlier run), or `queued`.
 * A slot taken now comes with its cluster, still under the provisioning lock, to look for another free one.
 */
export async function claimSlot(
  trx: Db,
  providerId: string,
  now: number,
): Promise<{ slot: 'gone' | 'queued' } | { slot: 'provisioning'; takenIn?: ClusterRef }> {
  const machine = await trx.selectFrom('machines').selectAll().where('provider_id', '=', providerId).forUpdate().executeTakeFirst();
  if (!machine) return { slot: 'gone' };
  if (machine.status === 'provisioning') return { slot: 'provisioning' };
  const cluster = await trx.selectFrom('clusters').select(['id', 'workspace_id', 'status']).where('id', '=', machine.cluster_id).executeTakeFirstOrThrow();
  await lockCluster(trx, cluster.id);
  if (!(await slotAvailable(trx, cluster, now))) return { slot: 'queued' };
  await trx.updateTable('machines').set({ status: 'provisioning' }).where('provider_id', '=', providerId).execute();
  return { slot: 'provisioning', takenIn: cluster };
}

/**
 * provisioning → queued without its server (a failed creation): the failure counts toward the cluster's backoff,
 * and the change is told as an event and to the workspace's members with when the next attempt is. Answers the
 * backoff; undefined when the machine was not provisioning (counted and told once: a re-run after a crash finds it
 * queued). Call it holding the cluster's lock.
 */
export async function requeueMachine(
  db: Db,
  machine: { provider_id: string; cluster_id: string; workspace_id: string },
  message: string,
  now: number,
): Promise<{ until: number; failures: number } | undefined> {
  return inTransaction(db, async (trx) => {
    const row = await trx
      .updateTable('machines')
      .set({ status: 'queued', server_id: null })
      .where('provider_id', '=', machine.provider_id)
      .where('status', '=', 'provisioning')
      .returningAll()
      .executeTakeFirst();
    if (!row) return undefined;
    const { offering } = await offeringOf(trx, { id: machine.cluster_id, workspace_id: machine.workspace_id });
    const backoff = await recordFailure(trx, machine.cluster_id, offering, now);
    await recordEventAndNotify(trx, await eventOf(trx, 'machine.provision_failed', row), now, {
      title: `Provisioning ${row.node_name} failed`,
      body: `${message}. The next attempt is in ${backoff.until - now} s.`,
      severity: 'warning',
    });
    return backoff;
  });
}

/**
 * → ready or failed, told as an event; false when it was so already (a re-run after a crash: told already). A
 * machine that could not be provisioned fails by `failProvisioning`, which also notifies; a suspension's end is
 * notified by the suspension (suspensions.ts).
 */
export async function markMachine(db: Db, providerId: string, status: 'ready' | 'failed', now: number): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await transition(trx, providerId, status);
    if (row) await recordEvent(trx, await eventOf(trx, `machine.${status}`, row), now);
    return row !== undefined;
  });
}

/**
 * → failed: it could not be provisioned, told as an event and to the workspace's members with why; false when it
 * was failed already (only the run that changes it tells).
 */
export async function failProvisioning(db: Db, providerId: string, message: string, now: number): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await transition(trx, providerId, 'failed');
    if (row) {
      await recordEventAndNotify(trx, await eventOf(trx, 'machine.failed', row), now, {
        title: `Machine ${row.node_name} failed`,
        body: message,
        severity: 'critical',
      });
    }
    return row !== undefined;
  });
}

/**
 * The provider refused a deletion: the machine stays `deleting` (deleting it again retries), and the workspace's
 * members are told why. A notification without an event: the machine did not change.
 */
export async function tellDeletionFailed(db: Db, providerId: string, message: string, now: number): Promise<void> {
  const machine = await machineForWorkflow(db, providerId);
  if (!machine) return;
  await notifyWorkspace(db, machine.workspace_id, now, {
    type: 'machine.failed',
    resource_type: 'machine',
    resource_id: machine.provider_id,
    title: `Deleting ${machine.node_name} failed`,
    body: `${message} The machine stays deleting; delete it again to retry.`,
    severity: 'critical',
  });
}

const transition = (db: Db, providerId: string, status: 'ready' | 'failed') =>
  db.updateTable('machines').set({ status }).where('provider_id', '=', providerId).where('status', '<>', status).returningAll().executeTakeFirst();

/** The event of a change of the machine (its workspace is its cluster's), typed by its literal type (what may also notify). */
async function eventOf<T extends 'machine.ready' | 'machine.provision_failed' | 'machine.failed'>(db: Db, type: T, row: Row<'machines'>) {
  const { workspace_id } = await db.selectFrom('clusters').select('workspace_id').where('id', '=', row.cluster_id).executeTakeFirstOrThrow();
  return { type, workspace_id, object_type: 'machine' as const, object_id: row.provider_id, object: toMachine(row) };
}

/** Sets the status, and the server when given (null: the server is gone). */
export async function setMachineState(db: Db, providerId: string, change: { status?: Status; server_id?: string | null }): Promise<void> {
  await db.updateTable('machines').set(change).where('provider_id', '=', providerId).execute();
}

export async function removeMachine(trx: Db, providerId: string): Promise<void> {
  await trx.deleteFrom('machines').where('provider_id', '=', providerId).execute();
}

/** The demo data's machines (db/seed.ts), written as they are: no creation's rules, quota or workflow. */
export async function seedMachines(db: Kysely<Database>, rows: NewRow<'machines'>[]): Promise<void> {
  await db.insertInto('machines').values(rows).execute();
}
