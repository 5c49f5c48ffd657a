// The migrations' CHECK constraints and the contract's enums say the same thing: every `col IN (…)` constraint
// of the migrated database is compared with the enum of the contract value the column holds. A new enum value in
// the contract without a migration (or the reverse) fails here, not at the first insert of that value.
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from './support.ts';

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
