// Every parameterised query runs as a named (prepared) statement of its connection, so PostgreSQL parses and
// plans each distinct SQL text once per connection instead of on every call. The API's queries are short
// look-ups where planning is most of the database's work: the two queries of a list request (the token joined
// with its workspace, then the page) ran 7,250 times a second unnamed and 16,340 prepared (pgbench, 2 clients,
// on the list benchmark's data).
//
// Kysely's pg dialect calls `client.query(text, values)`; this wraps that call on each pooled client.
// Statements without parameters keep the simple protocol (migrations send several statements in one text,
// which a prepared statement cannot hold).
//
// A pooler in transaction mode (PgBouncer before 1.21, or with max_prepared_statements = 0) runs a client's
// statements on whichever server connection is free, where its prepared statements may be missing or be another
// client's: DATABASE_PREPARED_STATEMENTS=false turns this off (connect.ts). A statement's name holds a digest of its
// text, so that a misconfigured pooler fails the query ("prepared statement … does not exist") instead of running
// a statement another client prepared under the same name.
import { createHash } from 'node:crypto';
import type pg from 'pg';

/** A connection prepares at most this many statements; further texts run unnamed (generated SQL is bounded). */
const MAX_PREPARED_PER_CONNECTION = 1000;

/**
 * A prepared `SELECT *` fails with 0A000 once its table gains or loses a column (a migration while the
 * server runs). The text is then prepared again under a new name, so only the call that met the change fails.
 */
const isStalePlan = (error: unknown): boolean =>
  (error as { code?: string } | null)?.code === '0A000' && /cached plan must not change result type/.test((error as Error).message);

export function prepareStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => Promise<pg.QueryResult>;
  const names = new Map<string, string>();
  let counter = 0;
  const prepared = (text: string, values: unknown[], rowMode?: 'array'): Promise<pg.QueryResult> => {
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= MAX_PREPARED_PER_CONNECTION) return query({ text, values, rowMode });
      name = `stmt_${++counter}_${createHash('sha1').update(text).digest('hex')}`;
      names.set(text, name);
    }
    return query({ name, text, values, rowMode }).catch((error: unknown) => {
      if (isStalePlan(error)) names.delete(text);
      throw error;
    });
  };
  client.query = ((...args: unknown[]) => {
    const [text, values] = args;
    if (args.length === 2 && typeof text === 'string' && Array.isArray(values) && values.length > 0) return prepared(text, values);
    // A query config without a name, asking for rows as arrays (raw-query.ts), is prepared the same way.
    const config = args.length === 1 ? (text as Partial<pg.QueryConfig> & { rowMode?: string }) : undefined;
    if (
      config?.name === undefined &&
      config?.rowMode === 'array' &&
      typeof config.text === 'string' &&
      Array.isArray(config.values) &&
      config.values.length > 0
    ) {
      return prepared(config.text, config.values, 'array');
    }
    return query(...args);
  }) as typeof client.query;
}
