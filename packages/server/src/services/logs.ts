// The install log stream: the lines of the install's containers, merged in time order, as Server-Sent Events.
//
// Every event's id carries the position of every container after that event ("<ms>-<c1>:<n1>.<c2>:<n2>…",
// where <c> is a short hash of pod/container), so a client that reconnects with Last-Event-ID, to any server
// process, continues each container exactly after its last line: no gap, no duplicate, no sticky sessions.
// A container an id does not name had sent nothing and had nothing cut (by `tail` or since_seconds) before that
// event: all its lines come after it.
//
// A follower first reads its backlog from the cluster. Then it is fed by the install's tail (log-tails.ts):
// one poller per install and process, shared by all its followers, keeping the recent lines in memory. A
// follower the tail's memory no longer covers (it fell behind) reads what it misses from the cluster itself.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { validationError } from '../errors.ts';
import type { ClusterDriver, LogEntry, PodContainer } from '../providers/types.ts';
import type { LogTails } from './log-tails.ts';
import { streamSlots } from './stream-slots.ts';

export interface LogStreamRequest {
  installId: string;
  pod?: string;
  container?: string;
  follow: boolean;
  tail?: number;
  sinceSeconds: number;
  lastEventId?: string;
}

export interface LogStreamEnv {
  db: Kysely<Database>;
  clock: Clock;
  driver: ClusterDriver;
  /** Aborted when the client leaves. */
  signal: AbortSignal;
  /** Aborted when this process shuts down: the stream tells the client to reconnect elsewhere. */
  shutdown: AbortSignal;
  /** The followed installs' shared tails. */
  tails: LogTails;
  /** A follower that has written nothing for this long (ms) sends a keep-alive comment (config.logKeepAliveMs). */
  keepAliveMs: number;
}

export type Positions = Map<string, number>;

// Every follower computes the key of every line it sends: the keys are kept (a few thousand containers at most
// are followed at once; the cache starts over beyond that).
const keys = new Map<string, string>();
export function containerKey(c: PodContainer): string {
  const name = `${c.pod}/${c.container}`;
  let key = keys.get(name);
  if (key === undefined) {
    if (keys.size >= 10_000) keys.clear();
    key = createHash('sha256').update(name).digest('base64url').slice(0, 6);
    keys.set(name, key);
  }
  return key;
}

/** Reads a Last-Event-ID; a malformed one is the caller's error (422 with the header as param). */
export function parseEventId(id: string | undefined): Positions {
  const positions: Positions = new Map();
  if (id === undefined) return positions;
  const match = /^\d+-((?:[A-Za-z0-9_-]{6}:\d+)(?:\.[A-Za-z0-9_-]{6}:\d+)*)?$/.exec(id);
  if (!match) {
    throw validationError(
      'Last-Event-ID',
      'Last-Event-ID is not an id this stream sent.',
      'Send the id of the last log event received, or omit the header to start over.',
    );
  }
  for (const part of match[1]?.split('.') ?? []) {
    const [key, position] = part.split(':') as [string, string];
    positions.set(key, Number(position));
  }
  return positions;
}

const eventId = (timestampMs: number, positions: Positions) => `${timestampMs}-${[...positions].map(([key, position]) => `${key}:${position}`).join('.')}`;

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

// A tail's line is sent to each of its followers: its `data` is serialised once, with the line.
const serialised = new WeakMap<LogEntry, string>();
function logData(entry: LogEntry): string {
  let data = serialised.get(entry);
  if (data === undefined) {
    data = JSON.stringify({ pod: entry.pod, container: entry.container, timestamp: new Date(entry.timestamp_ms).toISOString(), line: entry.line });
    serialised.set(entry, data);
  }
  return data;
}

/** A chunk of events is written to the client at once; a long backlog goes out in chunks of about this size. */
const CHUNK_CHARS = 64 * 1024;

export const byTime = (a: LogEntry, b: LogEntry) =>
  a.timestamp_ms - b.timestamp_ms || a.pod.localeCompare(b.pod) || a.container.localeCompare(b.container) || a.position - b.position;

export async function* installLogStream(request: LogStreamRequest, env: LogStreamEnv): AsyncGenerator<string> {
  const positions = parseEventId(request.lastEventId);
  // `tail` and since_seconds cut a new stream's backlog only: a resumed one continues after its positions, however
  // long the client was away (the cut, taken again now, would skip what was written meanwhile).
  const resumed = positions.size > 0;
  const backlogTail = resumed ? undefined : request.tail;
  const sinceMs = !resumed && request.sinceSeconds > 0 ? env.clock.nowMs() - request.sinceSeconds * 1000 : undefined;
  const stop = AbortSignal.any([env.signal, env.shutdown]);
  const wanted = (c: PodContainer) =>
    (request.pod === undefined || c.pod === request.pod) && (request.container === undefined || c.container === request.container);

  /** Lines after each container's position, read from the cluster, merged in time order. */
  const readNew = async (clusterId: string, list: PodContainer[], options: { tail?: number } = {}) => {
    const lines: LogEntry[] = [];
    for (const target of list.filter(wanted)) {
      for await (const entry of env.driver.readLog(clusterId, request.installId, target, {
        follow: false,
        signal: stop,
        after: positions.get(containerKey(target)),
        tail: options.tail,
        since_ms: sinceMs,
      })) {
        lines.push(entry);
      }
    }
    return lines.sort(byTime);
  };

  /** Where a container's log ends now (undefined: it is empty). */
  const endOf = async (clusterId: string, target: PodContainer) => {
    let end: number | undefined;
    for await (const entry of env.driver.readLog(clusterId, request.installId, target, { follow: false, signal: stop, tail: 1 })) end = entry.position;
    return end;
  };

  /**
   * The backlog: with a cut (`tail`: the last `tail` lines of the merge; since_seconds), every container's
   * position moves to the cut before anything is sent: just before its first line kept, or to its end when none
   * is. The id of every event, the first one's too, then names every container the cut left lines out of, so
   * resuming from any of them sends neither what the client got nor what the cut left out.
   */
  const readBacklog = async (clusterId: string, list: PodContainer[]) => {
    if (backlogTail === undefined && sinceMs === undefined) return readNew(clusterId, list);
    const lines = await readNew(clusterId, list, { tail: backlogTail });
    const kept = backlogTail === undefined ? lines : lines.slice(-backlogTail);
    const cuts: Positions = new Map(); // each container's last line read, then its cut
    for (const entry of lines) cuts.set(containerKey(entry), Math.max(entry.position, cuts.get(containerKey(entry)) ?? -1));
    const firstKept = new Map<string, number>();
    for (const entry of kept) firstKept.set(containerKey(entry), Math.min(entry.position, firstKept.get(containerKey(entry)) ?? entry.position));
    // Positions are integers and `after` takes the lines above it: one below the first line kept cuts just before
    // it. A line 0 kept had nothing before it to cut (and an id holds no position below 0).
    for (const [key, first] of firstKept) {
      if (first > 0) cuts.set(key, first - 1);
      else cuts.delete(key);
    }
    if (sinceMs !== undefined) {
      // A container quiet since the cut read no line, yet its older ones were left out: its position is its end.
      for (const target of list.filter(wanted)) {
        const key = containerKey(target);
        if (cuts.has(key) || firstKept.has(key)) continue;
        const end = await endOf(clusterId, target);
        if (end !== undefined) cuts.set(key, end);
      }
    }
    for (const [key, cut] of cuts) positions.set(key, cut);
    return kept;
  };

  /** The lines' events, several to a chunk: the lines of one wake reach the client in one write. */
  function* emit(lines: LogEntry[]) {
    let chunk = '';
    for (const entry of lines) {
      positions.set(containerKey(entry), entry.position);
      chunk += `id: ${eventId(entry.timestamp_ms, positions)}\nevent: log\ndata: ${logData(entry)}\n\n`;
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk) yield chunk;
  }

  if (!request.follow) {
    const install = await env.db.selectFrom('installs').select('cluster_id').where('id', '=', request.installId).executeTakeFirst();
    if (install?.cluster_id) {
      const list = await env.driver.listContainers(install.cluster_id, request.installId);
      yield* emit(await readBacklog(install.cluster_id, list));
    }
    yield sse('end', { reason: 'backlog_sent' });
    return;
  }

  const tail = env.tails.follow(request.installId);
  try {
    let version = await tail.ready();
    let seq: number | undefined;
    if (tail.clusterId) yield* emit(await readBacklog(tail.clusterId, tail.containers));
    const podsGone = () => tail.finished && !tail.containers.some(wanted);
    // An install that failed or is being removed, with nothing left to follow: the stream ends now, as it would
    // have when its pods went.
    if (podsGone()) {
      yield sse('end', { reason: 'pods_gone' });
      return;
    }
    // The keep-alive counts from this follower's own last write: the tail wakes it for every line of the install,
    // and lines its filter drops (other pods, other containers) must not put it off, or an idle-timeout proxy cuts
    // a stream that gets nothing. One clock read per write; the wait's one timer is the one it had already.
    let lastWriteMs = performance.now();
    while (!stop.aborted) {
      const quietMs = performance.now() - lastWriteMs;
      const changed = quietMs < env.keepAliveMs && (await tail.changed(version, env.keepAliveMs - quietMs, stop));
      if (stop.aborted) break;
      if (!changed) {
        yield ': keep-alive\n\n';
        lastWriteMs = performance.now();
        continue;
      }
      version = tail.version;
      if (tail.clusterId) {
        const taken = tail.linesAfter(positions, wanted, seq);
        seq = taken?.next;
        for (const chunk of emit(taken?.lines ?? (await readNew(tail.clusterId, tail.containers)))) {
          yield chunk;
          lastWriteMs = performance.now();
        }
      }
      if (podsGone()) {
        yield sse('end', { reason: 'pods_gone' });
        return;
      }
    }
  } finally {
    env.tails.unfollow(tail);
  }
  // This process is going away: ask the client to come back (to another process) after its last id.
  if (env.shutdown.aborted && !env.signal.aborted) yield 'retry: 1000\n: server shutting down; reconnect with Last-Event-ID\n\n';
}

/**
 * Opens an install's log stream. Every stream, followed or not, holds one of the caller's stream slots while it is
 * open (a cap across every process, `slots.limit` per key); over the cap, 429 before the stream starts. A slot a
 * stream never released runs out with its lease. A malformed Last-Event-ID is a 422 before the stream starts.
 */
export async function openInstallLogStream(
  request: LogStreamRequest,
  env: LogStreamEnv,
  slots: { key: string; limit: number },
): Promise<AsyncGenerator<string>> {
  parseEventId(request.lastEventId);
  const slot = await streamSlots(env.db, env.clock).acquire(slots.key, slots.limit);
  async function* stream() {
    try {
      yield* installLogStream(request, env);
    } finally {
      await slot.release();
    }
  }
  return stream();
}
