// The handler map: one handler per operationId. `satisfies Handlers` makes an operation added to the
// contract without a handler a type error.
import { listClusters } from './clusters.ts';
import { checkMachineDrift, deleteComputeConfig, getClusterComputeStatus, listComputeConfigs, listMachines, resumeSuspension } from './compute.ts';
import { createInstall, streamInstallLogs } from './installs.ts';
import { markNotificationRead } from './notifications.ts';
import { updateProduct } from './products.ts';
import { getQuota, listQuotas } from './quotas.ts';
import { listRegistryCredentials } from './registry.ts';
import { createUserToken } from './tokens.ts';
import type { Handlers } from './types.ts';
import { listWorkspaces } from './workspaces.ts';

export const handlers = {
  listWorkspaces,
  listClusters,
  getClusterComputeStatus,
  listComputeConfigs,
  deleteComputeConfig,
  listMachines,
  checkMachineDrift,
  resumeSuspension,
  listRegistryCredentials,
  updateProduct,
  createInstall,
  streamInstallLogs,
  markNotificationRead,
  createUserToken,
  listQuotas,
  getQuota,
} satisfies Handlers;
