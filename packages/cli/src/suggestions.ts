// The service's suggestions speak HTTP (headers, `GET /v1/clusters`, operationIds); a CLI user acts on commands.
// One table says which command does what an operation does; a suggestion the CLI prints names the command instead
// of the request, and a few parameters the CLI sets for the user (the workspace header, region, ids) get a
// suggestion in its own words. The service's messages stay as they are.
import { createRequire } from 'node:module';
import type { OperationId } from '@platform/api-types';
import type { PlatformApiError } from '@platform/client';

/**
 * What a user runs for an operation: every operation of the contract but those in UNCOVERED and the lists read with
 * `platform api <path>`, which need no entry (test/coverage.test.ts holds both to the contract and to the program's
 * commands).
 */
export const COMMANDS = {
  listWorkspaces: 'platform workspaces list',
  createWorkspace: 'platform workspaces create --name <name>',
  getWorkspace: 'platform workspaces use <id>',
  updateWorkspace: 'platform workspaces rename <id>',
  deleteWorkspace: 'platform workspaces delete <id>',
  listWorkspaceMembers: 'platform workspaces members list <workspace id>',
  updateWorkspaceMember: 'platform workspaces members set-role <workspace id> <user id> <role>',
  removeWorkspaceMember: 'platform workspaces members remove <workspace id> <user id>',
  listWorkspaceInvitations: 'platform workspaces pending <workspace id>',
  createWorkspaceInvitation: 'platform workspaces invite <workspace id> <email>',
  revokeWorkspaceInvitation: 'platform workspaces revoke-invitation <workspace id> <invitation id>',
  transferWorkspaceOwnership: 'platform workspaces transfer <workspace id> <user id>',
  leaveWorkspace: 'platform workspaces leave <workspace id>',
  listUserInvitations: 'platform workspaces invitations',
  acceptInvitation: 'platform workspaces accept <invitation id>',
  declineInvitation: 'platform workspaces decline <invitation id>',
  listRegions: 'platform regions',
  listKaasVersions: 'platform clusters versions',
  listClusters: 'platform clusters list',
  createCluster: 'platform clusters create',
  getCluster: 'platform clusters get <id>',
  updateCluster: 'platform clusters rename <id>',
  deleteCluster: 'platform clusters delete <id>',
  getClusterKubeconfig: 'platform clusters kubeconfig <id>',
  getClusterComputeStatus: 'platform compute status <cluster id>',
  listComputeConfigs: 'platform compute configs list',
  createComputeConfig: 'platform compute configs create',
  getComputeConfig: 'platform compute configs get <id>',
  updateComputeConfig: 'platform compute configs rename <id>',
  deleteComputeConfig: 'platform compute configs delete <id>',
  listCloudCredentials: 'platform compute cloud-credentials list',
  createCloudCredential: 'platform compute cloud-credentials create',
  getCloudCredential: 'platform compute cloud-credentials get <id>',
  updateCloudCredential: 'platform compute cloud-credentials rotate <id>',
  deleteCloudCredential: 'platform compute cloud-credentials delete <id>',
  listMachines: 'platform compute machines list --cluster <id>',
  requestMachine: 'platform compute machines request',
  getMachine: 'platform compute machines get <provider id>',
  deleteMachine: 'platform compute machines delete <provider id>',
  checkMachineDrift: 'platform compute drift <provider id>',
  suspendMachine: 'platform compute machines suspend <provider id>',
  listSuspensions: 'platform compute suspensions list',
  getSuspension: 'platform compute suspensions get <id>',
  resumeSuspension: 'platform compute suspensions resume <id>',
  listRegistryCredentials: 'platform registry credentials list',
  createRegistryCredential: 'platform registry credentials create',
  getRegistryCredential: 'platform registry credentials get <id>',
  updateRegistryCredential: 'platform registry credentials rotate <id>',
  deleteRegistryCredential: 'platform registry credentials delete <id>',
  listProducts: 'platform products list',
  createProduct: 'platform products create',
  getProduct: 'platform products get <id>',
  updateProduct: 'platform products update <id>',
  deleteProduct: 'platform products delete <id>',
  listInstalls: 'platform installs list',
  createInstall: 'platform installs create',
  getInstall: 'platform installs get <id>',
  updateInstall: 'platform installs update <id>',
  deleteInstall: 'platform installs delete <id>',
  streamInstallLogs: 'platform installs logs <id>',
  listInstallRevisions: 'platform installs revisions <id>',
  rollbackInstall: 'platform installs rollback <id> --revision <n>',
  listNotifications: 'platform notifications list',
  markNotificationRead: 'platform notifications read <id>',
  listEvents: 'platform events list',
  streamEvents: 'platform events follow',
  listAuditEvents: 'platform audit list',
  listUserAuditEvents: 'platform audit list --mine',
  listWebhookEndpoints: 'platform webhooks list',
  createWebhookEndpoint: 'platform webhooks create --url <url>',
  getWebhookEndpoint: 'platform webhooks get <id>',
  updateWebhookEndpoint: 'platform webhooks update <id>',
  deleteWebhookEndpoint: 'platform webhooks delete <id>',
  rotateWebhookEndpointSecret: 'platform webhooks rotate-secret <id>',
  listWebhookDeliveries: 'platform webhooks deliveries list <endpoint id>',
  redeliverWebhookDelivery: 'platform webhooks deliveries redeliver <endpoint id> <delivery id>',
  listUserTokens: 'platform tokens list',
  createUserToken: 'platform tokens create',
  getUserToken: 'platform tokens get <id>',
  revokeUserToken: 'platform tokens revoke <id>',
  listUserSessions: 'platform sessions list',
  getCurrentUser: 'platform whoami',
  revokeUserSession: 'platform sessions revoke <id>',
  revokeOtherUserSessions: 'platform sessions revoke-others',
  logout: 'platform logout',
  requestDeviceCode: 'platform login',
  pollDeviceToken: 'platform login',
  listQuotas: 'platform quotas list',
  getQuota: 'platform quotas get <metric>',
} as const satisfies Partial<Record<OperationId, string>>;

/** The operations no command calls, and why. */
export const UNCOVERED = {
  approveDeviceCode: 'approved on the browser page whose address `platform login` prints; a CLI approving its own sign-in would defeat it',
  getDeviceSignInRequest: 'shown on the browser page whose address `platform login` prints, before the user approves there',
} as const satisfies Partial<Record<OperationId, string>>;

const LOGIN = 'Run `platform login`, or pass a personal access token with --token or PLATFORM_TOKEN (create one with `platform tokens create`).';

/**
 * Parameters whose fix is a command or a flag of the CLI, whatever the operation; keyed by the error's `param`
 * with list indexes dropped (`overrides[].template_helm_source_id`).
 */
const BY_PARAM: Record<string, string> = {
  'X-Workspace-Id': 'List your workspaces with `platform workspaces list`, then choose one with `platform workspaces use <id>` or --workspace <id>.',
  region_id: 'List the regions with `platform regions`; --region takes one of their ids.',
  product_id: 'List your products with `platform products list`; --product takes one of their ids.',
  cluster_id: 'List your clusters with `platform clusters list`; --cluster takes one of their ids.',
  compute_config_id: 'List your compute configs with `platform compute configs list`; --config takes one of their ids.',
  'Last-Event-ID': 'Give --after the id of an event of the workspace (`platform events list` shows them), or --all to start from the oldest one kept.',
  'overrides[].template_helm_source_id': 'Name a source of the product in --values <source>=<file>; `platform products get <id> --json` shows its sources.',
};

/** The command words alone (`platform clusters get`), for `--help`. */
function commandWords(command: string): string {
  return command.split(' <')[0]!.split(' --')[0]!;
}

let routes: Map<string, OperationId> | undefined;

/** `GET /v1/clusters` → `listClusters`, from the bundled contract; read only when an error is printed. */
function operationOf(method: string, path: string): OperationId | undefined {
  if (!routes) {
    const document = createRequire(import.meta.url)('@platform/api-types/openapi.json') as {
      paths: Record<string, Record<string, { operationId?: OperationId }>>;
    };
    routes = new Map();
    for (const [route, item] of Object.entries(document.paths)) {
      for (const [verb, operation] of Object.entries(item)) if (operation.operationId) routes.set(`${verb.toUpperCase()} ${route}`, operation.operationId);
    }
  }
  return routes.get(`${method} ${path}`);
}

const commandOf = (operationId: string): string | undefined => (COMMANDS as Record<string, string>)[operationId];

/** Rewrites the requests and operations a suggestion names into commands; what has no command stays. */
export function rewrite(suggestion: string, retryAfter?: number): string {
  return suggestion
    .replace(/\b(GET|POST|PUT|PATCH|DELETE) (\/v1\/[\w/{}-]+)/g, (request, method: string, path: string) => {
      const operation = operationOf(method, path);
      const command = operation && commandOf(operation);
      return command ? `\`${command}\`` : request;
    })
    .replace(/the (\w+) operation in the API reference/g, (text, operation: string) => {
      const command = commandOf(operation);
      return command ? `\`${commandWords(command)} --help\`` : text;
    })
    .replace(/the number of seconds in Retry-After/g, retryAfter === undefined ? 'a minute' : `${retryAfter} second${retryAfter === 1 ? '' : 's'}`);
}

/** A token restricted to other workspaces than the one asked for: how to get one that covers it. */
function restrictedElsewhere(error: Pick<PlatformApiError, 'status' | 'details'>): string | undefined {
  const details = error.details as { workspace_ids?: unknown; workspace_id?: unknown } | undefined;
  if (error.status !== 403 || !Array.isArray(details?.workspace_ids) || typeof details.workspace_id !== 'string') return undefined;
  const covered = details.workspace_ids.length > 0 ? details.workspace_ids.join(', ') : 'no workspace any more';
  return `This token may act only in ${covered}. Use one that covers ${details.workspace_id}, or create it (signed in with \`platform login\`): \`platform tokens create --name <name> --workspace-ids ${details.workspace_id}\`.`;
}

/** The suggestion to print for an API error, in the CLI's words; undefined when there is none. */
export function suggestionFor(error: Pick<PlatformApiError, 'status' | 'param' | 'suggestion' | 'retryAfter' | 'details'>): string | undefined {
  if (error.status === 401) return LOGIN;
  const restricted = restrictedElsewhere(error);
  if (restricted) return restricted;
  // A suggestion pointing at the API reference is about the value's shape, which the command's help covers better.
  const aboutShape = error.suggestion?.includes('operation in the API reference') ?? false;
  const byParam = error.param === undefined ? undefined : BY_PARAM[error.param.replace(/\[\d+\]/g, '[]')];
  if (byParam && !aboutShape) return byParam;
  return error.suggestion === undefined ? undefined : rewrite(error.suggestion, error.retryAfter);
}
