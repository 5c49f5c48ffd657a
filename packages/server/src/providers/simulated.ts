// A simulated cloud and Kubernetes behind the provider interfaces, for development, tests and benchmarks.
// It behaves like the real ones where the workflows can tell: servers take time to boot and snapshots to
// complete, calls have latency and fail at a configurable rate, releases start pods that print start-up and
// then application log lines at a configurable rate. Time comes from the injected clock, so tests move it
// instead of sleeping.
//
// Like a real cloud it is one shared system for every server process: it keeps its state in PostgreSQL, in a
// schema of its own (`simulated_cloud`), apart from the service's tables. Log lines are not stored: line n of a
// container is a pure function of the pod's start time and n, so every process reads the same lines.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Clock } from '../clock.ts';
import { type Kubeconfig, kubeconfigYaml } from './kubeconfig.ts';
import {
  type ClusterDriver,
  type ComputeProvider,
  type ControlPlane,
  type ControlPlaneRequest,
  type CreateServerRequest,
  chartLocation,
  type HelmRelease,
  type HelmReleaseRequest,
  type JoinRequest,
  type LogEntry,
  onSaleIn,
  type PodContainer,
  ProviderError,
  type ReadLogOptions,
  type Server,
  type ServerOffering,
  type Snapshot,
} from './types.ts';

export interface SimulationOptions {
  /** Seconds from creation until a server is running. */
  bootSeconds: number;
  /** Seconds a cluster's control plane takes to come up. */
  controlPlaneSeconds: number;
  /** Seconds a snapshot takes. */
  snapshotSeconds: number;
  /** Seconds from `helm upgrade --install` until the release's pods are ready. */
  releaseSeconds: number;
  /** Added to every call, in real milliseconds (a provider API's round trip). */
  latencyMs: number;
  /** Probability in [0, 1] that creating a server or a release fails. */
  failureRate: number;
  /** Log lines each container prints per second once started. */
  logLinesPerSecond: number;
  /** How often a following log reader looks for new lines, in real milliseconds. */
  followPollMs: number;
  /**
   * Machines' servers come from another compute provider (Hetzner) while this simulation runs the clusters: a
   * joined node is then Ready once joined (the provisioning workflow has seen its server run there).
   */
  serversElsewhere: boolean;
}

/** The simulation's defaults; the server's configuration (SIM_* variables) sets the timings it runs with. */
export const defaultSimulation: SimulationOptions = {
  bootSeconds: 5,
  controlPlaneSeconds: 10,
  snapshotSeconds: 3,
  releaseSeconds: 3,
  latencyMs: 0,
  failureRate: 0,
  logLinesPerSecond: 2,
  followPollMs: 200,
  serversElsewhere: false,
};

export class SimulatedFailure extends Error {}

const SCHEMA = `
  CREATE SCHEMA IF NOT EXISTS simulated_cloud;
  CREATE TABLE IF NOT EXISTS simulated_cloud.servers (
    id text PRIMARY KEY, workflow text NOT NULL UNIQUE, name text NOT NULL, server_type text NOT NULL,
    image text NOT NULL, location text NOT NULL, labels jsonb NOT NULL, ready_at bigint NOT NULL,
    off boolean NOT NULL DEFAULT false, deleted_at bigint
  );
  CREATE TABLE IF NOT EXISTS simulated_cloud.snapshots (
    id text PRIMARY KEY, workflow text NOT NULL UNIQUE, server_id text NOT NULL, labels jsonb NOT NULL,
    ready_at bigint NOT NULL, deleted_at bigint
  );
  CREATE TABLE IF NOT EXISTS simulated_cloud.releases (
    cluster_id text NOT NULL, namespace text NOT NULL, release text NOT NULL, chart jsonb NOT NULL,
    values jsonb NOT NULL, template_id text NOT NULL, revision integer NOT NULL, started_ms bigint NOT NULL,
    ready_at bigint NOT NULL, failed_message text, uninstalled_ms bigint,
    PRIMARY KEY (cluster_id, namespace, release)
  );
  CREATE TABLE IF NOT EXISTS simulated_cloud.clusters (
    id text PRIMARY KEY, kubernetes_version text NOT NULL, ready_at bigint NOT NULL, deleted_at bigint
  );
  CREATE TABLE IF NOT EXISTS simulated_cloud.nodes (
    cluster_id text NOT NULL, node_name text NOT NULL, machine_id text NOT NULL, PRIMARY KEY (cluster_id, node_name)
  );
  CREATE TABLE IF NOT EXISTS simulated_cloud.calls (at_ms bigint NOT NULL, method text NOT NULL);
`;

interface ServerRow {
  id: string;
  name: string;
  server_type: string;
  image: string;
  location: string;
  labels: Record<string, string>;
  ready_at: number;
  off: boolean;
}

interface ReleaseRow {
  namespace: string;
  release: string;
  chart: HelmReleaseRequest['chart'];
  template_id: string;
  revision: number;
  started_ms: number;
  ready_at: number;
  failed_message: string | null;
  uninstalled_ms: number | null;
}

const GiB = 1024 ** 3;
/** Hetzner sells its Arm types (cax) in its European locations only. */
const EUROPE = ['fsn1', 'nbg1', 'hel1'];
const type = (name: string, cpu: number, memoryGiB: number): ServerOffering => ({
  name,
  cpu,
  memory_bytes: memoryGiB * GiB,
  ...(name.startsWith('cax') ? { locations: EUROPE } : {}),
});

/** The simulated provider's server types, smallest first (a real provider reports its own). */
const SERVER_TYPES: readonly ServerOffering[] = [
  type('cpx11', 2, 2),
  type('cx22', 2, 4),
  type('cax11', 2, 4),
  type('cpx21', 3, 4),
  type('ccx13', 2, 8),
  type('cx32', 4, 8),
  type('cax21', 4, 8),
  type('cpx31', 4, 8),
  type('ccx23', 4, 16),
  type('cx42', 8, 16),
  type('cax31', 8, 16),
  type('cpx41', 8, 16),
  type('ccx33', 8, 32),
  type('cx52', 16, 32),
  type('cax41', 16, 32),
  type('cpx51', 16, 32),
];

// Generic over the database's tables: the simulation keeps its own schema (simulated_cloud) and reads none of ours.
export class SimulatedCloud<DB = unknown> implements ComputeProvider, ClusterDriver {
  readonly options: SimulationOptions;
  private readonly db: Kysely<DB>;
  private readonly clock: Clock;
  private ready: Promise<void> | undefined;

  constructor(db: Kysely<DB>, clock: Clock, options: Partial<SimulationOptions> = {}) {
    this.db = db;
    this.clock = clock;
    this.options = { ...defaultSimulation, ...options };
  }

  /**
   * Creates the simulator's schema once per process (idempotent across processes). `calls` records the cloud
   * API's calls (what its rate limit counts); the control planes' calls go to Kubernetes and are not recorded.
   */
  private async call(method: string, cloudApi = true): Promise<Kysely<DB>> {
    const at = Date.now(); // when the call reaches the "provider", as its own rate limiter would count it
    // An attempt that failed (the database restarting) is forgotten, so the next call tries again: a rejection
    // kept here would fail every later call of this process with that one error.
    this.ready ??= this.createSchema().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    await this.ready;
    if (this.options.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.options.latencyMs));
    if (cloudApi) await sql`INSERT INTO simulated_cloud.calls (at_ms, method) VALUES (${at}, ${method})`.execute(this.db);
    return this.db;
  }

  /**
   * One process at a time (concurrent CREATE … IF NOT EXISTS may collide). The lock is the transaction's, so it
   * is taken and let go on the connection that runs the statements, not on whichever pooled connection comes next.
   */
  private createSchema(): Promise<void> {
    return this.db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(hashtextextended('simulated_cloud schema', 0))`.execute(trx);
      await sql.raw(SCHEMA).execute(trx);
    });
  }

  private fails(): boolean {
    return this.options.failureRate > 0 && Math.random() < this.options.failureRate;
  }

  // --- ComputeProvider ---

  async offerings(): Promise<ServerOffering[]> {
    await this.call('offerings');
    return SERVER_TYPES.map((t) => ({ ...t, ...(t.locations ? { locations: [...t.locations] } : {}) }));
  }

  async createServer(request: CreateServerRequest): Promise<Server> {
    const db = await this.call('createServer');
    const existing = await sql<ServerRow>`SELECT * FROM simulated_cloud.servers WHERE workflow = ${request.labels.workflow} AND deleted_at IS NULL`.execute(db);
    if (existing.rows[0]) return this.server(existing.rows[0]);
    const offering = SERVER_TYPES.find((t) => t.name === request.server_type);
    if (offering && !onSaleIn(offering, request.location)) {
      throw new ProviderError('refused', 'invalid_input', `The simulated cloud does not sell server type ${request.server_type} in ${request.location}.`);
    }
    if (this.fails()) throw new SimulatedFailure(`server creation failed: resource_unavailable (${request.server_type} in ${request.location})`);
    const row = await sql<ServerRow>`
      INSERT INTO simulated_cloud.servers (id, workflow, name, server_type, image, location, labels, ready_at)
      VALUES (${`srv-${randomUUID().slice(0, 12)}`}, ${request.labels.workflow}, ${request.name}, ${request.server_type},
        ${request.image}, ${request.location}, ${JSON.stringify(request.labels)}, ${this.clock.now() + this.options.bootSeconds})
      ON CONFLICT (workflow) DO UPDATE SET workflow = EXCLUDED.workflow
      RETURNING *`.execute(db);
    return this.server(row.rows[0] as ServerRow);
  }

  async getServer(id: string): Promise<Server | undefined> {
    const db = await this.call('getServer');
    const row = await sql<ServerRow>`SELECT * FROM simulated_cloud.servers WHERE id = ${id} AND deleted_at IS NULL`.execute(db);
    return row.rows[0] ? this.server(row.rows[0]) : undefined;
  }

  async shutdownServer(id: string): Promise<void> {
    const db = await this.call('shutdownServer');
    await sql`UPDATE simulated_cloud.servers SET off = true WHERE id = ${id}`.execute(db);
  }

  async powerOnServer(id: string): Promise<void> {
    const db = await this.call('powerOnServer');
    await sql`UPDATE simulated_cloud.servers SET off = false WHERE id = ${id}`.execute(db);
  }

  async deleteServer(id: string): Promise<void> {
    const db = await this.call('deleteServer');
    await sql`UPDATE simulated_cloud.servers SET deleted_at = ${this.clock.now()} WHERE id = ${id} AND deleted_at IS NULL`.execute(db);
  }

  async createSnapshot(serverId: string, labels: Record<string, string> & { workflow: string }): Promise<Snapshot> {
    const db = await this.call('createSnapshot');
    const row = await sql<{ id: string; server_id: string; labels: Record<string, string>; ready_at: number }>`
      INSERT INTO simulated_cloud.snapshots (id, workflow, server_id, labels, ready_at)
      VALUES (${`snap-${randomUUID().slice(0, 12)}`}, ${labels.workflow}, ${serverId}, ${JSON.stringify(labels)}, ${this.clock.now() + this.options.snapshotSeconds})
      ON CONFLICT (workflow) DO UPDATE SET workflow = EXCLUDED.workflow
      RETURNING *`.execute(db);
    const snapshot = row.rows[0]!;
    return {
      id: snapshot.id,
      server_id: snapshot.server_id,
      labels: snapshot.labels,
      status: this.clock.now() >= snapshot.ready_at ? 'available' : 'creating',
    };
  }

  async getSnapshot(id: string): Promise<Snapshot | undefined> {
    const db = await this.call('getSnapshot');
    const row = await sql<{ id: string; server_id: string; labels: Record<string, string>; ready_at: number }>`
      SELECT * FROM simulated_cloud.snapshots WHERE id = ${id} AND deleted_at IS NULL`.execute(db);
    const snapshot = row.rows[0];
    if (!snapshot) return undefined;
    return {
      id: snapshot.id,
      server_id: snapshot.server_id,
      labels: snapshot.labels,
      status: this.clock.now() >= snapshot.ready_at ? 'available' : 'creating',
    };
  }

  async deleteSnapshot(id: string): Promise<void> {
    const db = await this.call('deleteSnapshot');
    await sql`UPDATE simulated_cloud.snapshots SET deleted_at = ${this.clock.now()} WHERE id = ${id} AND deleted_at IS NULL`.execute(db);
  }

  private server(row: ServerRow): Server {
    const now = this.clock.now();
    const status = row.off ? 'off' : now >= row.ready_at ? 'running' : now >= row.ready_at - 3 ? 'starting' : 'initializing';
    return {
      id: row.id,
      name: row.name,
      status,
      server_type: row.server_type,
      image: row.image,
      location: row.location,
      labels: row.labels,
      from_snapshot: row.image.startsWith('snap-'),
    };
  }

  // --- ClusterDriver ---

  async createCluster(request: ControlPlaneRequest): Promise<ControlPlane> {
    const db = await this.call('createCluster', false);
    const row = await sql<{ id: string; ready_at: number }>`
      INSERT INTO simulated_cloud.clusters (id, kubernetes_version, ready_at)
      VALUES (${request.cluster_id}, ${request.kubernetes_release}, ${this.clock.now() + this.options.controlPlaneSeconds})
      ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id
      RETURNING *`.execute(db);
    return this.controlPlane(row.rows[0]!);
  }

  async getCluster(clusterId: string): Promise<ControlPlane | undefined> {
    const db = await this.call('getCluster', false);
    const row = await sql<{ id: string; ready_at: number }>`SELECT * FROM simulated_cloud.clusters WHERE id = ${clusterId} AND deleted_at IS NULL`.execute(db);
    return row.rows[0] ? this.controlPlane(row.rows[0]) : undefined;
  }

  /** A plausible kubeconfig: the simulated endpoint and a random token that nothing accepts, expiring as asked. */
  async kubeconfig(clusterId: string, ttlSeconds: number): Promise<Kubeconfig> {
    await this.call('kubeconfig', false);
    const name = clusterId.toLowerCase().replace(/[^a-z0-9-]/g, '-');
    return {
      kubeconfig: kubeconfigYaml(
        { name, server: `https://${clusterId}.simulated:6443` },
        { name: 'platform-admin', token: randomBytes(32).toString('base64url') },
      ),
      expires_at: this.clock.now() + ttlSeconds,
    };
  }

  async deleteCluster(clusterId: string): Promise<void> {
    const db = await this.call('deleteCluster', false);
    await sql`UPDATE simulated_cloud.clusters SET deleted_at = ${this.clock.now()} WHERE id = ${clusterId} AND deleted_at IS NULL`.execute(db);
  }

  async joinMachine(request: JoinRequest): Promise<{ user_data: string }> {
    const db = await this.call('joinMachine', false);
    await sql`
      INSERT INTO simulated_cloud.nodes (cluster_id, node_name, machine_id) VALUES (${request.cluster_id}, ${request.node_name}, ${request.machine_id})
      ON CONFLICT (cluster_id, node_name) DO UPDATE SET machine_id = EXCLUDED.machine_id`.execute(db);
    // The same token for the same machine, as the real driver reuses the token it minted.
    const token = createHash('sha256').update(request.machine_id).digest('hex');
    return {
      user_data: `#!/bin/sh\nkubeadm join ${request.cluster_id}.simulated:6443 --token ${token.slice(0, 6)}.${token.slice(6, 22)} --node-name ${request.node_name}\n`,
    };
  }

  /** The simulated join token is derived from the machine and stored nowhere: nothing to delete. */
  async endJoin(_clusterId: string, _machineId: string): Promise<void> {
    await this.call('endJoin', false);
  }

  /** The node leaves its cluster: it is no longer joined. */
  async removeNode(clusterId: string, nodeName: string): Promise<void> {
    const db = await this.call('removeNode', false);
    await sql`DELETE FROM simulated_cloud.nodes WHERE cluster_id = ${clusterId} AND node_name = ${nodeName}`.execute(db);
  }

  /** Simulated nodes need no pod network: nothing to install. */
  async ensureNetwork(_clusterId: string): Promise<void> {
    await this.call('ensureNetwork', false);
  }

  /**
   * A simulated node is Ready once it was joined and a server of its machine runs (with `serversElsewhere`, once
   * it was joined).
   */
  async nodeReady(clusterId: string, nodeName: string): Promise<boolean> {
    const db = await this.call('nodeReady', false);
    const joined = await sql<{ machine_id: string }>`
      SELECT machine_id FROM simulated_cloud.nodes WHERE cluster_id = ${clusterId} AND node_name = ${nodeName}`.execute(db);
    const machineId = joined.rows[0]?.machine_id;
    if (machineId === undefined) return false;
    if (this.options.serversElsewhere) return true;
    const rows = await sql<ServerRow>`
      SELECT * FROM simulated_cloud.servers WHERE labels->>'machine' = ${machineId} AND deleted_at IS NULL`.execute(db);
    return rows.rows.some((row) => this.server(row).status === 'running');
  }

  private controlPlane(row: { id: string; ready_at: number }): ControlPlane {
    const running = this.clock.now() >= Number(row.ready_at);
    return { cluster_id: row.id, status: running ? 'RUNNING' : 'PROVISIONING', message: null, endpoint: running ? `https://${row.id}.simulated:6443` : null };
  }

  async upsertRelease(request: HelmReleaseRequest): Promise<HelmRelease> {
    const db = await this.call('upsertRelease');
    const failed = this.fails() ? `Error: INSTALLATION FAILED: timed out waiting for the condition (${request.release})` : null;
    const row = await sql<ReleaseRow>`
      INSERT INTO simulated_cloud.releases (cluster_id, namespace, release, chart, values, template_id, revision, started_ms, ready_at, failed_message)
      VALUES (${request.cluster_id}, ${request.namespace}, ${request.release}, ${JSON.stringify(request.chart)}, ${JSON.stringify(request.values)},
        ${request.template_id}, 1, ${this.clock.nowMs()}, ${this.clock.now() + this.options.releaseSeconds}, ${failed})
      ON CONFLICT (cluster_id, namespace, release) DO UPDATE SET
        chart = EXCLUDED.chart, values = EXCLUDED.values, failed_message = EXCLUDED.failed_message, uninstalled_ms = NULL,
        -- The same template and values again are the same revision (a re-run after a crash); else an upgrade.
        revision = releases.revision + (CASE WHEN releases.template_id = EXCLUDED.template_id AND releases.values = EXCLUDED.values THEN 0 ELSE 1 END),
        ready_at = CASE WHEN releases.template_id = EXCLUDED.template_id AND releases.values = EXCLUDED.values THEN releases.ready_at ELSE EXCLUDED.ready_at END,
        template_id = EXCLUDED.template_id
      RETURNING *`.execute(db);
    return this.release(row.rows[0] as ReleaseRow);
  }

  async getRelease(clusterId: string, namespace: string, release: string): Promise<HelmRelease | undefined> {
    const db = await this.call('getRelease');
    const row = await sql<ReleaseRow>`
      SELECT * FROM simulated_cloud.releases
      WHERE cluster_id = ${clusterId} AND namespace = ${namespace} AND release = ${release} AND uninstalled_ms IS NULL`.execute(db);
    return row.rows[0] ? this.release(row.rows[0]) : undefined;
  }

  async uninstallRelease(clusterId: string, namespace: string, release: string): Promise<void> {
    const db = await this.call('uninstallRelease');
    await sql`
      UPDATE simulated_cloud.releases SET uninstalled_ms = ${this.clock.nowMs()}
      WHERE cluster_id = ${clusterId} AND namespace = ${namespace} AND release = ${release} AND uninstalled_ms IS NULL`.execute(db);
  }

  /** Release rows of a namespace, the pods' source (reads state only: log reads are not provider calls). */
  private async releases(clusterId: string, namespace: string): Promise<ReleaseRow[]> {
    if (!this.ready) await this.call('listContainers');
    const rows = await sql<ReleaseRow>`
      SELECT * FROM simulated_cloud.releases WHERE cluster_id = ${clusterId} AND namespace = ${namespace} ORDER BY release`.execute(this.db);
    return rows.rows;
  }

  async listContainers(clusterId: string, namespace: string): Promise<PodContainer[]> {
    const rows = await this.releases(clusterId, namespace);
    return rows.filter((r) => r.uninstalled_ms === null && r.failed_message === null).map((r) => podOf(r));
  }

  async *readLog(clusterId: string, namespace: string, target: PodContainer, options: ReadLogOptions): AsyncIterable<LogEntry> {
    const find = async () => (await this.releases(clusterId, namespace)).find((r) => podOf(r).pod === target.pod && podOf(r).container === target.container);
    let release = await find();
    if (!release) return;
    const interval = 1000 / this.options.logLinesPerSecond;
    const startMs = Number(release.started_ms);
    // Lines 0..written-1 exist at `nowMs`; a pod stops printing when its release is uninstalled.
    const written = (nowMs: number, uninstalledMs: number | null) =>
      Math.max(0, Math.floor((Math.min(nowMs, uninstalledMs ?? Number.POSITIVE_INFINITY) - startMs) / interval) + 1);
    let next = options.after === undefined ? 0 : options.after + 1;
    if (options.since_ms !== undefined) next = Math.max(next, Math.ceil((options.since_ms - startMs) / interval));
    const available = written(this.clock.nowMs(), release.uninstalled_ms === null ? null : Number(release.uninstalled_ms));
    if (options.tail !== undefined) next = Math.max(next, available - options.tail);
    const entry = (n: number): LogEntry => ({ ...target, position: n, timestamp_ms: Math.round(startMs + n * interval), line: logLine(release!, n) });
    for (; next < available; next++) yield entry(next);
    if (!options.follow) return;
    while (!options.signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, this.options.followPollMs));
      release = await find();
      if (!release) return;
      const uninstalled = release.uninstalled_ms === null ? null : Number(release.uninstalled_ms);
      const now = written(this.clock.nowMs(), uninstalled);
      for (; next < now && !options.signal.aborted; next++) yield entry(next);
      if (uninstalled !== null) return;
    }
  }

  private release(row: ReleaseRow): HelmRelease {
    const ready = this.clock.now() >= Number(row.ready_at);
    const status = row.failed_message ? 'failed' : ready ? 'deployed' : row.revision > 1 ? 'pending-upgrade' : 'pending-install';
    return { namespace: row.namespace, release: row.release, status, revision: row.revision, template_id: row.template_id, message: row.failed_message };
  }
}

function podOf(release: Pick<ReleaseRow, 'release' | 'chart'>): PodContainer {
  const suffix = createHash('sha256').update(release.release).digest('hex').slice(0, 5);
  const location = chartLocation(release.chart);
  const name = location && 'chart' in location ? location.chart : location?.path.split('/').filter(Boolean).pop();
  const container = (name || 'app').replace(/[^a-z0-9-]/g, '-');
  return { pod: `${release.release}-${suffix}`.slice(0, 63), container };
}

const STARTUP = [
  (c: string, r: ReleaseRow) => `Pulling image "${c}:${r.chart.target_revision}"`,
  (c: string, r: ReleaseRow) => `Successfully pulled image "${c}:${r.chart.target_revision}"`,
  (c: string) => `Created container ${c}`,
  (c: string) => `Started container ${c}`,
  (c: string) => `${c} | loading configuration from /etc/${c}/config.yaml`,
  () => 'connecting to database at postgres:5432',
  () => 'database connection established (pool size 10)',
  () => 'running migrations: 0 pending',
  () => 'listening on 0.0.0.0:8080',
  () => 'readiness probe passed',
];
const PATHS = ['/healthz', '/api/v1/items', '/api/v1/items/42', '/api/v1/users/me', '/metrics', '/login'];
const METHODS = ['GET', 'GET', 'GET', 'POST', 'PUT'];
const STATUSES = [200, 200, 200, 200, 201, 204, 304, 404];

/** Line n of a release's container: start-up lines, then access-log lines chosen by a hash of n. */
function logLine(release: ReleaseRow, n: number): string {
  const container = podOf(release).container;
  const startup = STARTUP[n];
  if (startup) return startup(container, release);
  const h = createHash('sha256').update(`${release.release}:${n}`).digest();
  const pick = <T>(items: readonly T[], byte: number): T => items[h[byte]! % items.length]!;
  if (h[0]! % 50 === 0) return `level=warn msg="slow query" duration_ms=${200 + h[5]! * 4} table=items`;
  return `level=info method=${pick(METHODS, 1)} path=${pick(PATHS, 2)} status=${pick(STATUSES, 3)} duration_ms=${1 + (h[4]! % 90)}`;
}
