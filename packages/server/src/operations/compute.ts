import type { ServerOffering } from '../providers/types.ts';
import * as cloudCredentials from '../resources/cloud-credentials.ts';
import * as computeConfigs from '../resources/compute-configs.ts';
import * as machines from '../resources/machines.ts';
import * as suspensions from '../resources/suspensions.ts';
import { requireWorkspace, resolveWorkspace, type WorkspaceCaller } from '../services/tenancy.ts';
import { type Handler, type HandlerEnv, staged } from './types.ts';

/** Operations on resources addressed by id check a named X-Workspace-Id (403 when foreign), then membership. */
const checkNamedWorkspace = (db: HandlerEnv['db'], caller: WorkspaceCaller, header: string | undefined) =>
  resolveWorkspace(db, caller, header, { onlyWhenNamed: true });

export const listComputeConfigs: Handler<'listComputeConfigs'> = async (input, { db }) => ({
  status: 200,
  body: await computeConfigs.listComputeConfigs(db, input),
});

export const getComputeConfig: Handler<'getComputeConfig'> = async ({ params, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await computeConfigs.getComputeConfig(db, caller, params.id) };
};

/**
 * The server types the provider offers now (read from its API and cached by the provider), not a list of ours;
 * asked once a named workspace is known to be the caller's.
 */
async function offerings({ caller, headers }: { caller: WorkspaceCaller; headers: { 'X-Workspace-Id'?: string } }, { db, provider }: HandlerEnv) {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return provider.offerings();
}

export const createComputeConfig = staged<'createComputeConfig', ServerOffering[]>({
  before: offerings,
  change: async ({ body, headers, caller }, { db, clock }, offerings) => {
    const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
    return { status: 201, body: await computeConfigs.createComputeConfig(db, workspace, body, { now: clock.now(), offerings }) };
  },
});

export const updateComputeConfig: Handler<'updateComputeConfig'> = async ({ params, body, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await computeConfigs.renameComputeConfig(db, caller, params.id, body) };
};

export const deleteComputeConfig: Handler<'deleteComputeConfig'> = async ({ params, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  await computeConfigs.deleteComputeConfig(db, caller, params.id);
  return { status: 204, body: undefined };
};

export const listCloudCredentials: Handler<'listCloudCredentials'> = async (input, { db }) => ({
  status: 200,
  body: await cloudCredentials.listCloudCredentials(db, input),
});

export const getCloudCredential: Handler<'getCloudCredential'> = async ({ params, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await cloudCredentials.getCloudCredential(db, caller, params.id) };
};

export const createCloudCredential: Handler<'createCloudCredential'> = async ({ body, headers, caller }, { db, clock, secrets }) => {
  const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 201, body: await cloudCredentials.createCloudCredential(db, workspace, body, { now: clock.now(), secrets }) };
};

export const updateCloudCredential: Handler<'updateCloudCredential'> = async ({ params, body, headers, caller }, { db, secrets }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await cloudCredentials.updateCloudCredential(db, caller, params.id, body, secrets) };
};

export const deleteCloudCredential: Handler<'deleteCloudCredential'> = async ({ params, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  await cloudCredentials.deleteCloudCredential(db, caller, params.id);
  return { status: 204, body: undefined };
};

export const listMachines: Handler<'listMachines'> = async ({ query, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await machines.listMachines(db, caller, query.cluster_id) };
};

export const getMachine: Handler<'getMachine'> = async ({ params, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await machines.getMachine(db, caller, params.providerId) };
};

export const requestMachine = staged<'requestMachine', ServerOffering[]>({
  before: offerings,
  change: async ({ body, headers, caller }, { db, clock, workflows }, offerings) => {
    const named = await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
    return { status: 202, body: await machines.requestMachine(db, caller, named, body, { now: clock.now(), workflows, offerings }) };
  },
});

export const deleteMachine: Handler<'deleteMachine'> = async ({ params, headers, caller }, { db, clock, workflows }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  await machines.deleteMachine(db, caller, params.providerId, { now: clock.now(), workflows });
  return { status: 204, body: undefined };
};

export const suspendMachine: Handler<'suspendMachine'> = async ({ params, headers, caller }, { db, clock, workflows }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 202, body: await machines.suspendMachine(db, caller, params.providerId, { now: clock.now(), workflows }) };
};

export const listSuspensions: Handler<'listSuspensions'> = async (input, { db }) => ({
  status: 200,
  body: await suspensions.listSuspensions(db, input),
});

export const getSuspension: Handler<'getSuspension'> = async ({ params, headers, caller }, { db }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await suspensions.getSuspension(db, caller, params.id) };
};

export const resumeSuspension: Handler<'resumeSuspension'> = async ({ params, headers, caller }, { db, workflows }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 202, body: await suspensions.resumeSuspension(db, caller, params.id, workflows) };
};

export const getClusterComputeStatus: Handler<'getClusterComputeStatus'> = async ({ params, headers, caller }, { db, clock }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await machines.clusterComputeStatus(db, caller, params.clusterId, clock.now()) };
};

export const checkMachineDrift: Handler<'checkMachineDrift'> = async ({ params, headers, caller }, { db, clock, provider, secrets }) => {
  await checkNamedWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await machines.checkDrift(db, { provider, secrets }, caller, params.providerId, clock.now()) };
};
