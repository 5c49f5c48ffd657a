import { sql } from 'kysely';
import { toComputeConfig, toMachine, toSuspension } from '../db/mappers.ts';
import { newId } from '../ids.ts';
import { conflict, notFound } from '../http/errors.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { limitOf, provisioningUsage } from '../services/quotas.ts';
import { memberWorkspaces, resolveWorkspace } from '../services/tenancy.ts';
import { visibleCluster, visibleComputeConfig, visibleMachine } from '../services/visibility.ts';
import type { Handler } from './types.ts';

/** Validates X-Workspace-Id when sent (403 for a foreign one); id-addressed look-ups then check membership. */
const checkWorkspaceHeader = (db: Parameters<typeof resolveWorkspace>[0], userId: string, header: string | undefined) =>
  header === undefined ? Promise.resolve(undefined) : resolveWorkspace(db, userId, header);

export const listComputeConfigs: Handler<'listComputeConfigs'> = async ({ query, headers, caller }, { db }) => {
  const limit = query.limit ?? 50;
  const after = decodeCursor(query.cursor);
  const workspaceId = await resolveWorkspace(db, caller.userId, headers['X-Workspace-Id']);
  if (!workspaceId) return { status: 200, body: page([], limit, query.cursor, toComputeConfig) };
  const base = db.selectFrom('compute_configs').selectAll().where('workspace_id', '=', workspaceId);
  const rows = await afterCursor(base, 'compute_configs', after, limit).execute();
  return { status: 200, body: page(rows, limit, query.cursor, toComputeConfig) };
};

export const deleteComputeConfig: Handler<'deleteComputeConfig'> = async ({ params, headers, caller }, { db }) => {
  await checkWorkspaceHeader(db, caller.userId, headers['X-Workspace-Id']);
  await db.transaction().execute(async (trx) => {
    const config = await visibleComputeConfig(trx, caller.userId, params.id);
    // Lock the config so a machine cannot start using it between the count and the delete.
    await trx.selectFrom('compute_configs').select('id').where('id', '=', config.id).forUpdate().execute();
    const { machines } = await trx
      .selectFrom('machines')
      .select(sql<number>`count(*)::int`.as('machines'))
      .where('compute_config_id', '=', config.id)
      .executeTakeFirstOrThrow();
    if (machines > 0) {
      throw conflict(`Compute config ${config.id} is used by ${machines} machine${machines === 1 ? '' : 's'}.`, 'Delete the machines that use it first.', { machines });
    }
    await trx.deleteFrom('compute_configs').where('id', '=', config.id).execute();
  });
  return { status: 204, body: undefined };
};

export const listMachines: Handler<'listMachines'> = async ({ query, headers, caller }, { db }) => {
  await checkWorkspaceHeader(db, caller.userId, headers['X-Workspace-Id']);
  const cluster = await visibleCluster(db, caller.userId, query.cluster_id, 'cluster_id');
  const rows = await db.selectFrom('machines').selectAll().where('cluster_id', '=', cluster.id).orderBy('created_at').orderBy('provider_id').execute();
  return { status: 200, body: rows.map(toMachine) };
};

export const getClusterComputeStatus: Handler<'getClusterComputeStatus'> = async ({ params, headers, caller }, { db }) => {
  await checkWorkspaceHeader(db, caller.userId, headers['X-Workspace-Id']);
  const cluster = await visibleCluster(db, caller.userId, params.clusterId);
  const owner = await db.selectFrom('workspaces').select('owner_id').where('id', '=', cluster.workspace_id).executeTakeFirstOrThrow();
  const counts = await db
    .selectFrom('machines')
    .select([
      sql<number>`count(*) filter (where status <> 'queued')::int`.as('machines'),
      sql<number>`count(*) filter (where status = 'queued')::int`.as('queued'),
    ])
    .where('cluster_id', '=', cluster.id)
    .executeTakeFirstOrThrow();
  const provisioning = await provisioningUsage(db, cluster.id);
  const maxMachines = await limitOf(db, owner.owner_id, cluster.workspace_id, 'compute/machines');
  const provisioningLimit = await limitOf(db, owner.owner_id, cluster.workspace_id, 'compute/provisioning');
  // Provisioning runs only on a running cluster; backoff state arrives with the provisioning workers.
  const state = cluster.status !== 'RUNNING' ? 'paused' : provisioning + counts.queued > 0 ? 'scaling' : 'idle';
  return {
    status: 200,
    body: {
      machines: counts.machines,
      max_machines: maxMachines,
      autoscaling: { state, provisioning, queued: counts.queued, provisioning_limit: provisioningLimit, backoff_until: null },
    },
  };
};

/** `cx2*` → /^cx2.*$/: the compute config's machine type filter is a glob over server types. */
function globMatches(glob: string, value: string): boolean {
  const pattern = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*').replaceAll('?', '.');
  return new RegExp(`^${pattern}$`).test(value);
}

export const checkMachineDrift: Handler<'checkMachineDrift'> = async ({ params, headers, caller }, { db, clock }) => {
  await checkWorkspaceHeader(db, caller.userId, headers['X-Workspace-Id']);
  const machine = await visibleMachine(db, caller.userId, params.providerId);
  // Compares the machine as recorded with its compute config's desired state.
  const desired = machine.provider_config;
  const differences: { field: string; desired: string | null; actual: string | null }[] = [];
  if (!globMatches(desired.machine_type_filter, machine.server_type)) {
    differences.push({ field: 'server_type', desired: desired.machine_type_filter, actual: machine.server_type });
  }
  if (desired.region !== machine.region_id) {
    differences.push({ field: 'region', desired: desired.region, actual: machine.region_id });
  }
  const drifted = differences.length > 0;
  const reason = drifted
    ? differences.map((d) => `${d.field} is ${d.actual}, the compute config wants ${d.desired}`).join('; ') + '.'
    : 'The machine matches its compute config.';
  return { status: 200, body: { drifted, reason, checked_at: clock.now(), differences } };
};

export const resumeSuspension: Handler<'resumeSuspension'> = async ({ params, headers, caller }, { db, clock }) => {
  await checkWorkspaceHeader(db, caller.userId, headers['X-Workspace-Id']);
  const now = clock.now();
  const row = await db.transaction().execute(async (trx) => {
    const suspension = await trx
      .selectFrom('suspensions')
      .selectAll()
      .where('id', '=', params.id)
      .where('workspace_id', 'in', memberWorkspaces(trx, caller.userId))
      .forUpdate()
      .executeTakeFirst();
    if (!suspension) throw notFound('Suspension', params.id);
    if (suspension.status !== 'suspended') {
      throw conflict(`Suspension ${suspension.id} is ${suspension.status}, not suspended.`, 'Only a suspended machine can be resumed; read the suspension to follow it.', {
        status: suspension.status,
      });
    }
    // The resume workflow's row records the intent; the workers carry it out.
    await trx.insertInto('workflows').values({ id: newId('wf'), kind: 'resume', subject_id: suspension.id, status: 'pending', created_at: now, updated_at: now }).execute();
    return trx.updateTable('suspensions').set({ status: 'resuming' }).where('id', '=', suspension.id).returningAll().executeTakeFirstOrThrow();
  });
  return { status: 202, body: toSuspension(row) };
};
