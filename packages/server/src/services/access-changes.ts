// Changes to what a user may access (a token revoked, a session ended, a membership removed or its role changed),
// announced to every server process with PostgreSQL NOTIFY, so that their open streams check their caller again
// at once instead of at their next periodic check. NOTIFY is sent when the change's transaction commits, and
// reaches this process's own listener too: one path for every process. What a process keeps of its callers' access
// (access-cache.ts) is forgotten on every announcement it hears, and kept only while it hears them.
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from '../db/schema.ts';

const CHANNEL = 'access_changed';
/** After its connection broke, the listener tries again this often; meanwhile streams rely on their periodic check. */
const RECONNECT_MS = 1000;

/** How long the listener waits for a round trip that makes sure it heard what was committed before it. */
const HEARD_TIMEOUT_MS = 2000;

/** Announcements this process has made (counted when made, so a request can tell it made one). */
let announcedHere = 0;
export const announcementsMadeHere = (): number => announcedHere;

/** Tells every process, once the transaction commits (at once outside one), that these users' access changed. */
export async function announceAccessChange(db: Kysely<Database>, userIds: readonly string[]): Promise<void> {
  for (const userId of new Set(userIds)) await sql`SELECT pg_notify(${CHANNEL}, ${userId})`.execute(db);
  announcedHere++;
}

export interface AccessChanges {
  /** Calls `changed` whenever the user's access may have changed; returns the function that stops it. */
  watch(userId: string, changed: () => void): () => void;
  /**
   * Calls `changed` on every announcement heard (before the user's watchers), and when the listening connection
   * breaks or comes back (announcements may have been missed meanwhile).
   */
  watchAll(changed: () => void): void;
  /** Whether announcements are heard now: false while the listening connection is down. */
  readonly listening: boolean;
  /**
   * Resolves once every announcement committed before the call has been heard: PostgreSQL delivers a listener's
   * notifications before it answers the listener's next query. On a connection that does not answer within
   * HEARD_TIMEOUT_MS the listener reconnects (and `listening` is false until it is back).
   */
  heard(): Promise<void>;
  close(): Promise<void>;
}

/** Listens on its own connection (LISTEN holds one), reconnecting after a break. */
export async function listenForAccessChanges(connectionString: string, logger: Logger): Promise<AccessChanges> {
  const watchers = new Map<string, Set<() => void>>();
  const everyChange: (() => void)[] = [];
  const changed = () => {
    for (const watcher of everyChange) watcher();
  };
  let client: pg.Client | undefined;
  let closed = false;
  /** `client` once its LISTEN is in place; undefined again when it breaks. */
  let listeningOn: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    const next = new pg.Client({ connectionString, query_timeout: HEARD_TIMEOUT_MS });
    next.on('notification', (message) => {
      changed();
      for (const watcher of watchers.get(message.payload ?? '') ?? []) watcher();
    });
    next.on('error', () => reconnect(next));
    next.on('end', () => reconnect(next));
    client = next;
    await next.connect();
    await next.query(`LISTEN ${CHANNEL}`);
    // Heard from now on (unless it broke meanwhile); whatever was announced before went unheard.
    if (client !== next) return;
    listeningOn = next;
    changed();
  };
  const reconnect = (broken: pg.Client) => {
    if (closed || client !== broken || retry) return;
    client = undefined;
    listeningOn = undefined;
    changed();
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
    watchAll(watcher) {
      everyChange.push(watcher);
    },
    get listening() {
      return listeningOn !== undefined && !closed;
    },
    async heard() {
      const asked = client;
      if (!asked) return;
      await asked.query('SELECT 1').catch(() => reconnect(asked));
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}
