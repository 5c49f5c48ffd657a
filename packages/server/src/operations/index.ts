// The handler map: one handler per operationId. `satisfies Handlers` makes an operation added to the
// contract without a handler a type error.
import { approveDeviceCode, pollDeviceToken, requestDeviceCode } from './auth.ts';
import { createCluster, deleteCluster, getCluster, listClusters, listRegions } from './clusters.ts';
import {
  checkMachineDrift,
  createCloudCredential,
  createComputeConfig,
  deleteCloudCredential,
  deleteComputeConfig,
  deleteMachine,
  getClusterComputeStatus,
  getSuspension,
  listCloudCredentials,
  listComputeConfigs,
  listMachines,
  listSuspensions,
  requestMachine,
  resumeSuspension,
  suspendMachine,
} from './compute.ts';
import { getLiveness, getReadiness } from './health.ts';
import { createInstall, getInstall, listInstalls, streamInstallLogs } from './installs.ts';
import { listNotifications, markNotificationRead } from './notifications.ts';
import { createProduct, getProduct, listProducts, updateProduct } from './products.ts';
import { getQuota, listQuotas } from './quotas.ts';
import { createRegistryCredential, deleteRegistryCredential, listRegistryCredentials } from './registry.ts';
import { createUserToken, listUserTokens, logout, revokeUserToken } from './tokens.ts';
import type { Handlers } from './types.ts';
import { addWorkspaceMember, createWorkspace, getWorkspace, listWorkspaceMembers, listWorkspaces, removeWorkspaceMember } from './workspaces.ts';

export const handlers = {
  listWorkspaces,
  createWorkspace,
  getWorkspace,
  listWorkspaceMembers,
  addWorkspaceMember,
  removeWorkspaceMember,
  listRegions,
  listClusters,
  createCluster,
  getCluster,
  deleteCluster,
  getClusterComputeStatus,
  listComputeConfigs,
  createComputeConfig,
  deleteComputeConfig,
  listCloudCredentials,
  createCloudCredential,
  deleteCloudCredential,
  listMachines,
  requestMachine,
  deleteMachine,
  suspendMachine,
  checkMachineDrift,
  listSuspensions,
  getSuspension,
  resumeSuspension,
  listRegistryCredentials,
  createRegistryCredential,
  deleteRegistryCredential,
  listProducts,
  createProduct,
  getProduct,
  updateProduct,
  listInstalls,
  createInstall,
  getInstall,
  streamInstallLogs,
  listNotifications,
  markNotificationRead,
  listUserTokens,
  createUserToken,
  revokeUserToken,
  logout,
  requestDeviceCode,
  pollDeviceToken,
  approveDeviceCode,
  listQuotas,
  getQuota,
  getLiveness,
  getReadiness,
} satisfies Handlers;
