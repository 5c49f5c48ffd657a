// Migrations run through Kysely's migrator, which serialises concurrent runs with an advisory lock, so
// two processes starting at once are safe. Each release's migrations keep the previous release's server working
// (migrations/README.md: expand, then contract); test/migration-rules.test.ts checks it.
import type { Kysely } from 'kysely';
import { type Migration, Migrator, NO_MIGRATIONS } from 'kysely/migration';
import { type Connection, openDatabase } from './connect.ts';
import * as initial from './migrations/20261122_0001_initial.ts';
import * as credentials from './migrations/20261122_0002_credentials.ts';
import * as workflows from './migrations/20261122_0003_workflows.ts';
import * as deviceGrants from './migrations/20261122_0005_device_grants.ts';
import * as apiRateLimits from './migrations/20261122_0006_api_rate_limits.ts';
import * as streamSlots from './migrations/20261122_0007_stream_slots.ts';
import * as productClustersInWorkspace from './migrations/20261123_0008_product_clusters_in_workspace.ts';
import * as contractEnumChecks from './migrations/20261123_0009_contract_enum_checks.ts';
import * as workflowKindsByOperation from './migrations/20261123_0010_workflow_kinds_by_operation.ts';
import * as installRevisions from './migrations/20261123_1100_install_revisions.ts';
import * as cloudCredentialsActive from './migrations/20261123_1200_cloud_credentials_active.ts';
import * as workspaceRoles from './migrations/20261123_1300_workspace_roles.ts';
import * as workspaceInvitations from './migrations/20261123_1301_workspace_invitations.ts';
import * as tokenScopes from './migrations/20261123_1400_token_scopes.ts';
import * as sessionLastUse from './migrations/20261123_1401_session_last_use.ts';
import * as events from './migrations/20261123_1600_events.ts';
import * as auditEvents from './migrations/20261124_1000_audit_events.ts';
import * as webhooks from './migrations/20261124_2000_webhooks.ts';
import * as tokenWorkspaces from './migrations/20261124_3000_token_workspaces.ts';
import * as notificationWorkspace from './migrations/20261124_3001_notification_workspace.ts';
import * as webhookClaims from './migrations/20261125_1200_webhook_claims.ts';
import * as webhookReadyQueue from './migrations/20261126_1000_webhook_ready_queue.ts';
import * as oneVocabulary from './migrations/20261126_1100_one_vocabulary.ts';
import * as webhookLiveLeases from './migrations/20261126_2000_webhook_live_leases.ts';
import * as webhookDeliveryIndexes from './migrations/20261126_2100_webhook_delivery_indexes.ts';
import * as deliveriesGoWithTheirEvent from './migrations/20261126_2200_deliveries_go_with_their_event.ts';
import * as replaysAsSent from './migrations/20261127_0900_replays_as_sent.ts';
import * as kaasVersions from './migrations/20261128_1000_kaas_versions.ts';
import * as replayedHeaders from './migrations/20261128_1100_replayed_headers.ts';
import * as traceParents from './migrations/20261128_2000_trace_parents.ts';
import * as accessChangeTriggers from './migrations/20261129_0020_access_change_triggers.ts';
import * as deviceCodeLookups from './migrations/20261129_0100_device_code_lookups.ts';
import type { Database } from './schema.ts';

export const migrations: Record<string, Migration> = {
  '20261122_0001_initial': initial,
  '20261122_0002_credentials': credentials,
  '20261122_0003_workflows': workflows,
  '20261122_0005_device_grants': deviceGrants,
  '20261122_0006_api_rate_limits': apiRateLimits,
  '20261122_0007_stream_slots': streamSlots,
  '20261123_0008_product_clusters_in_workspace': productClustersInWorkspace,
  '20261123_0009_contract_enum_checks': contractEnumChecks,
  '20261123_0010_workflow_kinds_by_operation': workflowKindsByOperation,
  '20261123_1100_install_revisions': installRevisions,
  '20261123_1200_cloud_credentials_active': cloudCredentialsActive,
  '20261123_1300_workspace_roles': workspaceRoles,
  '20261123_1301_workspace_invitations': workspaceInvitations,
  '20261123_1400_token_scopes': tokenScopes,
  '20261123_1401_session_last_use': sessionLastUse,
  '20261123_1600_events': events,
  '20261124_1000_audit_events': auditEvents,
  '20261124_2000_webhooks': webhooks,
  '20261124_3000_token_workspaces': tokenWorkspaces,
  '20261124_3001_notification_workspace': notificationWorkspace,
  '20261125_1200_webhook_claims': webhookClaims,
  '20261126_1000_webhook_ready_queue': webhookReadyQueue,
  '20261126_1100_one_vocabulary': oneVocabulary,
  '20261126_2000_webhook_live_leases': webhookLiveLeases,
  '20261126_2100_webhook_delivery_indexes': webhookDeliveryIndexes,
  '20261126_2200_deliveries_go_with_their_event': deliveriesGoWithTheirEvent,
  '20261127_0900_replays_as_sent': replaysAsSent,
  '20261128_1000_kaas_versions': kaasVersions,
  '20261128_1100_replayed_headers': replayedHeaders,
  '20261128_2000_trace_parents': traceParents,
  '20261129_0020_access_change_triggers': accessChangeTriggers,
  '20261129_0100_device_code_lookups': deviceCodeLookups,
};

/**
 * The newest migration of the last release: those up to it have run under a released server. A contract step may
 * remove only what a migration up to it expanded (migrations/README.md). Set it to the newest migration when a
 * version is released.
 */
export const LAST_RELEASED_MIGRATION = '20261127_0900_replays_as_sent';

function migrator(db: Kysely<Database>): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => migrations } });
}

async function check(run: Promise<{ error?: unknown }>): Promise<void> {
  const { error } = await run;
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

export const migrateToLatest = (db: Kysely<Database>): Promise<void> => check(migrator(db).migrateToLatest());

/**
 * Applies pending migrations on a connection of their own to the direct URL: the migrator's lock is a session
 * advisory lock (taken outside its transaction), which a pooler in transaction mode would take on one server
 * connection and release on another.
 */
export async function applyMigrations(connection: Connection): Promise<void> {
  if (connection.direct === connection.url) return migrateToLatest(connection.db);
  const direct = openDatabase(connection.direct, 1);
  try {
    await migrateToLatest(direct.db);
  } finally {
    await direct.close();
  }
}

/** Undoes every migration (tests use it to prove `down` works). */
export const migrateDownToZero = async (db: Kysely<Database>): Promise<void> => {
  await check(migrator(db).migrateTo(NO_MIGRATIONS));
};
