// The busiest queries (the token look-up of every authenticated request, the page of a workspace list) as SQL
// texts run on the pool itself, past Kysely's query path (building, compiling, acquiring and releasing its
// connection through the driver, transforming the result), which allocated about 16 KB of the ~130 KB garbage
// of a list request and a share of its CPU. The pool's connections prepare the texts as every other query's
// (prepared-statements.ts). Inside a transaction the query joins it through Kysely, as any other statement.
import { CompiledQuery, type Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from './schema.ts';

const pools = new WeakMap<Kysely<Database>, pg.Pool>();

/** Called by openDatabase: queries on `db` outside a transaction may run on `pool` directly. */
export function registerPool(db: Kysely<Database>, pool: pg.Pool): void {
  pools.set(db, pool);
}

/** The pool of `db` (a database openDatabase opened), for its sizes' metrics. */
export function poolOf(db: Kysely<Database>): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('not a database openDatabase opened');
  return pool;
}

/** The rows of one parameterised SQL text ($1, $2, …), on the pool when `db` is not a transaction. */
export async function rawRows<R>(db: Kysely<Database>, text: string, values: unknown[]): Promise<R[]> {
  const pool = pools.get(db);
  if (pool) {
    // Not pool.query: it calls the client with a callback, which the prepared-statement wrapper leaves unnamed.
    const client = await pool.connect();
    try {
      const result = await client.query<unknown[]>({ text, values, rowMode: 'array' });
      return objects(text, result.fields, result.rows) as R[];
    } finally {
      client.release();
    }
  }
  return (await db.executeQuery<R>(CompiledQuery.raw(text, values))).rows;
}

/**
 * A text's rows as objects, each made by one function compiled for its columns. pg's own objects are copies of a
 * template of the columns that every query of the process shares one code path for: with the many row shapes of
 * the server that path went megamorphic, and made the list request's rows at 2.7 times the cost of a process with
 * two queries (CPU profiles of the server and the list benchmark's baseline, same run). Rows asked for as arrays
 * and made by a function of their own are objects of one shape per text, made as fast as a literal.
 */
function objects(text: string, fields: pg.FieldDef[], rows: unknown[][]): object[] {
  let made = makers.get(text);
  // A text's columns change only with the schema (a prepared `SELECT *` is then prepared again).
  if (!made || made.names.length !== fields.length || made.names.some((name, i) => name !== fields[i]!.name)) {
    made = rowMaker(fields.map((field) => field.name));
    makers.set(text, made);
  }
  const out = new Array<object>(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = made.make(rows[i]!);
  return out;
}

const makers = new Map<string, { names: string[]; make: (values: unknown[]) => object }>();

function rowMaker(names: string[]) {
  // The column names are the database's, quoted as JSON: the source holds no text of a request. A literal's
  // `"__proto__": …` would set the prototype; as a computed key it is a column like any other.
  const key = (name: string) => (name === '__proto__' ? `[${JSON.stringify(name)}]` : JSON.stringify(name));
  const make = new Function('v', `return { ${names.map((name, i) => `${key(name)}: v[${i}]`).join(', ')} };`) as (values: unknown[]) => object;
  return { names, make };
}
