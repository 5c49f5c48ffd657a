// Every table has one owner: the module (a file) that alone writes it, through the query builder or in SQL. And
// handlers in operations/ hold no SQL at all: they parse, call a resource or service, and answer. Migrations
// (schema changes) are not scanned.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../src');

/**
 * A table's owner is resources/<table, with - for _>.ts (clusters → resources/clusters.ts, compute_configs →
 * resources/compute-configs.ts), except the tables listed here. So a new resource's table needs no change here.
 */
const OWNER_EXCEPTIONS: Record<string, string> = {
  workspace_members: 'resources/workspaces.ts',
  workspace_invitations: 'resources/workspaces.ts',
  quota_overrides: 'resources/quotas.ts',
  device_grants: 'resources/device-sign-in.ts',
  device_code_attempts: 'resources/device-sign-in.ts',
  device_code_lookups: 'resources/device-sign-in.ts',
  // Rules that span resources, and the engine's own table.
  workflows: 'engine/engine.ts',
  idempotency_keys: 'services/idempotency.ts',
  provisioning_backoff: 'services/provisioning.ts',
  api_rate_limits: 'services/api-rate-limit.ts',
  stream_slots: 'services/stream-slots.ts',
  rate_limit_slots: 'providers/rate-limit.ts',
  // The simulated cloud's own schema.
  'simulated_cloud.servers': 'providers/simulated.ts',
  'simulated_cloud.snapshots': 'providers/simulated.ts',
  'simulated_cloud.releases': 'providers/simulated.ts',
  'simulated_cloud.calls': 'providers/simulated.ts',
  'simulated_cloud.clusters': 'providers/simulated.ts',
  'simulated_cloud.nodes': 'providers/simulated.ts',
};
/** Reference data the migrations fill and no module writes. */
const READ_ONLY = new Set(['regions']);

const ownerOf = (table: string) => OWNER_EXCEPTIONS[table] ?? `resources/${table.replaceAll('_', '-')}.ts`;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'migrations' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sourceFiles(SRC).map((path) => ({ path: relative(SRC, path).replaceAll('\\', '/'), text: readFileSync(path, 'utf8') }));

interface Write {
  table: string;
  file: string;
  line: number;
}

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

/** Writes in a file: Kysely's insertInto/updateTable/deleteFrom/mergeInto('t'), and INSERT INTO / UPDATE / DELETE FROM t in SQL. */
export function writesIn(file: string, text: string): { writes: Write[]; unnamed: Write[] } {
  const writes: Write[] = [];
  const unnamed: Write[] = [];
  for (const m of text.matchAll(/\.(?:insertInto|updateTable|deleteFrom|mergeInto|replaceInto)\(\s*(['"`])?([^'"`),]*)/g)) {
    const at = { file, line: lineOf(text, m.index) };
    // A table named by a variable cannot be checked: it counts as a write of no known table, which fails.
    if (m[1] === undefined) unnamed.push({ table: m[2]!.trim(), ...at });
    else writes.push({ table: m[2]!.trim().split(/\s+as\s+/)[0]!, ...at });
  }
  // Upper-case keywords and lower-case names: "FOR UPDATE" and "DO UPDATE SET" name no table.
  for (const m of text.matchAll(/\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)?)/g)) {
    writes.push({ table: m[1]!, file, line: lineOf(text, m.index) });
  }
  return { writes, unnamed };
}

const found = files.map((f) => writesIn(f.path, f.text));
const writes = found.flatMap((f) => f.writes);

describe('every table is written by exactly one module', () => {
  it('finds the writes it checks (the scan is not blind)', () => {
    const { writes: sample } = writesIn(
      'x.ts',
      "db.insertInto('a').values(v); trx.updateTable('b as b2'); sql`DELETE FROM c WHERE x FOR UPDATE`; sql`INSERT INTO s.t (x)`; db.deleteFrom(\n  'd')",
    );
    expect(sample.map((w) => w.table).sort()).toEqual(['a', 'b', 'c', 'd', 's.t']);
    expect(writesIn('x.ts', 'db.updateTable(table)').unnamed).toHaveLength(1);
    // Every listed owner writes its table somewhere, so a renamed call or file would not pass unseen.
    const written = new Set(writes.map((w) => `${w.table} ${w.file}`));
    expect(Object.entries(OWNER_EXCEPTIONS).filter(([table, owner]) => !written.has(`${table} ${owner}`))).toEqual([]);
  });

  it('finds every table of the Database interface written by its owner, except read-only reference data', () => {
    const schema = readFileSync(join(SRC, 'db/schema.ts'), 'utf8');
    const body = schema.slice(schema.indexOf('export interface Database {'));
    const tables = [...body.slice(0, body.indexOf('\n}')).matchAll(/^\s+([a-z_]+):/gm)].map((m) => m[1]!);
    expect(tables.length).toBeGreaterThan(10);
    const written = new Set(writes.map((w) => `${w.table} ${w.file}`));
    expect(tables.filter((t) => !READ_ONLY.has(t) && !written.has(`${t} ${ownerOf(t)}`))).toEqual([]);
  });

  it('writes each table only in its owner', () => {
    const strays = writes
      .filter((w) => READ_ONLY.has(w.table) || ownerOf(w.table) !== w.file)
      .map((w) => `${w.file}:${w.line} writes ${w.table} (owner: ${ownerOf(w.table)})`);
    expect(strays).toEqual([]);
  });

  it('names the table of every write', () => {
    const unnamed = found.flatMap((f) => f.unnamed).map((w) => `${w.file}:${w.line} writes a table named by ${w.table}`);
    expect(unnamed).toEqual([]);
  });
});

describe('operations/ holds no SQL', () => {
  const SQL =
    /\.(?:selectFrom|insertInto|updateTable|deleteFrom|mergeInto|selectNoFrom|with|transaction|executeQuery)\(|\bsql\s*(?:<[^>]*>)?\s*`|\bsql\.\w+\(|^import\s+(?!type\b)[^;]*from 'kysely'/gm;
  it('has no query builder call, SQL template or Kysely import (types aside) in any handler file', () => {
    const sites = files
      .filter((f) => f.path.startsWith('operations/'))
      .flatMap((f) => [...f.text.matchAll(SQL)].map((m) => `${f.path}:${lineOf(f.text, m.index)} ${m[0]}`));
    expect(files.filter((f) => f.path.startsWith('operations/')).length).toBeGreaterThan(5);
    expect(sites).toEqual([]);
  });

  it('would see them (the pattern is not blind)', () => {
    const samples = [
      "db.selectFrom('x')",
      'trx\n  .updateTable(',
      'sql<number>`count(*)`',
      "sql.ref('a')",
      "import { sql } from 'kysely';",
      'db.transaction()',
    ];
    expect(samples.filter((s) => !new RegExp(SQL.source, 'm').test(s))).toEqual([]);
    expect(new RegExp(SQL.source, 'm').test("import type { Kysely } from 'kysely';")).toBe(false);
  });
});

describe('resources/ and services/ join the request transaction', () => {
  // A change runs in the request's transaction with its audit event (http/audit.ts): a transaction they open must
  // join it (db/transaction.ts, inTransaction), or it would commit apart from the request's.
  const OWN_TRANSACTION = /\.(?:transaction|startTransaction)\(\)/g;
  it('open none of their own: inTransaction(db, work) instead of db.transaction()', () => {
    const scanned = files.filter((f) => f.path.startsWith('resources/') || f.path.startsWith('services/'));
    expect(scanned.length).toBeGreaterThan(10);
    const sites = scanned.flatMap((f) => [...f.text.matchAll(OWN_TRANSACTION)].map((m) => `${f.path}:${lineOf(f.text, m.index)}`));
    expect(sites).toEqual([]);
    expect(OWN_TRANSACTION.test('await db.transaction().execute(')).toBe(true);
  });
});
