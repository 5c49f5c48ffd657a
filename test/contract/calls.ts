// One call through the client for every operation of the contract. The calls written here are checked at compile
// time against the generated types: an operation added to the contract without an entry (or an entry for an
// operation that does not exist) fails the type check, and each entry must resolve to that operation's generated
// success body. A list (a GET answering the `{data, pagination}` envelope) needs no entry: its call is derived
// from the contract (`listCalls`), through the operation-named method the client generates for it, which
// resolves to that body. `operations.test.ts` runs every call, written or derived, against the mock and checks
// at run time that it called the operation it is named after; `coverage.test.ts` checks the keys against the
// document.
import type { OperationId, RequestBody, Schema, SuccessBody } from '@platform/api-types';
import type { ListOperations, PlatformClient } from '@platform/client';
import { isListOperation, type Json, listOperations, loadDocument, type OpenApiDocument, parameterExample } from '../support/openapi.ts';

/** What `streamInstallLogs` yields, as the contract describes the stream (LogEvent, `event` named `type`). */
export type LogStreamEvent =
  | { type: 'log'; id: Schema<'LogLineEvent'>['id']; data: Schema<'LogLineEvent'>['data'] }
  | { type: 'end'; data: Schema<'LogEndEvent'>['data'] };

/** The operation's generated success body; `undefined` for 204; the events, for the log stream. */
export type Expected<Op extends OperationId> = Op extends 'streamInstallLogs'
  ? LogStreamEvent[]
  : Op extends 'streamEvents'
    ? Schema<'Event'>[]
    : [SuccessBody<Op>] extends [never]
      ? undefined | void
      : SuccessBody<Op>;

type Call<Op extends OperationId> = (api: PlatformClient) => Promise<Expected<Op>>;

/** The calls written by hand: one for every operation but the lists, which may be left to `listCalls`. */
export type WrittenCalls = { [Op in Exclude<OperationId, ListOperations>]: Call<Op> } & { [Op in ListOperations]?: Call<Op> };

// Identifiers as the contract's examples spell them.
export const ids = {
  workspace: 'ws_01jd2x8k4q3m7n5p9r6s2t8v0w',
  user: 'usr_01jd2x7h3k5m7p9r1t3v5x7z9b',
  invitation: 'inv_01jd3c5d7e9f1g3h5j7k9m1n3p',
  cluster: 'cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
  computeConfig: 'cc_01jd2x9a2b4c6d8e0f2g4h6j8k',
  cloudCredential: 'ccr_01jd2y2k7m9p1r3t5v7x9z1b3d',
  // Holds `:` and `/`: the client must encode them into one path segment.
  machine: 'compute://mch_01jd2x9c3d5f7h9k1m3p5r7t9v',
  suspension: 'sus_01jd2xa4e6g8j0m2p4r6t8w0y2',
  registryCredential: 'rc_01jd2xe8j0m2p4r6t8w0y2a4c6',
  product: 'prd_01jd2xb5f7h9k1n3q5s7v9x1z3',
  source: 'src_01jd2xg0m2p4r6t8w0y2a4c6e8',
  install: 'ins_01jd2xc6g8j0m2p4r6t8w0y2a4',
  notification: 'ntf_01jd2xd7h9k1n3q5s7v9x1z3b5',
  token: 'tok_01jd2xf9k1n3q5s7v9x1z3b5d7',
  webhookEndpoint: 'whe_01jd2xh1n3q5s7v9x1z3b5d7f9',
  webhookDelivery: 'whd_01jd2xj2p4r6t8w0y2a4c6e8g0',
  // Holds `/`: sent as kaas%2Fclusters.
  metric: 'kaas/clusters',
} as const;

const workspaceId = ids.workspace;

const chart = { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' };
const product = {
  name: 'Web Shop',
  sources: [{ chart, values: { replicaCount: 2 }, metadata: { component: 'web' } }],
  cluster_ids: [ids.cluster],
} satisfies RequestBody<'createProduct'>;

export const writtenCalls = {
  // Workspaces
  listWorkspaces: (api) => api.GET('/v1/workspaces', { params: { query: { limit: 10 } } }),
  createWorkspace: (api) => api.POST('/v1/workspaces', { body: { name: 'Acme Production', icon: '🏭' } }),
  getWorkspace: (api) => api.GET('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId } } }),
  updateWorkspace: (api) => api.PATCH('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId } }, body: { name: 'Acme Staging', icon: '🧪' } }),
  listWorkspaceMembers: (api) => api.GET('/v1/workspaces/{workspaceId}/members', { params: { path: { workspaceId }, query: { limit: 10 } } }),
  createWorkspaceInvitation: (api) =>
    api.POST('/v1/workspaces/{workspaceId}/invitations', {
      params: { path: { workspaceId } },
      body: { email: 'dana@acme.example', role: 'member' },
    }),
  listUserInvitations: (api) => api.GET('/v1/user/invitations', { params: { query: { limit: 10 } } }),
  acceptInvitation: (api) => api.POST('/v1/user/invitations/{id}/accept', { params: { path: { id: ids.invitation } } }),
  declineInvitation: (api) => api.POST('/v1/user/invitations/{id}/decline', { params: { path: { id: ids.invitation } } }),
  removeWorkspaceMember: (api) => api.DELETE('/v1/workspaces/{workspaceId}/members/{userId}', { params: { path: { workspaceId, userId: ids.user } } }),
  updateWorkspaceMember: (api) =>
    api.PATCH('/v1/workspaces/{workspaceId}/members/{userId}', { params: { path: { workspaceId, userId: ids.user } }, body: { role: 'admin' } }),
  transferWorkspaceOwnership: (api) => api.POST('/v1/workspaces/{workspaceId}/transfer', { params: { path: { workspaceId } }, body: { user_id: ids.user } }),
  leaveWorkspace: (api) => api.POST('/v1/workspaces/{workspaceId}/leave', { params: { path: { workspaceId } } }),
  deleteWorkspace: (api) => api.DELETE('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId } } }),
  listWorkspaceInvitations: (api) => api.GET('/v1/workspaces/{workspaceId}/invitations', { params: { path: { workspaceId }, query: { limit: 10 } } }),
  revokeWorkspaceInvitation: (api) =>
    api.DELETE('/v1/workspaces/{workspaceId}/invitations/{invitationId}', { params: { path: { workspaceId, invitationId: ids.invitation } } }),

  // Clusters
  listClusters: (api) => api.GET('/v1/clusters', { params: { query: { limit: 10 } }, workspaceId }),
  createCluster: (api) => api.POST('/v1/clusters', { body: { name: 'prod-eu', region_id: 'fsn1', kaas_version: 'v1.31' }, workspaceId }),
  getCluster: (api) => api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: ids.cluster } } }),
  updateCluster: (api) => api.PATCH('/v1/clusters/{clusterId}', { params: { path: { clusterId: ids.cluster } }, body: { name: 'prod-eu-2' } }),
  deleteCluster: (api) => api.DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: ids.cluster } } }),

  // Compute
  getClusterComputeStatus: (api) => api.GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId: ids.cluster } } }),
  getClusterKubeconfig: (api) => api.GET('/v1/clusters/{clusterId}/kubeconfig', { params: { path: { clusterId: ids.cluster }, query: { ttl_seconds: 3600 } } }),
  listComputeConfigs: (api) => api.GET('/v1/compute/configs', { params: { query: { limit: 10 } } }),
  createComputeConfig: (api) =>
    api.POST('/v1/compute/configs', {
      body: {
        name: 'general-purpose',
        provider: 'hcloud',
        provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
      },
    }),
  deleteComputeConfig: (api) => api.DELETE('/v1/compute/configs/{id}', { params: { path: { id: ids.computeConfig } } }),
  getComputeConfig: (api) => api.GET('/v1/compute/configs/{id}', { params: { path: { id: ids.computeConfig } } }),
  updateComputeConfig: (api) => api.PATCH('/v1/compute/configs/{id}', { params: { path: { id: ids.computeConfig } }, body: { name: 'general-purpose-eu' } }),
  createCloudCredential: (api) =>
    api.POST('/v1/compute/cloud_credentials', {
      body: { name: 'hetzner-main', provider: 'hcloud', secret: 'hc_7Jq2xV9mK4pL8rT3wN6zB1cY5hF0sGaD2eR4tU6iO8pA1sD3' },
    }),
  deleteCloudCredential: (api) => api.DELETE('/v1/compute/cloud_credentials/{id}', { params: { path: { id: ids.cloudCredential } } }),
  getCloudCredential: (api) => api.GET('/v1/compute/cloud_credentials/{id}', { params: { path: { id: ids.cloudCredential } } }),
  updateCloudCredential: (api) =>
    api.PATCH('/v1/compute/cloud_credentials/{id}', {
      params: { path: { id: ids.cloudCredential } },
      body: { secret: 'hc_9Xw3yU1nM5qK7tR2vB8zC4dF6gH0jLaE3rT5yU7iO9pA2sD4' },
    }),
  listMachines: (api) => api.GET('/v1/compute/machines', { params: { query: { cluster_id: ids.cluster } } }),
  requestMachine: (api) => api.POST('/v1/compute/machines', { body: { cluster_id: ids.cluster, compute_config_id: ids.computeConfig } }),
  deleteMachine: (api) => api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: ids.machine } } }),
  getMachine: (api) => api.GET('/v1/compute/machines/{providerId}', { params: { path: { providerId: ids.machine } } }),
  checkMachineDrift: (api) => api.GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: ids.machine } } }),
  suspendMachine: (api) => api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: ids.machine } } }),
  getSuspension: (api) => api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: ids.suspension } } }),
  resumeSuspension: (api) => api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: ids.suspension } } }),

  // Registry
  createRegistryCredential: (api) =>
    api.POST('/v1/registry/credentials', {
      // is_active is optional in the contract (default true), but openapi-typescript makes a property with a
      // default required when the schema is a component, so the generated type asks for it.
      body: {
        name: 'github-packages',
        registry_url: 'ghcr.io',
        username: 'acme-bot',
        password: 'ghp_4fR8kL2mN6pQ0sT4vX8z',
        is_active: true,
      },
    }),
  deleteRegistryCredential: (api) => api.DELETE('/v1/registry/credentials/{id}', { params: { path: { id: ids.registryCredential } } }),
  getRegistryCredential: (api) => api.GET('/v1/registry/credentials/{id}', { params: { path: { id: ids.registryCredential } } }),
  updateRegistryCredential: (api) =>
    api.PATCH('/v1/registry/credentials/{id}', { params: { path: { id: ids.registryCredential } }, body: { password: 'ghp_8hT2kM6pR0sV4xZ8bD2fH6jL0nQ4' } }),

  // Products
  createProduct: (api) => api.POST('/v1/products', { body: product }),
  getProduct: (api) => api.GET('/v1/products/{id}', { params: { path: { id: ids.product } } }),
  updateProduct: (api) =>
    api.PATCH('/v1/products/{id}', {
      params: { path: { id: ids.product } },
      body: { ...product, sources: [{ id: ids.source, chart, values: { replicaCount: 3 } }] },
    }),

  deleteProduct: (api) => api.DELETE('/v1/products/{id}', { params: { path: { id: ids.product } } }),

  // Installs
  createInstall: (api) =>
    api.POST('/v1/installs', {
      body: {
        product_id: ids.product,
        region_id: 'fsn1',
        overrides: [{ template_helm_source_id: ids.source, values: { replicaCount: 3 } }],
      },
      idempotencyKey: '6f1c2b9e-8a4d-4e7a-9b3c-2d5e8f1a7c40',
      workspaceId,
    }),
  getInstall: (api) => api.GET('/v1/installs/{id}', { params: { path: { id: ids.install } } }),
  updateInstall: (api) =>
    api.PATCH('/v1/installs/{id}', {
      params: { path: { id: ids.install } },
      body: { overrides: [{ template_helm_source_id: ids.source, values: { replicaCount: 3 } }] },
    }),
  rollbackInstall: (api) => api.POST('/v1/installs/{id}/rollback', { params: { path: { id: ids.install } }, body: { revision: 1 } }),
  deleteInstall: (api) => api.DELETE('/v1/installs/{id}', { params: { path: { id: ids.install } } }),
  streamInstallLogs: async (api) => {
    const events: LogStreamEvent[] = [];
    for await (const event of api.streamInstallLogs(ids.install, { follow: false, tail: 100 })) events.push(event);
    return events;
  },

  // Notifications
  listNotifications: (api) => api.GET('/v1/notifications', { params: { query: { unread: true } } }),
  markNotificationRead: (api) => api.PATCH('/v1/notifications/{id}/read', { params: { path: { id: ids.notification } } }),
  listEvents: (api) => api.GET('/v1/events', { params: { query: { type: 'cluster.created' } } }),
  // The stream has no end: the first event (the examples hold one).
  streamEvents: async (api) => {
    const events: Schema<'Event'>[] = [];
    for await (const event of api.streamEvents({ type: 'cluster.running' })) {
      events.push(event);
      break;
    }
    return events;
  },

  // Webhooks
  listWebhookEndpoints: (api) => api.GET('/v1/webhook_endpoints', { params: { query: { limit: 10 } }, workspaceId }),
  createWebhookEndpoint: (api) =>
    api.POST('/v1/webhook_endpoints', {
      body: { url: 'https://hooks.acme.example/platform', event_types: ['cluster.running', 'install.running', 'install.failed'] },
      workspaceId,
    }),
  getWebhookEndpoint: (api) => api.GET('/v1/webhook_endpoints/{id}', { params: { path: { id: ids.webhookEndpoint } } }),
  updateWebhookEndpoint: (api) => api.PATCH('/v1/webhook_endpoints/{id}', { params: { path: { id: ids.webhookEndpoint } }, body: { enabled: false } }),
  deleteWebhookEndpoint: (api) => api.DELETE('/v1/webhook_endpoints/{id}', { params: { path: { id: ids.webhookEndpoint } } }),
  rotateWebhookEndpointSecret: (api) =>
    api.POST('/v1/webhook_endpoints/{id}/rotate_secret', { params: { path: { id: ids.webhookEndpoint } }, body: { overlap_seconds: 3600 } }),
  listWebhookDeliveries: (api) =>
    api.GET('/v1/webhook_endpoints/{id}/deliveries', { params: { path: { id: ids.webhookEndpoint }, query: { status: 'pending' } } }),
  redeliverWebhookDelivery: (api) =>
    api.POST('/v1/webhook_endpoints/{id}/deliveries/{deliveryId}/redeliver', {
      params: { path: { id: ids.webhookEndpoint, deliveryId: ids.webhookDelivery } },
    }),

  // Tokens
  createUserToken: (api) =>
    api.POST('/v1/user/tokens', { body: { name: 'github-actions-deploy', expires_at: 1740048800, scopes: ['clusters:read', 'installs:write'] } }),
  getUserToken: (api) => api.GET('/v1/user/tokens/{id}', { params: { path: { id: ids.token } } }),
  revokeUserToken: (api) => api.DELETE('/v1/user/tokens/{id}', { params: { path: { id: ids.token } } }),
  getCurrentUser: (api) => api.GET('/v1/user', {}),
  listAuditEvents: (api) => api.GET('/v1/audit_events', { params: { query: { operation: 'deleteCluster', since: 1732262400 } } }),
  listUserAuditEvents: (api) => api.GET('/v1/user/audit_events', { params: { query: { target_id: 'ins_01jd2x9a7c9e1g3j5l7n9q1s3u' } } }),
  revokeUserSession: (api) => api.DELETE('/v1/user/sessions/{id}', { params: { path: { id: ids.token } } }),
  revokeOtherUserSessions: (api) => api.POST('/v1/user/sessions/revoke_others', {}),
  logout: (api) => api.POST('/v1/auth/logout', {}),

  // Authentication (the device flow; the first two need no token, the client sends its own anyway)
  requestDeviceCode: (api) => api.POST('/v1/auth/device/code', { body: { client_id: 'platform-cli' } }),
  pollDeviceToken: (api) =>
    api.POST('/v1/auth/device/token', {
      body: {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        device_code: 'Gm9x2V1kQz8rT4yLw7pN3cHs6bJd0fAeKu5iXo_RqM-',
      },
    }),
  approveDeviceCode: (api) => api.POST('/v1/auth/device/approve', { body: { user_code: 'WDJB-MJHT', action: 'approve' } }),
  getDeviceSignInRequest: (api) => api.GET('/v1/auth/device/requests/{userCode}', { params: { path: { userCode: 'WDJB-MJHT' } } }),

  // Quotas
  listQuotas: (api) => api.GET('/v1/quotas', { params: { query: { cluster_id: ids.cluster } } }),
  getQuota: (api) => api.GET('/v1/quotas/{metric}', { params: { path: { metric: ids.metric } } }),

  // Health (no token)
} satisfies WrittenCalls;

type AnyCall = (api: PlatformClient) => Promise<unknown>;

/**
 * The call of every list of the document that `written` leaves out: its operation-named method, given the
 * contract's example of each path parameter and required query parameter (all a list needs). A list that needs
 * more (a required parameter without an example, or a required header) stops the tests here until its call is
 * written above.
 */
export function listCalls(doc: OpenApiDocument, written: object): Record<string, AnyCall> {
  const derived: Record<string, AnyCall> = {};
  for (const operation of listOperations(doc)) {
    if (operation.operationId in written || !isListOperation(doc, operation)) continue;
    const args: Record<string, Json> = {};
    for (const parameter of operation.parameters) {
      if (parameter.in !== 'path' && !parameter.required) continue;
      const value = parameterExample(parameter);
      if ((parameter.in !== 'path' && parameter.in !== 'query') || value === undefined) {
        throw new Error(
          `${operation.operationId}: its required ${parameter.in} parameter ${parameter.name} cannot be derived from the contract; write its call in test/contract/calls.ts`,
        );
      }
      args[parameter.name] = value;
    }
    const id = operation.operationId as ListOperations;
    derived[id] = (api) => (api[id] as unknown as (init: Record<string, Json>) => Promise<unknown>)(args);
  }
  return derived;
}

/** Every operation's call: the written ones, and the derived ones of the lists left out. */
export const calls = { ...listCalls(loadDocument(), writtenCalls), ...writtenCalls } as Record<OperationId, AnyCall>;
