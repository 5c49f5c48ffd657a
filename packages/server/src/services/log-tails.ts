// The tails of the installs followed in this process: one poller per install, whatever the number of its
// followers, reading each container's new lines from the cluster and keeping the recent ones in memory for the
// followers to take. It is a cache of what the cluster holds (the source of truth), so every process may have
// its own, and a follower it does not cover reads from the cluster directly (services/logs.ts).
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { ClusterDriver, LogEntry, PodContainer } from '../providers/types.ts';
import { detached } from '../telemetry/tracing.ts';
import { byTime, containerKey, type Positions } from './logs.ts';

/** Recent lines kept per install; a follower further behind reads from the cluster. */
const BUFFER_LINES = 5000;

export class InstallTail {
  /** Bumped by every poll that found something new (lines, containers, the end). */
  version = 0;
  clusterId: string | null = null;
  containers: PodContainer[] = [];
  /** The install failed or is being removed: once its containers are gone, streams end. */
  finished = false;
  followers = 0;
  /** Recent lines in the order read, each with its container's key; `firstSeq` numbers lines[0]. */
  private lines: { entry: LogEntry; key: string }[] = [];
  private firstSeq = 0;
  /** Per container: the newest position read, and the position before the oldest line kept. */
  private readonly head = new Map<string, number>();
  private readonly floor = new Map<string, number>();
  private waiters = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private first: Promise<void> | undefined;
  private readonly installId: string;
  private readonly env: { db: Kysely<Database>; driver: ClusterDriver; pollMs: number };

  constructor(installId: string, env: { db: Kysely<Database>; driver: ClusterDriver; pollMs: number }) {
    this.installId = installId;
    this.env = env;
  }

  /** The tail's first look at the install (its containers and where their logs end); resolves to its version. */
  async ready(): Promise<number> {
    // Its polls serve every follower, whichever request came first: they belong to no request's trace.
    this.first ??= detached(() => this.poll(true).finally(() => this.schedule()));
    await this.first;
    return this.version;
  }

  /**
   * Lines after the follower's positions, of the containers it wants, and the sequence number to pass next
   * time; undefined when not all of them are kept here (the follower reads from the cluster instead). With the
   * sequence number of its last call, a follower looks only at lines added since: a wake costs what it sends.
   */
  linesAfter(positions: Positions, wanted: (c: PodContainer) => boolean, since?: number): { lines: LogEntry[]; next: number } | undefined {
    const next = this.firstSeq + this.lines.length;
    if (since === undefined || since < this.firstSeq) {
      for (const container of this.containers.filter(wanted)) {
        const key = containerKey(container);
        const floor = this.floor.get(key);
        if (floor === undefined || (positions.get(key) ?? -1) < floor) return undefined;
      }
    }
    const from = since === undefined ? 0 : Math.max(0, since - this.firstSeq);
    const lines: LogEntry[] = [];
    for (let i = from; i < this.lines.length; i++) {
      const { entry, key } = this.lines[i]!;
      if (entry.position > (positions.get(key) ?? -1) && wanted(entry)) lines.push(entry);
    }
    return { lines, next };
  }

  /** Resolves true when the version moves past `version`, false after `timeoutMs` or when `signal` aborts. */
  changed(version: number, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    if (this.version !== version) return Promise.resolve(true);
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (value: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        signal.removeEventListener('abort', abort);
        resolve(value);
      };
      const wake = () => done(true);
      const abort = () => done(false);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.waiters.add(wake);
      signal.addEventListener('abort', abort, { once: true });
    });
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const wake of [...this.waiters]) wake();
  }

  private schedule(): void {
    if (this.followers === 0) return;
    this.timer = setTimeout(() => {
      void this.poll(false)
        .catch(() => {}) // an outage: try again on the next round
        .finally(() => this.schedule());
    }, this.env.pollMs);
  }

  /** Reads what is new; on the first poll only where each container's log ends now. */
  private async poll(first: boolean): Promise<void> {
    const install = await this.env.db.selectFrom('installs').select(['cluster_id', 'status']).where('id', '=', this.installId).executeTakeFirst();
    const finished = !install || install.status === 'failed' || install.status === 'uninstalling';
    const clusterId = install?.cluster_id ?? null;
    const containers = clusterId ? await this.env.driver.listContainers(clusterId, this.installId) : [];
    let moved = finished !== this.finished || clusterId !== this.clusterId || containers.length !== this.containers.length;
    const fresh: LogEntry[] = [];
    const signal = new AbortController().signal;
    for (const container of containers) {
      const key = containerKey(container);
      if (first) {
        // Followers read their own backlog; the tail keeps only what comes after now.
        let end = -1;
        for await (const entry of this.env.driver.readLog(clusterId!, this.installId, container, { follow: false, tail: 1, signal })) end = entry.position;
        this.head.set(key, end);
        this.floor.set(key, end);
        continue;
      }
      if (!this.head.has(key)) {
        this.head.set(key, -1); // a container that appeared since: all its lines are new
        this.floor.set(key, -1);
      }
      for await (const entry of this.env.driver.readLog(clusterId!, this.installId, container, { follow: false, after: this.head.get(key), signal })) {
        fresh.push(entry);
        this.head.set(key, entry.position);
      }
    }
    this.clusterId = clusterId;
    this.containers = containers;
    this.finished = finished;
    if (fresh.length > 0) {
      fresh.sort(byTime);
      for (const entry of fresh) this.lines.push({ entry, key: containerKey(entry) });
      if (this.lines.length > BUFFER_LINES) {
        // Dropped lines move each container's floor: followers behind it read from the cluster.
        const dropped = this.lines.splice(0, this.lines.length - BUFFER_LINES);
        this.firstSeq += dropped.length;
        for (const { entry, key } of dropped) this.floor.set(key, entry.position);
      }
      moved = true;
    }
    if (moved || first) {
      this.version++;
      for (const wake of [...this.waiters]) wake();
    }
  }
}

export class LogTails {
  private readonly tails = new Map<string, InstallTail>();
  private readonly env: { db: Kysely<Database>; driver: ClusterDriver; pollMs: number };

  constructor(env: { db: Kysely<Database>; driver: ClusterDriver; pollMs: number }) {
    this.env = env;
  }

  follow(installId: string): InstallTail {
    let tail = this.tails.get(installId);
    if (!tail) {
      tail = new InstallTail(installId, this.env);
      this.tails.set(installId, tail);
    }
    tail.followers++;
    return tail;
  }

  unfollow(tail: InstallTail): void {
    tail.followers--;
    if (tail.followers > 0) return;
    tail.stop();
    for (const [id, candidate] of this.tails) if (candidate === tail) this.tails.delete(id);
  }
}
