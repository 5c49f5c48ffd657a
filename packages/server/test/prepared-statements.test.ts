// Parameterised queries run as prepared statements of their connection (db/prepared-statements.ts): each
// distinct text is prepared once per connection and reused; texts without parameters (migrations' several
// statements in one) keep the simple protocol; a table changed under a prepared `SELECT *` fails that one call
// and the next one prepares the text again. A raw query's rows are made by a function of its own (raw-query.ts),
// as the driver makes them.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Connection, openDatabase } from '../src/db/connect.ts';
import { rawRows } from '../src/db/raw-query.ts';
import { createTestDatabase, type TestDatabase } from './support.ts';

let database: TestDatabase;
let connection: Connection; // one pooled connection, so every query below shares its prepared statements

beforeAll(async () => {
  database = await createTestDatabase({ migrate: false });
  connection = openDatabase(database.url, 1);
  await sql`CREATE TABLE items (id int PRIMARY KEY, name text)`.execute(connection.db);
  await sql`INSERT INTO items VALUES (1, 'one'), (2, 'two')`.execute(connection.db);
});

afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

const prepared = async () =>
  (
    await sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements WHERE statement ILIKE ${'%items%'} ORDER BY statement`.execute(connection.db)
  ).rows.map((r) => r.statement);

it('prepares a parameterised text once and reuses it with other values', async () => {
  const byId = (id: number) =>
    connection.db
      .selectFrom('items' as never)
      .selectAll()
      .where('id' as never, '=', id as never)
      .execute();
  expect(await byId(1)).toEqual([{ id: 1, name: 'one' }]);
  expect(await byId(2)).toEqual([{ id: 2, name: 'two' }]);
  expect(await byId(3)).toEqual([]);
  const statements = await prepared();
  expect(statements.filter((s) => s.startsWith('select * from "items"'))).toHaveLength(1);
});

it('runs a text without parameters on the simple protocol, several statements included', async () => {
  await sql.raw(`UPDATE items SET name = 'uno' WHERE id = 1; UPDATE items SET name = 'dos' WHERE id = 2`).execute(connection.db);
  const { rows } = await sql<{ name: string }>`SELECT name FROM items ORDER BY id`.execute(connection.db);
  expect(rows.map((r) => r.name)).toEqual(['uno', 'dos']);
  expect((await prepared()).some((s) => s.includes('SET name'))).toBe(false);
});

it('prepares a text again after its table changed under it: one call fails, the next succeeds', async () => {
  const all = () => sql<Record<string, unknown>>`SELECT * FROM items WHERE id = ${1}`.execute(connection.db);
  expect((await all()).rows).toEqual([{ id: 1, name: 'uno' }]);
  await sql`ALTER TABLE items ADD COLUMN size int`.execute(connection.db);
  await expect(all()).rejects.toMatchObject({ code: '0A000' });
  expect((await all()).rows).toEqual([{ id: 1, name: 'uno', size: null }]);
});

it('runs a raw query on the pool, prepared, and inside a transaction as part of it', async () => {
  const text = 'SELECT name FROM items WHERE id = $1';
  expect(await rawRows(connection.db, text, [1])).toHaveLength(1);
  expect(await prepared()).toContain(text);
  // The row inserted in the transaction is seen by the query only if the query runs in that transaction.
  const seen = await connection.db
    .transaction()
    .execute(async (trx) => {
      await sql`INSERT INTO items VALUES (3, 'three')`.execute(trx);
      const rows = await rawRows(trx, text, [3]);
      throw Object.assign(new Error('roll back'), { rows });
    })
    .catch((error: { rows?: unknown }) => error.rows);
  expect(seen).toEqual([{ name: 'three' }]);
  expect(await rawRows(connection.db, text, [3])).toEqual([]);
});

it('makes a raw query’s rows as the driver does, whatever their types, and follows its columns when they change', async () => {
  await sql`CREATE TABLE typed (id bigint, tags text[], doc jsonb, at timestamptz, note text, "odd ""name""" int, __proto__ text)`.execute(connection.db);
  await sql`INSERT INTO typed VALUES (9007199254740991, '{a,b}', '{"k": [1]}', '2026-11-26T12:00:00Z', NULL, 7, 'a column')`.execute(connection.db);
  const text = 'SELECT * FROM typed WHERE id > $1';
  const driver = (await sql<Record<string, unknown>>`SELECT * FROM typed WHERE id > ${0}`.execute(connection.db)).rows;
  expect(await rawRows(connection.db, text, [0])).toEqual(driver);
  expect(driver[0]).toEqual({
    id: 9007199254740991,
    tags: ['a', 'b'],
    doc: { k: [1] },
    at: new Date('2026-11-26T12:00:00Z'),
    note: null,
    'odd "name"': 7,
    ['__proto__']: 'a column',
  });
  // The same text, other columns: the first call after the change fails (a prepared SELECT *), the next has them.
  await sql`ALTER TABLE typed DROP COLUMN note, ADD COLUMN size int`.execute(connection.db);
  await expect(rawRows(connection.db, text, [0])).rejects.toMatchObject({ code: '0A000' });
  expect(await rawRows(connection.db, text, [0])).toEqual([
    { id: 9007199254740991, tags: ['a', 'b'], doc: { k: [1] }, at: new Date('2026-11-26T12:00:00Z'), 'odd "name"': 7, ['__proto__']: 'a column', size: null },
  ]);
});

it('names a statement by a digest of its text, so that no two texts ever share a name', async () => {
  const text = 'SELECT name FROM items WHERE id = $1';
  const { rows } = await sql<{ name: string }>`SELECT name FROM pg_prepared_statements WHERE statement = ${text}`.execute(connection.db);
  expect(rows.map((row) => row.name)).toEqual([expect.stringMatching(new RegExp(`^stmt_\\d+_${createHash('sha1').update(text).digest('hex')}$`))]);
});

it('with preparedStatements off (DATABASE_PREPARED_STATEMENTS=false, for a pooler in transaction mode), prepares nothing', async () => {
  const unprepared = openDatabase(database.url, 1, {}, { preparedStatements: false });
  try {
    const text = 'SELECT name FROM items WHERE id = $1';
    expect(await rawRows(unprepared.db, text, [1])).toEqual([{ name: 'uno' }]);
    expect((await sql<{ id: number }>`SELECT id FROM items WHERE id = ${2}`.execute(unprepared.db)).rows).toEqual([{ id: 2 }]);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_prepared_statements`.execute(unprepared.db);
    expect(rows[0]!.n).toBe(0);
  } finally {
    await unprepared.close();
  }
});
