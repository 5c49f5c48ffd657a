// Changes to what a user may access (a token revoked, a session ended, a membership removed or its role changed),
// announced to every server process with PostgreSQL NOTIFY, so that their open streams check their caller again
// at once instead of at their next periodic check. The database announces them itself, with triggers on the tables
// access is read from (migration 20261129_0020), whoever writes them; NOTIFY is sent when the transaction commits,
// and reaches this process's own listener too: one path for every process. What a process keeps of its callers'
// access (access-cache.ts) is forgotten on every announcement it hears, and kept only while it hears them.
import pg from 'pg';
import type { Logger } from 'pino';

const CHANNEL = 'access_changed';

export interface ListenTiming {
  /** The listener's connection is asked to answer this often (ms). */
  heartbeatMs: number;
  /**
   * Announcements count as heard only while a round trip sent within this long (ms) was answered: PostgreSQL
   * delivers a listener's notifications before it answers the listener's next query, so a change committed longer
   * ago than this has been heard, or `listening` is false. A round trip not answered within it reconnects.
   */
  deadlineMs: number;
  /** After its connection broke, the listener tries again this often (ms). */
  reconnectMs: number;
}

const TIMING: ListenTiming = { heartbeatMs: 500, deadlineMs: 2000, reconnectMs: 1000 };
/** TCP keepalive on the listener's connection: an idle connection a NAT or load balancer dropped is found by the kernel too. */
const KEEPALIVE_DELAY_MS = 10_000;

/** Changes of access this process has made (counted when made, so a request can tell it made one). */
let changesMadeHere = 0;
export const accessChangesMadeHere = (): number => changesMadeHere;

/**
 * Says that the request under way changes someone's access, so that it answers only once the database's
 * announcement of it is heard here (dispatch.ts). The announcement itself is the database's.
 */
export function changingAccess(): void {
  changesMadeHere++;
}

export interface AccessChanges {
  /** Calls `changed` whenever the user's access may have changed (on reconnection too); returns the function that stops it. */
  watch(userId: string, changed: () => void): () => void;
  /**
   * Calls `changed` on every announcement heard (before the user's watchers), and when the listening connection
   * breaks or comes back (announcements may have been missed meanwhile).
   */
  watchAll(changed: () => void): void;
  /** Whether announcements are heard now: false while the listening connection is down or has not answered in time. */
  readonly listening: boolean;
  /**
   * Resolves once every announcement committed before the call has been heard (or the connection did not answer
   * within the deadline: then it reconnects, and `listening` is false until it is back).
   */
  heard(): Promise<void>;
  close(): Promise<void>;
}

/** Listens on its own connection (LISTEN holds one), making sure it still hears, and reconnecting after a break. */
export async function listenForAccessChanges(connectionString: string, logger: Logger, timing: Partial<ListenTiming> = {}): Promise<AccessChanges> {
  const { heartbeatMs, deadlineMs, reconnectMs } = { ...TIMING, ...timing };
  const watchers = new Map<string, Set<() => void>>();
  const everyChange: (() => void)[] = [];
  const changed = () => {
    for (const watcher of everyChange) watcher();
  };
  let client: pg.Client | undefined;
  let closed = false;
  /** `client` once its LISTEN is in place; undefined again when it breaks. */
  let listeningOn: pg.Client | undefined;
  /** When the newest round trip answered on `listeningOn` was sent (performance.now()). */
  let confirmedAt = -Infinity;
  let retry: NodeJS.Timeout | undefined;
  let beating = false;

  /** One round trip on `on`: what was committed before it is heard once it is answered. */
  const roundTrip = async (on: pg.Client) => {
    const sentAt = performance.now();
    try {
      await on.query('SELECT 1');
    } catch {
      reconnect(on);
      return;
    }
    if (on === listeningOn) confirmedAt = Math.max(confirmedAt, sentAt);
  };
  const heartbeat = setInterval(() => {
    if (!listeningOn || beating) return;
    beating = true;
    roundTrip(listeningOn).finally(() => (beating = false));
  }, heartbeatMs);
  heartbeat.unref();

  const connect = async () => {
    const next = new pg.Client({
      connectionString,
      query_timeout: deadlineMs,
      connectionTimeoutMillis: deadlineMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    });
    next.on('notification', (message) => {
      changed();
      for (const watcher of watchers.get(message.payload ?? '') ?? []) watcher();
    });
    next.on('error', () => reconnect(next));
    next.on('end', () => reconnect(next));
    client = next;
    await next.connect();
    const sentAt = performance.now();
    await next.query(`LISTEN ${CHANNEL}`);
    // Heard from now on (unless it broke meanwhile); whatever was announced before went unheard.
    if (client !== next) return;
    listeningOn = next;
    confirmedAt = sentAt;
    changed();
    // Open streams check their callers at once: an announcement meant for them may have gone unheard.
    for (const set of watchers.values()) for (const watcher of set) watcher();
  };
  const reconnect = (broken: pg.Client) => {
    if (closed || client !== broken || retry) return;
    client = undefined;
    listeningOn = undefined;
    changed();
    broken.end().catch(() => {});
    // A connection gone silent would otherwise hold its socket until TCP keepalive gives up on it.
    broken.connection.stream.destroy();
    logger.warn('lost the connection listening for access changes; streams check their callers on their timers until it is back');
    retry = setTimeout(() => {
      retry = undefined;
      connect().catch((error: Error) => {
        if (client) reconnect(client);
        logger.warn({ err: error.message }, 'cannot listen for access changes yet');
      });
    }, reconnectMs);
  };
  try {
    await connect();
  } catch (error) {
    clearInterval(heartbeat);
    throw error;
  }

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
      return listeningOn !== undefined && !closed && performance.now() - confirmedAt < deadlineMs;
    },
    async heard() {
      if (client) await roundTrip(client);
    },
    async close() {
      closed = true;
      clearInterval(heartbeat);
      clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}
