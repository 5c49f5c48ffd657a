// Changes to what a user may access (a token revoked, a session ended, a membership removed or its role changed),
// announced to every server process with PostgreSQL NOTIFY, so that their open streams check their caller again
// at once instead of at their next periodic check. NOTIFY is sent when the change's transaction commits, and
// reaches this process's own listener too: one path for every process.
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from '../db/schema.ts';

const CHANNEL = 'access_changed';
/** After its connection broke, the listener tries again this often; meanwhile streams rely on their periodic check. */
const RECONNECT_MS = 1000;

/** Tells every process, once the transaction commits (at once outside one), that these users' access changed. */
export async function announceAccessChange(db: Kysely<Database>, userIds: readonly string[]): Promise<void> {
  for (const userId of new Set(userIds)) await sql`SELECT pg_notify(${CHANNEL}, ${userId})`.execute(db);
}

export interface AccessChanges {
  /** Calls `changed` whenever the user's access may have changed; returns the function that stops it. */
  watch(userId: string, changed: () => void): () => void;
  close(): Promise<void>;
}

/** Listens on its own connection (LISTEN holds one), reconnecting after a break. */
export async function listenForAccessChanges(connectionString: string, logger: Logger): Promise<AccessChanges> {
  const watchers = new Map<string, Set<() => void>>();
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    const next = new pg.Client({ connectionString });
    next.on('notification', (message) => {
      for (const changed of watchers.get(message.payload ?? '') ?? []) changed();
    });
    next.on('error', () => reconnect(next));
    next.on('end', () => reconnect(next));
    client = next;
    await next.connect();
    await next.query(`LISTEN ${CHANNEL}`);
  };
  const reconnect = (broken: pg.Client) => {
    if (closed || client !== broken || retry) return;
    client = undefined;
    broken.end().catch(() => {});
    logger.warn('lost the connection listening for access changes; streams check their callers on their timers until it is back');
    retry = setTimeout(() => {
      retry = undefined;
      connect().catch((error: Error) => {
        if (client) reconnect(client);
        logger.warn({ err: error.message }, 'cannot listen for access changes yet');
      });
    }, RECONNECT_MS);
  };
  await connect();

  return {
    watch(userId, changed) {
      let set = watchers.get(userId);
      if (!set) watchers.set(userId, (set = new Set()));
      set.add(changed);
      return () => {
        set.delete(changed);
        if (set.size === 0) watchers.delete(userId);
      };
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}
