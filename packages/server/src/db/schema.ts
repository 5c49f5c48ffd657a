// The database as Kysely sees it. Timestamps are bigint Unix seconds (read back as numbers, see connect.ts).
// Columns that hold a contract value (statuses, enums, JSON shapes) take their type from the generated contract
// types, so the database and the API cannot drift apart; migrations-check.test.ts holds the CHECK constraints to
// the same enums.
import type { Schema } from '@platform/api-types';
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

type Json<T> = ColumnType<T, string, string>;
type Seconds = number;

export type Plan = 'free' | 'pro';

export interface UsersTable {
  id: string;
  email: string;
  plan: Plan;
  created_at: Seconds;
}

export interface WorkspacesTable {
  id: string;
  name: string;
  icon: string | null;
  owner_id: string;
  created_at: Seconds;
}

export interface WorkspaceMembersTable {
  workspace_id: string;
  user_id: string;
  role: Schema<'WorkspaceMember'>['role'];
  created_at: Seconds;
}

export interface WorkspaceInvitationsTable {
  id: string;
  workspace_id: string;
  /** Lower-case, as users' emails are stored. */
  email: string;
  role: Schema<'WorkspaceInvitation'>['role'];
  invited_by: string;
  created_at: Seconds;
  expires_at: Seconds;
}

export interface TokensTable {
  id: string;
  user_id: string;
  kind: 'pat' | 'session';
  name: string;
  /** SHA-256 of the token; the plaintext is never stored. */
  digest: Buffer;
  /** `svc_pat_` + 4 characters, or the first 4 of a session token, for display. */
  prefix: string;
  expires_at: Seconds | null;
  last_used_at: Seconds | null;
  created_at: Seconds;
  /** A PAT's scopes; null for a session token, which holds every scope. */
  scopes: string[] | null;
  /** The workspaces a PAT may act in; null: every workspace of its user (always, for a session token). */
  workspace_ids: string[] | null;
  /** A session's client address and User-Agent at its last recorded use (PATs: null). */
  last_address: string | null;
  user_agent: string | null;
  /** When its owner was told that it expires soon (token.expiring_soon); null until then. */
  expiry_told_at: ColumnType<Seconds | null, Seconds | null | undefined, Seconds | null>;
}

export interface RegionsTable {
  id: string;
  name: string;
  country: string;
  created_at: Seconds;
}

/** A Kubernetes version of the managed control plane (`v1.35`) and the patch release new clusters of it run. */
export interface KaasVersionsTable {
  id: string;
  release: string;
  available_for_new_clusters: boolean;
  end_of_support_at: Seconds | null;
  created_at: Seconds;
}

export interface ClustersTable {
  id: string;
  workspace_id: string;
  name: string;
  region_id: string;
  kaas_version: string;
  /**
   * The patch release the cluster was created with: its control plane's, and its workers' kubelet and kubeadm.
   * Nullable in the table until a later release's contract step; never null in a row (a trigger fills it in for a
   * previous release's insert).
   */
  kaas_release: ColumnType<string, string | undefined, string>;
  status: Schema<'ClusterStatus'>;
  status_message: string | null;
  created_at: Seconds;
}

export type ProviderConfig = Schema<'ComputeConfig'>['provider_config'];

export interface ComputeConfigsTable {
  id: string;
  workspace_id: string;
  name: string;
  provider: Schema<'ComputeProvider'>;
  provider_config: Json<ProviderConfig>;
  cloud_credential_id: string | null;
  created_at: Seconds;
}

export interface MachinesTable {
  provider_id: string;
  cluster_id: string;
  compute_config_id: string;
  node_name: string;
  status: Schema<'MachineStatus'>;
  byom: boolean;
  server_type: string;
  cpu: number;
  memory_bytes: ColumnType<number, number, number>;
  /** The provider's server while there is one (null while queued and while suspended). */
  server_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Seconds;
}

export interface SuspensionsTable {
  id: string;
  workspace_id: string;
  cluster_id: string;
  provider_id: string;
  node_name: string;
  reason: Schema<'Suspension'>['reason'];
  status: Schema<'Suspension'>['status'];
  snapshot_id: string | null;
  created_at: Seconds;
  expires_at: Seconds | null;
}

export interface RegistryCredentialsTable {
  id: string;
  workspace_id: string;
  name: string;
  registry_url: string;
  username: string;
  /** AES-256-GCM; see services/secrets.ts. */
  password_ciphertext: Buffer | null;
  is_active: boolean;
  created_at: Seconds;
  last_used_at: Seconds | null;
}

export interface CloudCredentialsTable {
  id: string;
  workspace_id: string;
  name: string;
  provider: Schema<'ComputeProvider'>;
  /** AES-256-GCM; see services/secrets.ts. */
  secret_ciphertext: Buffer;
  /** New compute configs and machines use only an active credential. */
  is_active: Generated<boolean>;
  created_at: Seconds;
  last_used_at: Seconds | null;
}

export type HelmChart = Schema<'HelmChart'>;
export type ProductSource = Schema<'ProductSource'>;

export interface ProductsTable {
  id: string;
  workspace_id: string;
  name: string;
  template_id: string;
  sources: Json<ProductSource[]>;
  cluster_ids: Json<string[]>;
  stripe_price_ids: Json<string[]>;
  settings: Json<Schema<'ProductSettings'>>;
  regeneration_status: Schema<'Product'>['regeneration_status'];
  created_at: Seconds;
  updated_at: Seconds;
}

export type InstallOverride = Schema<'InstallOverride'>;

export interface InstallsTable {
  id: string;
  workspace_id: string;
  product_id: string;
  region_id: string;
  cluster_id: string | null;
  status: Schema<'InstallStatus'>;
  workflow_id: string;
  overrides: Json<InstallOverride[]>;
  /** The product template the install's releases render; null until installed. */
  template_id: ColumnType<string | null, string | null | undefined, string | null>;
  status_message: string | null;
  created_at: Seconds;
  updated_at: Seconds;
}

/** One deploy of an install: what it rendered and how it ended. */
export interface InstallRevisionsTable {
  id: string;
  install_id: string;
  revision: number;
  workflow_id: string;
  template_id: string;
  sources: Json<ProductSource[]>;
  overrides: Json<InstallOverride[]>;
  status: Schema<'InstallRevisionStatus'>;
  created_at: Seconds;
  updated_at: Seconds;
}

export type WorkflowKind =
  | 'createCluster'
  | 'requestMachine'
  | 'deleteMachine'
  | 'suspendMachine'
  | 'resumeSuspension'
  | 'createInstall'
  | 'updateInstall'
  | 'rollbackInstall'
  | 'deleteInstall'
  | 'regenerateProduct';

/** The truth about asynchronous work (see engine/engine.ts); pg-boss jobs only trigger its steps. */
export interface WorkflowsTable {
  id: string;
  kind: WorkflowKind;
  subject_id: string;
  status: 'pending' | 'running' | 'succeeded' | 'failed';
  /** The next step to run; steps are re-entrant, so a re-run after a crash repeats it safely. */
  step: Generated<string>;
  /** Checkpoints written by steps (provider ids), so a re-run adopts what an earlier run created. */
  state: ColumnType<Record<string, unknown>, string | undefined, string>;
  /** Consecutive failed attempts of the current step. */
  attempts: Generated<number>;
  /** Due at this moment (clock seconds); null while a job for it is queued or running, or when finished. */
  run_after: ColumnType<Seconds | null, Seconds | null | undefined, Seconds | null>;
  enqueued_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** The pg-boss job last sent for it: while that job waits in the queue, the workflow is no orphan. */
  job_id: ColumnType<string | null, string | null | undefined, string | null>;
  error: ColumnType<string | null, string | null | undefined, string | null>;
  /** The W3C traceparent of the span that started it (its steps' parent); null without tracing. */
  trace_parent: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Seconds;
  updated_at: Seconds;
}

export interface ProvisioningBackoffTable {
  cluster_id: string;
  failures: number;
  backoff_until: Seconds;
  offering: string;
}

export interface IdempotencyKeysTable {
  user_id: string;
  key: string;
  operation: string;
  request_hash: string;
  /** Null while the first request is still running. */
  status_code: number | null;
  response_body: Json<unknown> | null;
  /** The headers the first response's handler set (none kept before they were). */
  response_headers: Json<Record<string, string>> | null;
  created_at: Seconds;
}

export interface NotificationsTable {
  id: string;
  user_id: string;
  /** The workspace of the resource it is about; null for user-level ones (a quota reached). */
  workspace_id: string | null;
  type: Schema<'Notification'>['type'];
  resource_type: Schema<'Notification'>['resource_type'];
  resource_id: string;
  title: string;
  body: string;
  severity: Schema<'Notification'>['severity'];
  read_at: Seconds | null;
  created_at: Seconds;
}

export interface QuotaOverridesTable {
  id: Generated<number>;
  user_id: string | null;
  workspace_id: string | null;
  metric: string;
  limit: ColumnType<number, number, number>;
}

/** A device authorization request (RFC 8628); see services/device-grants.ts. */
export interface DeviceGrantsTable {
  id: string;
  /** SHA-256 of the device code; the plaintext is never stored. */
  device_code_digest: Buffer;
  /** Normalised: 8 upper-case letters, no dash. */
  user_code: string;
  client_id: string | null;
  scope: string | null;
  /** `issued` once the approved grant's token was handed out (exactly once). */
  status: 'pending' | 'approved' | 'denied' | 'issued';
  /** Who approved or denied it. */
  user_id: string | null;
  /** Seconds between polls; every slow_down adds 5. */
  interval_seconds: number;
  last_polled_at: Seconds | null;
  decided_at: Seconds | null;
  token_id: string | null;
  created_at: Seconds;
  expires_at: Seconds;
}

/** Unknown user codes a user entered in the current window (the approval's brute-force limit). */
export interface DeviceCodeAttemptsTable {
  user_id: string;
  window_started_at: Seconds;
  attempts: number;
}

export interface ApiRateLimitsTable {
  key: string;
  window_started_at: Seconds;
  requests: number;
}

export interface StreamSlotsTable {
  id: string;
  key: string;
  acquired_at: Seconds;
  expires_at: Seconds;
}

export interface EventsTable {
  id: string;
  workspace_id: string;
  type: Schema<'Event'>['type'];
  object_type: Schema<'Event'>['object_type'];
  object_id: string;
  object: Json<Schema<'Event'>['object']>;
  /** The W3C traceparent of the span that recorded it (its deliveries' parent); null without tracing. */
  trace_parent: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Seconds;
}

export interface AuditEventsTable {
  id: string;
  created_at: Seconds;
  actor_type: Schema<'AuditEvent'>['actor_type'];
  actor_id: string | null;
  token_kind: Schema<'AuditEvent'>['token_kind'];
  token_id: string | null;
  workspace_id: string | null;
  operation: string;
  target_ids: string[];
  request_id: string | null;
  outcome: Schema<'AuditEvent'>['outcome'];
  status: number | null;
  error_code: Schema<'AuditEvent'>['error_code'];
  client_address: string | null;
}

export interface WebhookEndpointsTable {
  id: string;
  workspace_id: string;
  url: string;
  /** Empty: every type. */
  event_types: Schema<'EventType'>[];
  description: string;
  enabled: boolean;
  disabled_reason: string | null;
  /** AES-256-GCM of the whsec_ secret; see services/secrets.ts. */
  secret_ciphertext: Buffer;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_expires_at: Seconds | null;
  failing_since: Seconds | null;
  /** Failed attempts since the last success; the circuit opens at WEBHOOK_CIRCUIT_FAILURES. */
  consecutive_failures: Generated<number>;
  /** Circuit open: nothing is attempted before then, then one probe at a time. */
  cooling_until: Seconds | null;
  created_at: Seconds;
  updated_at: Seconds;
}

/** One event to one endpoint (see resources/webhook-deliveries.ts). */
export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  /** The endpoint's (the claim walks the pending deliveries by workspace). */
  workspace_id: string;
  event_id: string;
  event_type: Schema<'EventType'>;
  status: Schema<'WebhookDeliveryStatus'>;
  attempts: Generated<number>;
  first_attempt_at: Seconds;
  last_attempt_at: Seconds | null;
  last_response_status: number | null;
  last_duration_ms: number | null;
  last_error: string | null;
  next_attempt_at: Seconds | null;
  lease_id: ColumnType<string | null, string | null | undefined, string | null>;
  leased_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Seconds;
  updated_at: Seconds;
}

export interface Database {
  users: UsersTable;
  workspaces: WorkspacesTable;
  workspace_members: WorkspaceMembersTable;
  workspace_invitations: WorkspaceInvitationsTable;
  tokens: TokensTable;
  regions: RegionsTable;
  kaas_versions: KaasVersionsTable;
  clusters: ClustersTable;
  compute_configs: ComputeConfigsTable;
  machines: MachinesTable;
  suspensions: SuspensionsTable;
  registry_credentials: RegistryCredentialsTable;
  cloud_credentials: CloudCredentialsTable;
  products: ProductsTable;
  installs: InstallsTable;
  install_revisions: InstallRevisionsTable;
  workflows: WorkflowsTable;
  idempotency_keys: IdempotencyKeysTable;
  notifications: NotificationsTable;
  events: EventsTable;
  audit_events: AuditEventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  quota_overrides: QuotaOverridesTable;
  device_grants: DeviceGrantsTable;
  device_code_attempts: DeviceCodeAttemptsTable;
  /** Look-ups of device codes, counted apart from decisions (the same columns). */
  device_code_lookups: DeviceCodeAttemptsTable;
  provisioning_backoff: ProvisioningBackoffTable;
  rate_limit_slots: { key: string; next_at_ms: ColumnType<number, number, number> };
  api_rate_limits: ApiRateLimitsTable;
  stream_slots: StreamSlotsTable;
}

export type Row<T extends keyof Database> = Selectable<Database[T]>;
export type NewRow<T extends keyof Database> = Insertable<Database[T]>;
