import type { ServerOffering } from '../providers/types.ts';
import * as cloudCredentials from '../resources/cloud-credentials.ts';
import * as computeConfigs from '../resources/compute-configs.ts';
import * as machines from '../resources/machines.ts';
import * as suspensions from '../resources/suspensions.ts';
import { type Handler, type HandlerEnv, staged } from './types.ts';

export const listComputeConfigs: Handler<'listComputeConfigs'> = async (input, { db }) => ({
  status: 200,
  body: await computeConfigs.listComputeConfigs(db, input),
});

export const getComputeConfig: Handler<'getComputeConfig'> = async ({ params, caller }, { db }) => {
  return { status: 200, body: await computeConfigs.getComputeConfig(db, caller, params.id) };
};

/**
 * The server types the provider offers now (read from its API and cached by the provider), not a list of ours;
 * asked once the binding found a named workspace to be the caller's.
 */
const offerings = (_input: unknown, { provider }: HandlerEnv) => provider.offerings();

export const createComputeConfig = staged<'createComputeConfig', ServerOffering[]>({
  before: offerings,
  change: async ({ body, workspace }, { db, clock }, offerings) => {
    return { status: 201, body: await computeConfigs.createComputeConfig(db, workspace, body, { now: clock.now(), offerings }) };
  },
});

export const updateComputeConfig: Handler<'updateComputeConfig'> = async ({ params, body, caller }, { db }) => {
  return { status: 200, body: await computeConfigs.renameComputeConfig(db, caller, params.id, body) };
};

export const deleteComputeConfig: Handler<'deleteComputeConfig'> = async ({ params, caller }, { db }) => {
  await computeConfigs.deleteComputeConfig(db, caller, params.id);
  return { status: 204, body: undefined };
};

export const listCloudCredentials: Handler<'listCloudCredentials'> = async (input, { db }) => ({
  status: 200,
  body: await cloudCredentials.listCloudCredentials(db, input),
});

export const getCloudCredential: Handler<'getCloudCredential'> = async ({ params, caller }, { db }) => {
  return { status: 200, body: await cloudCredentials.getCloudCredential(db, caller, params.id) };
};

export const createCloudCredential: Handler<'createCloudCredential'> = async ({ body, workspace }, { db, clock, secrets }) => {
  return { status: 201, body: await cloudCredentials.createCloudCredential(db, workspace, body, { now: clock.now(), secrets }) };
};

export const updateCloudCredential: Handler<'updateCloudCredential'> = async ({ params, body, caller }, { db, secrets }) => {
  return { status: 200, body: await cloudCredentials.updateCloudCredential(db, caller, params.id, body, secrets) };
};

export const deleteCloudCredential: Handler<'deleteCloudCredential'> = async ({ params, caller }, { db }) => {
  await cloudCredentials.deleteCloudCredential(db, caller, params.id);
  return { status: 204, body: undefined };
};

export const listMachines: Handler<'listMachines'> = async ({ query, caller }, { db }) => {
  return { status: 200, body: await machines.listMachines(db, caller, query.cluster_id) };
};

export const getMachine: Handler<'getMachine'> = async ({ params, caller }, { db }) => {
  return { status: 200, body: await machines.getMachine(db, caller, params.providerId) };
};

export const requestMachine = staged<'requestMachine', { offerings: ServerOffering[]; oneProjectPerCluster: boolean }>({
  // A provider that runs a cloud controller manager in each cluster gives it one project's token, so a cluster's
  // machines must all be in that project (machines.ts, requestMachine).
  before: async (_input, { provider }) => ({ offerings: await provider.offerings(), oneProjectPerCluster: provider.cloudControllerAccess !== undefined }),
  change: async ({ body, caller, workspace }, { db, clock, workflows }, { offerings, oneProjectPerCluster }) => {
    return {
      status: 202,
      body: await machines.requestMachine(db, caller, workspace, body, { now: clock.now(), workflows, offerings, oneProjectPerCluster }),
    };
  },
});

export const deleteMachine: Handler<'deleteMachine'> = async ({ params, caller }, { db, clock, workflows }) => {
  await machines.deleteMachine(db, caller, params.providerId, { now: clock.now(), workflows });
  return { status: 204, body: undefined };
};

export const suspendMachine: Handler<'suspendMachine'> = async ({ params, caller }, { db, clock, workflows }) => {
  return { status: 202, body: await machines.suspendMachine(db, caller, params.providerId, { now: clock.now(), workflows }) };
};

export const listSuspensions: Handler<'listSuspensions'> = async (input, { db }) => ({
  status: 200,
  body: await suspensions.listSuspensions(db, input),
});

export const getSuspension: Handler<'getSuspension'> = async ({ params, caller }, { db }) => {
  return { status: 200, body: await suspensions.getSuspension(db, caller, params.id) };
};

export const resumeSuspension: Handler<'resumeSuspension'> = async ({ params, caller }, { db, workflows }) => {
  return { status: 202, body: await suspensions.resumeSuspension(db, caller, params.id, workflows) };
};

export const getClusterComputeStatus: Handler<'getClusterComputeStatus'> = async ({ params, caller }, { db, clock }) => {
  return { status: 200, body: await machines.clusterComputeStatus(db, caller, params.clusterId, clock.now()) };
};

export const checkMachineDrift: Handler<'checkMachineDrift'> = async ({ params, caller }, { db, clock, provider, secrets }) => {
  return { status: 200, body: await machines.checkDrift(db, { provider, secrets }, caller, params.providerId, clock.now()) };
};
