// Row → record mappers, typed on both ends: a drift between the database and the contract fails the type check.
import type { Schema } from '@platform/api-types';
import type { Row } from './schema.ts';

export const toWorkspace = (row: Row<'workspaces'>): Schema<'Workspace'> => ({
  id: row.id,
  name: row.name,
  icon: row.icon,
  created_at: row.created_at,
});

export const toCluster = (row: Row<'clusters'>): Schema<'Cluster'> => ({
  id: row.id,
  name: row.name,
  workspace_id: row.workspace_id,
  region_id: row.region_id,
  kaas: { version: row.kaas_version, status: row.status, status_message: row.status_message },
  created_at: row.created_at,
});

export const toComputeConfig = (row: Row<'compute_configs'>): Schema<'ComputeConfig'> => ({
  id: row.id,
  name: row.name,
  workspace_id: row.workspace_id,
  provider: row.provider,
  provider_config: row.provider_config,
  cloud_credential_id: row.cloud_credential_id,
  created_at: row.created_at,
});

export const toMachine = (row: Row<'machines'>): Schema<'Machine'> => ({
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

export const toSuspension = (row: Row<'suspensions'>): Schema<'Suspension'> => ({
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

export const toRegistryCredential = (row: Row<'registry_credentials'>): Schema<'RegistryCredential'> => ({
  id: row.id,
  name: row.name,
  workspace_id: row.workspace_id,
  registry_url: row.registry_url,
  is_active: row.is_active,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
});

export const toInstall = (row: Row<'installs'>): Schema<'Install'> => ({
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

export const toNotification = (row: Row<'notifications'>): Schema<'Notification'> => ({
  id: row.id,
  type: row.type,
  resource_type: row.resource_type,
  resource_id: row.resource_id,
  title: row.title,
  body: row.body,
  severity: row.severity,
  read_at: row.read_at,
  created_at: row.created_at,
});

export const toRegion = (row: Row<'regions'>): Schema<'Region'> => ({
  id: row.id,
  name: row.name,
  country: row.country,
  created_at: row.created_at,
});

export const toCloudCredential = (row: Row<'cloud_credentials'>): Schema<'CloudCredential'> => ({
  id: row.id,
  name: row.name,
  workspace_id: row.workspace_id,
  provider: row.provider,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
});

export const toProduct = (row: Row<'products'>): Schema<'Product'> => ({
  id: row.id,
  workspace_id: row.workspace_id,
  name: row.name,
  template_id: row.template_id,
  sources: row.sources,
  cluster_ids: row.cluster_ids,
  stripe_price_ids: row.stripe_price_ids,
  settings: row.settings,
  regeneration_status: row.regeneration_status,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export const toToken = (row: Row<'tokens'>): Schema<'Token'> => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
  expires_at: row.expires_at,
});

export const toWorkspaceMember = (row: Pick<Row<'workspace_members'>, 'user_id' | 'role' | 'created_at'> & { email: string }): Schema<'WorkspaceMember'> => ({
  user_id: row.user_id,
  email: row.email,
  role: row.role,
  created_at: row.created_at,
});
