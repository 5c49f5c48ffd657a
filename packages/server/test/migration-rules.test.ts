// Upgrades without downtime: a release's migrations run while the previous release's server still runs (a rolling
// update), so they must not take from it what it uses. Each migration's `up` is run in order on an empty database and
// the SQL it sends is read (support/migration-rules.ts): a drop, a rename, a type change or a NOT NULL without a
// default on an existing table fails here, unless the migration is the contract step of an expand that an earlier
// release shipped (`export const contracts`, src/db/migrations/README.md).
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAST_RELEASED_MIGRATION, migrations } from '../src/db/migrate.ts';
import { breakingChanges, type Contracts, type Finding, refusals } from './support/migration-rules.ts';
import { createTestDatabase, type TestDatabase } from './support.ts';

/**
 * Migrations written before the first release that could be deployed (no image or manifests existed, so no server of
 * an earlier version ever ran beside them), each with what it breaks for the version before it. Never add to it.
 */
const GRANDFATHERED: Record<string, string> = {
  '20261125_1200_webhook_claims':
    'drops webhook_deliveries.enqueued_at and renames job_id to lease_id: the dispatcher of the version before, which sent deliveries through pg-boss, reads both',
  '20261126_1000_webhook_ready_queue': "makes webhook_deliveries.workspace_id NOT NULL: the version before's fan-out inserts deliveries without it",
  '20261127_0900_replays_as_sent':
    'changes idempotency_keys.response_body from jsonb to json: the version before reads it as the same values, but compares the text',
};

const order = Object.keys(migrations);
const findings = new Map<string, Finding[]>();
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase({ migrate: false });
  // One connection, logging every statement it is sent: the SQL each migration's `up` runs, builder and raw alike.
  let sent: string[] = [];
  const db = new Kysely<unknown>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 1 }) }),
    log: (event) => {
      sent.push(event.query.sql);
    },
  });
  try {
    for (const [name, migration] of Object.entries(migrations)) {
      sent = [];
      await migration.up(db);
      findings.set(name, breakingChanges(sent));
    }
  } finally {
    await db.destroy();
  }
});

afterAll(async () => {
  await database?.drop();
});

describe('the migrations', () => {
  it('take nothing from the previous release that it still uses (expand, then contract in a later release)', () => {
    const refused = order
      .filter((name) => !(name in GRANDFATHERED))
      .flatMap((name) => refusals(name, findings.get(name)!, (migrations[name] as { contracts?: Contracts }).contracts ?? {}, order, LAST_RELEASED_MIGRATION));
    expect(refused).toEqual([]);
  });

  it('grandfather only migrations that still break something, none after the last release', () => {
    for (const name of Object.keys(GRANDFATHERED)) {
      expect(order, `${name} is no migration`).toContain(name);
      expect(findings.get(name), `${name} breaks nothing: take it off GRANDFATHERED`).not.toEqual([]);
      expect(order.indexOf(name)).toBeLessThanOrEqual(order.indexOf(LAST_RELEASED_MIGRATION));
    }
  });
});

describe('what the check finds in SQL', () => {
  it('drops, renames, type changes and NOT NULL without a default, on tables the migration did not create', () => {
    expect(
      breakingChanges([
        'alter table "clusters" drop column "kaas_version"',
        'ALTER TABLE machines DROP COLUMN IF EXISTS server_id, ADD COLUMN cost numeric(10, 2) NOT NULL',
        'ALTER TABLE installs RENAME COLUMN template_id TO template; ALTER TABLE products RENAME TO offerings',
        'alter table "tokens" alter column "scopes" type jsonb using to_jsonb(scopes)',
        'ALTER TABLE ONLY events ALTER object_id SET NOT NULL',
        'DROP TABLE IF EXISTS api_rate_limits, public.stream_slots CASCADE',
      ]),
    ).toEqual([
      { object: 'clusters.kaas_version', what: 'drops the column' },
      { object: 'machines.server_id', what: 'drops the column' },
      { object: 'machines.cost', what: 'adds the column NOT NULL without a default' },
      { object: 'installs.template_id', what: 'renames the column to template' },
      { object: 'products', what: 'renames the table to offerings' },
      { object: 'tokens.scopes', what: 'changes the column type' },
      { object: 'events.object_id', what: 'makes the column NOT NULL' },
      { object: 'api_rate_limits', what: 'drops the table' },
      { object: 'stream_slots', what: 'drops the table' },
    ]);
  });

  it('lets through what the previous release does not notice, and whatever touches a table made in the same migration', () => {
    expect(
      breakingChanges([
        `ALTER TABLE machines ADD COLUMN note text, ADD COLUMN size int NOT NULL DEFAULT 0, ADD CONSTRAINT size_positive CHECK (size >= 0)`,
        'ALTER TABLE events DROP CONSTRAINT events_type_check; DROP INDEX events_by_type; ALTER TABLE events ALTER COLUMN type DROP NOT NULL',
        `-- DROP TABLE users;\nCREATE FUNCTION f() RETURNS trigger AS $$ BEGIN ALTER TABLE x DROP COLUMN y; END $$ LANGUAGE plpgsql`,
        `UPDATE notifications SET type = 'ALTER TABLE a DROP COLUMN b'`,
        'CREATE TABLE leases (id text, holder text); ALTER TABLE leases DROP COLUMN holder, ALTER COLUMN id SET NOT NULL; DROP TABLE leases',
      ]),
    ).toEqual([]);
  });

  it('passes a contract step only for what a released, earlier migration expanded', () => {
    const steps = ['a_expand', 'b_released', 'c_unreleased', 'd_contract'];
    const dropped = [{ object: 'clusters.old_name', what: 'drops the column' }];
    expect(refusals('d_contract', dropped, { a_expand: ['clusters.old_name'] }, steps, 'b_released')).toEqual([]);
    expect(refusals('d_contract', dropped, {}, steps, 'b_released')).toEqual([
      expect.stringMatching(/^d_contract drops the column clusters\.old_name, which the previous release/),
    ]);
    expect(refusals('d_contract', dropped, { c_unreleased: ['clusters.old_name'] }, steps, 'b_released')).toEqual([
      expect.stringMatching(/names c_unreleased, which is not released yet/),
      expect.stringMatching(/drops the column clusters\.old_name/),
    ]);
    expect(refusals('b_released', dropped, { d_contract: ['clusters.old_name'] }, steps, 'b_released')[0]).toMatch(/does not run before it/);
    expect(refusals('d_contract', [], { a_expand: ['clusters.old_name'] }, steps, 'b_released')).toEqual([
      expect.stringMatching(/which it does not remove or change/),
    ]);
  });
});
