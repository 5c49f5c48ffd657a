// The migrations' CHECK constraints and the contract's enums say the same thing: every `col IN (…)` constraint
// of the migrated database is compared with the enum of the contract value the column holds. A new enum value in
// the contract without a migration (or the reverse) fails here, not at the first insert of that value.
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import { type Kysely, sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../src/clock.ts';
import * as oneVocabulary from '../src/db/migrations/20261126_1100_one_vocabulary.ts';
import { newUser, useTestDatabase } from './support.ts';

type JsonSchema = { $ref?: string; enum?: (string | null)[]; properties?: Record<string, JsonSchema> };
const schemas = (definition as unknown as { components: { schemas: Record<string, JsonSchema> } }).components.schemas;
const deref = (schema: JsonSchema): JsonSchema => (schema.$ref ? deref(schemas[schema.$ref.split('/').pop()!]!) : schema);
/** `Schema` or `Schema.property`: the enum the contract gives it. */
const contractEnum = (path: string): string[] => {
  const [name, property] = path.split('.') as [string, string | undefined];
  const schema = deref(schemas[name]!);
  const values = (property ? deref(schema.properties![property]!) : schema).enum;
  if (!values) throw new Error(`${path} is not an enum in the contract`);
  // A nullable enum lists null, which a column's CHECK (col IN (…)) lets through by itself.
  return values.filter((value): value is string => value !== null);
};

/** Which contract enum each constrained column holds. */
const CONTRACT_COLUMNS: Record<string, string> = {
  'workspace_members.role': 'WorkspaceMember.role',
  'workspace_invitations.role': 'WorkspaceInvitation.role',
  'clusters.status': 'ClusterStatus',
  'machines.status': 'MachineStatus',
  'suspensions.status': 'Suspension.status',
  'suspensions.reason': 'Suspension.reason',
  'products.regeneration_status': 'Product.regeneration_status',
  'installs.status': 'InstallStatus',
  'install_revisions.status': 'InstallRevisionStatus',
  'compute_configs.provider': 'ComputeProvider',
  'cloud_credentials.provider': 'ComputeProvider',
  'notifications.type': 'Notification.type',
  'notifications.resource_type': 'Notification.resource_type',
  'notifications.severity': 'Notification.severity',
  'events.type': 'EventType',
  'events.object_type': 'Event.object_type',
  'audit_events.actor_type': 'AuditEvent.actor_type',
  'audit_events.token_kind': 'AuditEvent.token_kind',
  'audit_events.outcome': 'AuditEvent.outcome',
  'audit_events.error_code': 'ErrorCode',
  'webhook_deliveries.status': 'WebhookDeliveryStatus',
};
/** Constrained columns whose values the contract never shows. */
const INTERNAL_COLUMNS = new Set(['users.plan', 'tokens.kind', 'device_grants.status']);

const database = useTestDatabase();
let checks: Map<string, string[]>;

beforeAll(async () => {
  const { rows } = await sql<{ table: string; definition: string }>`
    SELECT conrelid::regclass::text AS table, pg_get_constraintdef(oid) AS definition
    FROM pg_constraint WHERE contype = 'c' AND connamespace = 'public'::regnamespace`.execute(database.db);
  checks = new Map();
  for (const { table, definition } of rows) {
    // PostgreSQL stores `col IN ('a', 'b')` as `(col = ANY (ARRAY['a'::text, 'b'::text]))`, and `col IN ('a')`
    // as `(col = 'a'::text)`.
    const match = /^CHECK \(\(?"?(\w+)"? = (?:ANY \(ARRAY\[(.*)\]\)|('[^']*'::text))\)\)?$/.exec(definition);
    if (!match) continue;
    checks.set(
      `${table}.${match[1]}`,
      [...(match[2] ?? match[3]!).matchAll(/'([^']*)'::text/g)].map((m) => m[1]!),
    );
  }
});

describe('CHECK constraints of enum columns', () => {
  it('every such constraint is either a contract value or known to be internal', () => {
    expect([...checks.keys()].filter((column) => !(column in CONTRACT_COLUMNS) && !INTERNAL_COLUMNS.has(column))).toEqual([]);
  });
  it.each(Object.entries(CONTRACT_COLUMNS))('%s lists exactly %s', (column, path) => {
    expect(checks.get(column), `${column} has no CHECK constraint`).toBeDefined();
    expect([...checks.get(column)!].sort()).toEqual([...contractEnum(path)].sort());
  });
});

describe('the notification types of before one vocabulary', () => {
  it('are renamed: a stored cluster.ready is cluster.running, the type of its event, and down renames it back', async () => {
    const { db } = database;
    // A migration takes the database untyped, as the migrator hands it.
    const untyped = db as unknown as Kysely<unknown>;
    const user = await newUser(db, systemClock);
    const typeOf = async (id: string) => (await sql<{ type: string }>`SELECT type FROM notifications WHERE id = ${id}`.execute(db)).rows[0]?.type;
    const insert = (id: string, type: string) =>
      sql`INSERT INTO notifications (id, user_id, workspace_id, type, resource_type, resource_id, title, body, severity, read_at, created_at)
        VALUES (${id}, ${user.userId}, ${user.workspaceId}, ${type}, 'cluster', 'cl_1', 'Cluster a is running', 'b', 'info', NULL, 1)`.execute(db);
    // Up again at the end whatever fails, so the other tests of the file see the migrated database.
    let applied = false;
    await oneVocabulary.down(untyped);
    try {
      await insert('ntf_before', 'cluster.ready');
      await oneVocabulary.up(untyped);
      applied = true;
      expect(await typeOf('ntf_before')).toBe('cluster.running');
      await expect(insert('ntf_after', 'cluster.ready')).rejects.toThrow(/notifications_type_check/);
      await oneVocabulary.down(untyped);
      applied = false;
      expect(await typeOf('ntf_before')).toBe('cluster.ready');
    } finally {
      if (!applied) await oneVocabulary.up(untyped);
    }
    expect(await typeOf('ntf_before')).toBe('cluster.running');
  });
});
