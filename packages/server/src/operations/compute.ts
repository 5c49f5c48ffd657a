import { sql } from 'kysely';
import { toCloudCredential, toComputeConfig, toMachine, toSuspension } from '../db/mappers.ts';
import { conflict, notFound, validationError } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { workspacePage } from '../services/lists.ts';
import { backoffOf, lockCluster, offeringOf, slotAvailable } from '../services/provisioning.ts';
import { cancelWorkflows } from '../workflows/engine.ts';
import { enforceQuota, limitOf, provisioningUsage } from '../services/quotas.ts';
import { matchesFilter, SERVER_TYPES } from '../services/server-types.ts';
import { memberWorkspaces, requireWorkspace, resolveWorkspace, type WorkspaceCaller } from '../services/tenancy.ts';
import { visibleCluster, visibleComputeConfig, visibleMachine } from '../services/visibility.ts';
import type { Handler } from './types.ts';

/** Operations on resources addressed by id check a named X-Workspace-Id (403 when foreign), then membership. */
const checkNamedWorkspace = (db: Parameters<typeof resolveWorkspace>[0], caller: WorkspaceCaller, header: string | undefined) =>
  resolveWorkspace(db, caller, header, { onlyWhenNamed: true });

export const listComputeConfigs: Handler<'listComputeConfigs'> = async (input, { db }) => ({
  status: 200,
  body: await workspacePage(db, input, 'compute_configs', toComputeConfig),
});

export const createComputeConfig: Handler<'createComputeConfig'> = async ({ body, headers, caller }, { db, clock }) => {
  const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
  if (body.provider_config.provider !== body.provider) {
    throw validationError('provider_config.provider', `provider_config.provider must equal provider (${body.provider}).`, 'Send the same provider in both places.');
  }
  if (!SERVER_TYPES.some((t) => matchesFilter(body.provider_config.machine_type_filter, t.name))) {
    throw validationError('provider_config.machine_type_filter', `No server type matches ${body.provider_config.machine_type_filter}.`, `Use a filter matching one of: ${SERVER_TYPES.map((t) => t.name).join(', ')}.`);
  }
  if (body.cloud_credential_id !== undefined) {
    const credential = await db.selectFrom('cloud_credentials').select('id').where('id', '=', body.cloud_credential_id).where('workspace_id', '=', workspace.id).executeTakeFirst();
    if (!credential) {
      throw validationError('cloud_credential_id', `Cloud credential ${body.cloud_credential_id} was not found in workspace ${workspace.id}.`, 'List the workspace’s cloud credentials with GET /v1/compute/cloud_credentials.');
    }
  }
  const row = await db
    .insertInto('compute_configs')
    .values({ id: newId('cc'), workspace_id: workspace.id, name: body.name, provider: body.provider, provider_config: JSON.stringify(body.provider_config), cloud_credential_id: body.cloud_credential_id ?? null, created_at: clock.now() })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { status: 201, body: toComputeConfig(row) };
};

export const deleteComputeConfig: Handler<'deleteComputeConfig'> = async ({ params, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  await db.transaction().execute(async (trx) => {
    const config = await visibleComputeConfig(trx, caller.userId, params.id);
    // Lock the config so a machine cannot start using it between the count and the delete.
    await trx.selectFrom('compute_configs').select('id').where('id', '=', config.id).forUpdate().execute();
    const { machines } = await trx.selectFrom('machines').select(sql<number>`count(*)::int`.as('machines')).where('compute_config_id', '=', config.id).executeTakeFirstOrThrow();
    if (machines > 0) {
      throw conflict(`Compute config ${config.id} is used by ${machines} machine${machines === 1 ? '' : 's'}.`, 'Delete the machines that use it first.', { machines });
    }
    await trx.deleteFrom('compute_configs').where('id', '=', config.id).execute();
  });
  return { status: 204, body: undefined };
};

export const listCloudCredentials: Handler<'listCloudCredentials'> = async (input, { db }) => ({
  status: 200,
  body: await workspacePage(db, input, 'cloud_credentials', toCloudCredential),
});

export const createCloudCredential: Handler<'createCloudCredential'> = async ({ body, headers, caller }, { db, clock, secrets }) => {
  const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
  const row = await db
    .insertInto('cloud_credentials')
    .values({ id: newId('ccr'), workspace_id: workspace.id, name: body.name, provider: body.provider, secret_ciphertext: secrets.seal(body.secret), created_at: clock.now(), last_used_at: null })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { status: 201, body: toCloudCredential(row) };
};

export const deleteCloudCredential: Handler<'deleteCloudCredential'> = async ({ params, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  await db.transaction().execute(async (trx) => {
    const credential = await trx
      .selectFrom('cloud_credentials')
      .select('id')
      .where('id', '=', params.id)
      .where('workspace_id', 'in', memberWorkspaces(trx, caller.userId))
      .forUpdate()
      .executeTakeFirst();
    if (!credential) throw notFound('Cloud credential', params.id);
    const { configs } = await trx.selectFrom('compute_configs').select(sql<number>`count(*)::int`.as('configs')).where('cloud_credential_id', '=', credential.id).executeTakeFirstOrThrow();
    if (configs > 0) throw conflict(`Cloud credential ${credential.id} is used by ${configs} compute config${configs === 1 ? '' : 's'}.`, 'Delete those compute configs first.', { compute_configs: configs });
    await trx.deleteFrom('cloud_credentials').where('id', '=', credential.id).execute();
  });
  return { status: 204, body: undefined };
};

export const listMachines: Handler<'listMachines'> = async ({ query, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  const cluster = await visibleCluster(db, caller.userId, query.cluster_id, 'cluster_id');
  const rows = await db.selectFrom('machines').selectAll().where('cluster_id', '=', cluster.id).orderBy('created_at').orderBy('provider_id').execute();
  return { status: 200, body: rows.map(toMachine) };
};

export const requestMachine: Handler<'requestMachine'> = async ({ body, headers, caller }, { db, clock, workflows }) => {
  const named = await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  const cluster = await visibleCluster(db, caller.userId, body.cluster_id, 'cluster_id');
  // The machine lives in its cluster's workspace; a named workspace must be that one.
  if (named && cluster.workspace_id !== named.id) {
    throw validationError('cluster_id', `Cluster ${cluster.id} was not found in workspace ${named.id}.`, "List the workspace's clusters with GET /v1/clusters (same X-Workspace-Id) and use their ids.");
  }
  const config = await db.selectFrom('compute_configs').selectAll().where('id', '=', body.compute_config_id).where('workspace_id', 'in', memberWorkspaces(db, caller.userId)).executeTakeFirst();
  if (!config) throw notFound('Compute config', body.compute_config_id, 'compute_config_id');
  if (config.workspace_id !== cluster.workspace_id) {
    throw validationError('compute_config_id', `Compute config ${config.id} belongs to another workspace than cluster ${cluster.id}.`, 'Use a compute config of the cluster’s workspace.');
  }
  const filter = config.provider_config.machine_type_filter;
  const candidates = SERVER_TYPES.filter((t) => matchesFilter(filter, t.name));
  const serverType = body.server_type === undefined ? candidates[0] : candidates.find((t) => t.name === body.server_type);
  if (!serverType) {
    throw validationError('server_type', `Server type ${body.server_type} does not match the compute config's filter ${filter}.`, `Choose one of: ${candidates.map((t) => t.name).join(', ')}.`);
  }
  const byom = config.cloud_credential_id !== null;
  const workspace = await db.selectFrom('workspaces').select(['id', 'owner_id']).where('id', '=', cluster.workspace_id).executeTakeFirstOrThrow();
  const now = clock.now();
  const row = await db.transaction().execute(async (trx) => {
    // BYOM machines count toward no allocation quota, but toward the cluster's concurrency limit.
    if (!byom) await enforceQuota(trx, workspace, { 'compute/machines': 1, 'compute/cpu': serverType.cpu, 'compute/memory': serverType.memory_bytes }, now);
    // A free slot is taken at once; otherwise the machine waits queued (see services/provisioning.ts).
    await lockCluster(trx, cluster.id);
    const status = (await slotAvailable(trx, cluster, now)) ? 'provisioning' : 'queued';
    const providerId = `compute://${newId('mch')}`;
    await workflows.start(trx, 'requestMachine', providerId);
    return trx
      .insertInto('machines')
      .values({
        provider_id: providerId,
        cluster_id: cluster.id,
        compute_config_id: config.id,
        node_name: `${cluster.name}-worker-${providerId.slice(-6)}`,
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
  return { status: 202, body: toMachine(row) };
};

export const deleteMachine: Handler<'deleteMachine'> = async ({ params, headers, caller }, { db, clock, workflows }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  const machine = await visibleMachine(db, caller.userId, params.providerId);
  await db.transaction().execute(async (trx) => {
    const locked = await trx.selectFrom('machines').select('status').where('provider_id', '=', machine.provider_id).forUpdate().executeTakeFirst();
    if (!locked || locked.status === 'deleting') return; // deleting already: the same outcome
    // Whatever was under way for the machine stops; the deletion removes its server and snapshot.
    const suspensions = await trx.selectFrom('suspensions').select('id').where('provider_id', '=', machine.provider_id).execute();
    const cancelled = await cancelWorkflows(trx, [machine.provider_id, ...suspensions.map((s) => s.id)], 'cancelled: the machine was deleted', clock.now());
    await trx.updateTable('machines').set({ status: 'deleting' }).where('provider_id', '=', machine.provider_id).execute();
    await workflows.start(trx, 'deleteMachine', machine.provider_id, { cancelled });
  });
  return { status: 204, body: undefined };
};

export const suspendMachine: Handler<'suspendMachine'> = async ({ params, headers, caller }, { db, clock, workflows }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  const now = clock.now();
  const row = await db.transaction().execute(async (trx) => {
    const machine = await visibleMachine(trx, caller.userId, params.providerId);
    const locked = await trx.selectFrom('machines').select('status').where('provider_id', '=', machine.provider_id).forUpdate().executeTakeFirstOrThrow();
    if (locked.status !== 'ready') {
      throw conflict(`Machine ${machine.provider_id} is ${locked.status}; only a ready machine can be suspended.`, 'Wait until the machine is ready.', { status: locked.status });
    }
    const cluster = await trx.selectFrom('clusters').select('workspace_id').where('id', '=', machine.cluster_id).executeTakeFirstOrThrow();
    const id = newId('sus');
    await trx.updateTable('machines').set({ status: 'suspending' }).where('provider_id', '=', machine.provider_id).execute();
    await workflows.start(trx, 'suspendMachine', id);
    return trx
      .insertInto('suspensions')
      .values({ id, workspace_id: cluster.workspace_id, cluster_id: machine.cluster_id, provider_id: machine.provider_id, node_name: machine.node_name, reason: 'manual', status: 'suspending', snapshot_id: null, created_at: now, expires_at: null })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return { status: 202, body: toSuspension(row) };
};

export const listSuspensions: Handler<'listSuspensions'> = async (input, { db }) => ({
  status: 200,
  body: await workspacePage(db, input, 'suspensions', toSuspension),
});

export const getSuspension: Handler<'getSuspension'> = async ({ params, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  const row = await db.selectFrom('suspensions').selectAll().where('id', '=', params.id).where('workspace_id', 'in', memberWorkspaces(db, caller.userId)).executeTakeFirst();
  if (!row) throw notFound('Suspension', params.id);
  return { status: 200, body: toSuspension(row) };
};

export const resumeSuspension: Handler<'resumeSuspension'> = async ({ params, headers, caller }, { db, workflows }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  const row = await db.transaction().execute(async (trx) => {
    const suspension = await trx.selectFrom('suspensions').selectAll().where('id', '=', params.id).where('workspace_id', 'in', memberWorkspaces(trx, caller.userId)).forUpdate().executeTakeFirst();
    if (!suspension) throw notFound('Suspension', params.id);
    if (suspension.status !== 'suspended') {
      throw conflict(`Suspension ${suspension.id} is ${suspension.status}, not suspended.`, 'Only a suspended machine can be resumed; read the suspension to follow it.', { status: suspension.status });
    }
    await workflows.start(trx, 'resumeSuspension', suspension.id);
    return trx.updateTable('suspensions').set({ status: 'resuming' }).where('id', '=', suspension.id).returningAll().executeTakeFirstOrThrow();
  });
  return { status: 202, body: toSuspension(row) };
};

export const getClusterComputeStatus: Handler<'getClusterComputeStatus'> = async ({ params, headers, caller }, { db, clock }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  const cluster = await visibleCluster(db, caller.userId, params.clusterId);
  const workspace = await db.selectFrom('workspaces').select(['id', 'owner_id']).where('id', '=', cluster.workspace_id).executeTakeFirstOrThrow();
  const counts = await db
    .selectFrom('machines')
    .select([sql<number>`count(*) filter (where status <> 'queued')::int`.as('machines'), sql<number>`count(*) filter (where status = 'queued')::int`.as('queued')])
    .where('cluster_id', '=', cluster.id)
    .executeTakeFirstOrThrow();
  const provisioning = await provisioningUsage(db, cluster.id);
  const maxMachines = await limitOf(db, workspace.owner_id, workspace.id, 'compute/machines');
  const { limit: provisioningLimit, offering } = await offeringOf(db, workspace.id);
  const backoff = await backoffOf(db, cluster.id, offering, clock.now());
  // Provisioning runs only on a running cluster, and waits while the cluster backs off after failures.
  const state = cluster.status !== 'RUNNING' ? 'paused' : backoff ? 'backoff' : provisioning + counts.queued > 0 ? 'scaling' : 'idle';
  return {
    status: 200,
    body: { machines: counts.machines, max_machines: maxMachines, autoscaling: { state, provisioning, queued: counts.queued, provisioning_limit: provisioningLimit, backoff_until: backoff?.until ?? null } },
  };
};

export const checkMachineDrift: Handler<'checkMachineDrift'> = async ({ params, headers, caller }, { db, clock, provider }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  const machine = await visibleMachine(db, caller.userId, params.providerId);
  // Compares the compute config's desired state (image, server type, region) with what the provider reports
  // of the machine's server; without a server (queued, suspended) the machine's own record stands in.
  const desired = machine.provider_config;
  const server = machine.server_id ? await provider.getServer(machine.server_id) : undefined;
  const actual = { server_type: server?.server_type ?? machine.server_type, region: server?.location ?? desired.region, image: server?.image ?? desired.image };
  const differences: { field: string; desired: string | null; actual: string | null }[] = [];
  if (!matchesFilter(desired.machine_type_filter, actual.server_type)) {
    differences.push({ field: 'server_type', desired: desired.machine_type_filter, actual: actual.server_type });
  }
  if (desired.region !== actual.region) differences.push({ field: 'region', desired: desired.region, actual: actual.region });
  // A server restored from a snapshot runs the snapshot's image, which was made from the desired one.
  if (server && desired.image !== actual.image && !actual.image.startsWith('snap-')) differences.push({ field: 'image', desired: desired.image, actual: actual.image });
  if (machine.server_id && !server && machine.status === 'ready') differences.push({ field: 'server', desired: machine.server_id, actual: null });
  const drifted = differences.length > 0;
  const reason = drifted ? `${differences.map((d) => `${d.field} is ${d.actual}, the compute config wants ${d.desired}`).join('; ')}.` : 'The machine matches its compute config.';
  return { status: 200, body: { drifted, reason, checked_at: clock.now(), differences } };
};
