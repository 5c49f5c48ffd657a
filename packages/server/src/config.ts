// Environment → typed configuration, validated once at start-up. A bad variable stops start-up with one
// clear line naming it (ConfigError), never a stack trace.

import { createHash } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { resolve } from 'node:path';

export class ConfigError extends Error {}

export type Role = 'all' | 'api' | 'worker';

/** OTEL_TRACES_SAMPLER's values (the OpenTelemetry specification's). */
export const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/** Traces, on when the OTEL_* variables ask for them. */
export interface TracingConfig {
  sampler: (typeof SAMPLERS)[number];
  /** OTEL_TRACES_SAMPLER_ARG: the share of traces sampled, for the traceidratio samplers. */
  ratio: number;
}

export interface Config {
  host: string;
  port: number;
  /** Where GET /metrics listens (a port of its own); undefined: no metrics are recorded. */
  metrics: { port: number; host: string } | undefined;
  /** OpenTelemetry traces; undefined: off (the SDK is not loaded). */
  tracing: TracingConfig | undefined;
  /** Unset: an embedded PostgreSQL with its data under `dataDir`. */
  databaseUrl: string | undefined;
  /**
   * PostgreSQL itself (or a pooler in session mode), for the connections that keep session state: migrations (a
   * session advisory lock), the LISTEN connections, pg-boss, the workflow locks, the webhook dispatcher's claims
   * (session settings). Unset: `databaseUrl`. Set when `databaseUrl` is a pooler in transaction mode (PgBouncer).
   */
  databaseDirectUrl: string | undefined;
  /**
   * Queries run as named prepared statements of their connection (db/prepared-statements.ts). A pooler in
   * transaction mode hands one client's statements to several server connections, which then lack them (PgBouncer
   * before 1.21, or with `max_prepared_statements = 0`). Default: on, off when `databaseDirectUrl` is set.
   */
  preparedStatements: boolean;
  dataDir: string;
  logLevel: string;
  /** Validate every response against the contract (always on in tests). */
  validateResponses: boolean;
  /** Whether the first start on an empty database creates the demo user and its sample resources. */
  seedDemo: boolean;
  /** How long SIGTERM waits for in-flight requests before closing their connections. */
  shutdownGraceMs: number;
  /**
   * How long /readyz waits for the database and the workflow queue before answering 503 naming what did not answer:
   * under the orchestrator's own probe timeout, the answer says which one, rather than the probe timing out.
   */
  readyTimeoutMs: number;
  /** Largest request body accepted, in bytes. */
  bodyLimitBytes: number;
  /** Requests a minute per user (all of a user's tokens together), shared by every process; 0: no limit. */
  rateLimitPerMinute: number;
  /** Requests a minute per client address to the unauthenticated device-flow steps; 0: no limit. */
  rateLimitDevicePerMinute: number;
  /** Log streams one user (all of their tokens together) may hold open at once, over every process; 0: no cap. */
  logStreamsPerUser: number;
  /** Largest body of the operations that need no token (the device flow's first two steps). */
  unauthenticatedBodyLimitBytes: number;
  /** How long a client may take to send a request's headers, and then its whole body. */
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /**
   * How long an idle keep-alive connection stays open, announced in `Keep-Alive: timeout=`. Longer than the idle
   * timeout of the load balancers in front (60 s for most), so they close idle connections first: a connection the
   * server closed just as a client sent on it resets that client's request.
   */
  keepAliveTimeoutMs: number;
  /** Open connections one process accepts at once; beyond, new connections are closed at once. */
  maxConnections: number;
  /** Peers whose X-Forwarded-For names the client (load balancers, proxies): addresses and CIDR ranges. */
  trustProxy: string[];
  /** Browser origins allowed to call the API (CORS); empty: none. */
  corsOrigins: string[];
  /** Strict-Transport-Security max-age in seconds; 0: the header is not sent (serve behind HTTPS to set it). */
  hstsMaxAge: number;
  /** `maxLifetimeSeconds`: the longest `exp - iat` accepted; a JWT without `exp` is refused. */
  jwt: { jwksUrl: string; issuer: string; audience: string; algorithms: string[]; maxLifetimeSeconds: number } | undefined;
  /** Seals write-only secrets; unset: a key generated once and kept in `dataDir` (see secretsKey). */
  secretsKey: Buffer | undefined;
  /**
   * The service's public base address (no trailing slash), for links it hands out such as the device flow's
   * verification_uri. Unset: the scheme and Host of the request.
   */
  publicUrl: string | undefined;
  /** The device flow (RFC 8628): how long a device code lives, and the initial seconds between polls. */
  deviceCodeTtlSeconds: number;
  devicePollIntervalSeconds: number;
  /** What this process runs: the API, the workflow workers, or both. */
  role: Role;
  /** Workflows one worker process runs at once. */
  workerConcurrency: number;
  /** How often (ms) a followed install's tail looks for new lines (one poller per install and process). */
  logPollMs: number;
  /** A followed log stream that has written nothing to its client for this long (ms) sends it a keep-alive comment. */
  logKeepAliveMs: number;
  /** A log stream whose client has not read for this long (ms) is dropped, so its buffer stays bounded. */
  streamStallMs: number;
  /** How often (s) an open stream checks again that its caller may still read it (also at once when told of a change). */
  streamReauthSeconds: number;
  /** Calls per second to the cloud provider's API, shared by every process. */
  providerRateLimit: number;
  /** Which compute provider creates machines (providers/index.ts), and the Hetzner Cloud settings. */
  compute: ComputeConfig;
  /** The simulated cloud: seconds a server boots, a control plane comes up; failure rate 0..1. */
  simulation: { bootSeconds: number; controlPlaneSeconds: number; releaseSeconds: number; snapshotSeconds: number; failureRate: number; latencyMs: number };
  /**
   * Which cluster driver runs: the simulation, or Kubernetes (Kamaji control planes and Argo CD installs in the
   * management cluster that MANAGEMENT_KUBECONFIG reaches).
   */
  clusterDriver: { kind: 'simulated' } | { kind: 'kubernetes'; kubeconfigPath: string; argocdNamespace: string; kamajiNamespace: string };
  /** How long (s) a workflow step waits on something outside before it fails or remediates. */
  deadlines: WorkflowDeadlines;
  /** An unfinished workflow no worker holds, whose job was sent this long ago (s), is sent again. */
  orphanAfterSeconds: number;
  /** A pause after each workflow step (ms); 0 in production, set by crash tests to kill at step boundaries. */
  workflowStepDelayMs: number;
  /** Days an event stays in the feed; the workers delete older ones. */
  eventRetentionDays: number;
  /** Days an audit event is kept (the workers delete older ones); 0 keeps them forever. */
  auditRetentionDays: number;
  /** How often (ms) an events stream looks for new events. */
  eventPollMs: number;
  /** Webhook deliveries (jobs/webhook-dispatcher.ts). */
  webhooks: WebhookConfig;
}

export interface WorkflowDeadlines {
  /** A new cluster's control plane that is not Ready by then is ERROR (workflows/create-cluster.ts). */
  clusterReadySeconds: number;
  /** A machine whose node is not Ready this long after its server's creation fails (workflows/request-machine.ts). */
  machineBootSeconds: number;
  /**
   * How long an install, update or rollback waits for its releases to be deployed (Argo CD synced and healthy),
   * and an uninstall for them to be gone, before it fails with the deployer's last word.
   */
  installSyncSeconds: number;
  /**
   * Whether a product regeneration waits for each install's releases (with installSyncSeconds), failing an install
   * whose releases are not deployed by then. On by default with the Kubernetes driver (Argo CD syncs after the
   * fact); off in the simulation, whose regeneration records its releases deployed as they are sent.
   */
  regenerationWaits: boolean;
}

export interface WebhookConfig {
  /** Development only: endpoints may be http:// URLs of loopback addresses (and https:// ones may be loopback). */
  allowHttpLoopback: boolean;
  /** An attempt whose answer has not come within this long (ms) failed. */
  timeoutMs: number;
  /** An endpoint whose every attempt failed for this many days is disabled. */
  disableAfterDays: number;
  /** Deliveries one worker process attempts at once (its slots; a workspace gets a fair share of them). */
  concurrency: number;
  /** Attempts one endpoint gets at once, across every worker process. */
  endpointConcurrency: number;
  /** Consecutive failed attempts that open an endpoint's circuit (it cools, then is probed). */
  circuitFailures: number;
  /** Webhook endpoints one workspace may have. */
  endpointsPerWorkspace: number;
}

export interface ComputeConfig {
  provider: 'simulated' | 'hetzner';
  /** The platform account's Hetzner Cloud API token (hcloud's HCLOUD_TOKEN). */
  hcloudToken: string | undefined;
  hcloudEndpoint: string;
  /** Requests an hour per Hetzner token (Hetzner's default project limit), shared by every process. */
  hcloudRequestsPerHour: number;
  /**
   * Between two reads of something Hetzner is still doing (an Action, a shutdown), in ms. Each read is a request of
   * the token's hourly bucket: longer spares the bucket when many machines change at once, shorter notices sooner.
   */
  hcloudPollIntervalMs: number;
  /** Hetzner SSH keys (names or ids) put on every server; none leaves SSH closed by the cluster's firewall. */
  hcloudSshKeys: string[];
  /**
   * The value of the `managed-by` label on everything this installation makes at Hetzner (HCLOUD_MANAGED_BY; by
   * default `platform-` and a digest of PUBLIC_URL, else of the database's address): the leftovers reconciler
   * deletes only what carries it, so installations sharing a project never sweep each other's servers.
   */
  hcloudManagedBy: string;
  /** The leftovers reconciler (jobs/leftovers.ts). */
  leftovers: { graceSeconds: number; dryRun: boolean; everySeconds: number };
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function fraction(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) throw new ConfigError(`${name} must be a number from 0 to 1, got "${raw}"`);
  return value;
}

/** `--role api|worker|all` on the command line, else ROLE. */
function role(env: Env): Role {
  const flag = process.argv.indexOf('--role');
  const raw = flag >= 0 ? process.argv[flag + 1] : env.ROLE;
  if (raw === undefined || raw === '') return 'all';
  if (raw === 'all' || raw === 'api' || raw === 'worker') return raw;
  throw new ConfigError(`--role (or ROLE) must be api, worker or all, got "${raw}"`);
}

function postgresUrl(env: Env, name: 'DATABASE_URL' | 'DATABASE_DIRECT_URL'): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a postgres:// URL, got "${raw}"`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(`${name} must be a postgres:// URL, got "${raw}"`);
  }
  return raw;
}

/** DATABASE_URL, and DATABASE_DIRECT_URL beside it (never alone: the embedded database needs no pooler). */
function database(env: Env): Pick<Config, 'databaseUrl' | 'databaseDirectUrl' | 'preparedStatements'> {
  const databaseUrl = postgresUrl(env, 'DATABASE_URL');
  const databaseDirectUrl = postgresUrl(env, 'DATABASE_DIRECT_URL');
  if (databaseDirectUrl && !databaseUrl) {
    throw new ConfigError('DATABASE_DIRECT_URL is set without DATABASE_URL: set DATABASE_URL to the pooler and DATABASE_DIRECT_URL to PostgreSQL itself');
  }
  return { databaseUrl, databaseDirectUrl, preparedStatements: boolean(env, 'DATABASE_PREPARED_STATEMENTS', databaseDirectUrl === undefined) };
}

/** METRICS_PORT (`off`: none) and METRICS_HOST (default HOST). */
function metricsListener(env: Env): Config['metrics'] {
  if (env.METRICS_PORT === 'off') return undefined;
  return { port: integer(env, 'METRICS_PORT', 9464, 0, 65535), host: env.METRICS_HOST || env.HOST || '127.0.0.1' };
}

/**
 * The OpenTelemetry specification's variables: traces are on with OTEL_TRACES_EXPORTER=otlp, or with an OTLP
 * endpoint set and no exporter named; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turns them off.
 */
function tracingConfig(env: Env): TracingConfig | undefined {
  if (boolean(env, 'OTEL_SDK_DISABLED', false)) return undefined;
  const exporter = env.OTEL_TRACES_EXPORTER || (env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? 'otlp' : 'none');
  if (exporter === 'none') return undefined;
  if (exporter !== 'otlp') throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none, got "${exporter}"`);
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const) {
    const protocol = env[name];
    if (protocol && protocol !== 'http/protobuf') throw new ConfigError(`${name} must be http/protobuf (OTLP over HTTP), got "${protocol}"`);
  }
  const sampler = env.OTEL_TRACES_SAMPLER || 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(sampler)) throw new ConfigError(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, got "${sampler}"`);
  return { sampler: sampler as TracingConfig['sampler'], ratio: sampler.endsWith('traceidratio') ? fraction(env, 'OTEL_TRACES_SAMPLER_ARG', 1) : 1 };
}

function jwt(env: Env): Config['jwt'] {
  const jwksUrl = env.JWT_JWKS_URL;
  if (!jwksUrl) return undefined;
  for (const name of ['JWT_ISSUER', 'JWT_AUDIENCE'] as const) {
    if (!env[name]) throw new ConfigError(`${name} must be set when JWT_JWKS_URL is set`);
  }
  try {
    new URL(jwksUrl);
  } catch {
    throw new ConfigError(`JWT_JWKS_URL must be a URL, got "${jwksUrl}"`);
  }
  const algorithms = (env.JWT_ALGORITHMS ?? 'RS256,ES256')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  if (algorithms.some((a) => a === 'none' || a.startsWith('HS'))) {
    throw new ConfigError('JWT_ALGORITHMS must name asymmetric algorithms only (e.g. RS256,ES256)');
  }
  return {
    jwksUrl,
    issuer: env.JWT_ISSUER!,
    audience: env.JWT_AUDIENCE!,
    algorithms,
    maxLifetimeSeconds: integer(env, 'JWT_MAX_LIFETIME_SECONDS', 86_400, 60, 31_536_000),
  };
}

function publicUrl(env: Env): string | undefined {
  const raw = env.PUBLIC_URL;
  if (raw === undefined || raw === '') return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    throw new ConfigError(`PUBLIC_URL must be an http:// or https:// URL without query or fragment, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

/** TRUST_PROXY: comma-separated IPv4/IPv6 addresses and CIDR ranges (`10.0.0.0/8,::1`). */
function trustProxy(env: Env): string[] {
  const entries = (env.TRUST_PROXY ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    if (family === 0 || (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits))) {
      throw new ConfigError(`TRUST_PROXY must list IP addresses or CIDR ranges separated by commas, got "${entry}"`);
    }
  }
  return entries;
}

/** CORS_ORIGINS: comma-separated origins (`https://app.example.com`), each scheme://host[:port] and nothing more. */
function corsOrigins(env: Env): string[] {
  const entries = (env.CORS_ORIGINS ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    let origin: string | undefined;
    try {
      origin = new URL(entry).origin;
    } catch {
      origin = undefined;
    }
    if (origin !== entry) throw new ConfigError(`CORS_ORIGINS must list origins like https://app.example.com (no path or trailing slash), got "${entry}"`);
  }
  return entries;
}

function secretsKey(env: Env): Buffer | undefined {
  const raw = env.SECRETS_KEY;
  if (raw === undefined || raw === '') return undefined;
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError('SECRETS_KEY must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)');
  return key;
}

/** A Kubernetes object name (RFC 1123 label), e.g. a namespace. */
function k8sName(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(raw)) throw new ConfigError(`${name} must be a Kubernetes namespace name, got "${raw}"`);
  return raw;
}

function clusterDriver(env: Env): Config['clusterDriver'] {
  const kind = env.CLUSTER_DRIVER || 'simulated';
  if (kind === 'simulated') return { kind };
  if (kind !== 'kubernetes') throw new ConfigError(`CLUSTER_DRIVER must be simulated or kubernetes, got "${kind}"`);
  const kubeconfigPath = env.MANAGEMENT_KUBECONFIG;
  if (!kubeconfigPath) throw new ConfigError('MANAGEMENT_KUBECONFIG must be set to a kubeconfig file when CLUSTER_DRIVER is kubernetes');
  try {
    accessSync(kubeconfigPath, constants.R_OK);
  } catch {
    throw new ConfigError(`MANAGEMENT_KUBECONFIG: cannot read "${kubeconfigPath}"`);
  }
  return {
    kind,
    kubeconfigPath,
    argocdNamespace: k8sName(env, 'ARGOCD_NAMESPACE', 'argocd'),
    kamajiNamespace: k8sName(env, 'KAMAJI_NAMESPACE', 'kamaji-tenants'),
  };
}

/** Hetzner's label value rule (its API reference's "Labels"): at most 63 of [A-Za-z0-9._-], alphanumeric at both ends. */
const LABEL_VALUE = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

/** HCLOUD_MANAGED_BY, else one derived from what tells installations apart: their public URL, or their database. */
function managedBy(env: Env): string {
  const raw = env.HCLOUD_MANAGED_BY;
  if (raw !== undefined && raw !== '') {
    if (!LABEL_VALUE.test(raw))
      throw new ConfigError(`HCLOUD_MANAGED_BY must be a Hetzner label value (up to 63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends), got "${raw}"`);
    return raw;
  }
  let where = env.PUBLIC_URL;
  if (!where) {
    // This machine's name with the database's address (not its password: changing a password does not make
    // another installation), or with the embedded database's folder: two laptops on `localhost:5432/platform`
    // or on the default `.data` are still two installations.
    const database = env.DATABASE_URL ? new URL(env.DATABASE_URL) : undefined;
    where = `${hostname()} ${database ? `${database.hostname}:${database.port}${database.pathname}` : resolve(env.DATA_DIR || '.data')}`;
  }
  return `platform-${createHash('sha256').update(where).digest('hex').slice(0, 12)}`;
}

function compute(env: Env): ComputeConfig {
  const provider = env.COMPUTE_PROVIDER || 'simulated';
  if (provider !== 'simulated' && provider !== 'hetzner') throw new ConfigError(`COMPUTE_PROVIDER must be simulated or hetzner, got "${provider}"`);
  const hcloudToken = env.HCLOUD_TOKEN || undefined;
  if (provider === 'hetzner' && !hcloudToken) throw new ConfigError('COMPUTE_PROVIDER=hetzner needs HCLOUD_TOKEN (a Hetzner Cloud project API token)');
  const hcloudEndpoint = (env.HCLOUD_ENDPOINT || 'https://api.hetzner.cloud/v1').replace(/\/+$/, '');
  let url: URL | undefined;
  try {
    url = new URL(hcloudEndpoint);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new ConfigError(`HCLOUD_ENDPOINT must be an http:// or https:// URL, got "${env.HCLOUD_ENDPOINT}"`);
  const hcloudSshKeys = (env.HCLOUD_SSH_KEYS ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key !== '');
  return {
    provider,
    hcloudToken,
    hcloudEndpoint,
    hcloudRequestsPerHour: integer(env, 'HCLOUD_REQUESTS_PER_HOUR', 3600, 1, 36_000_000),
    hcloudPollIntervalMs: integer(env, 'HCLOUD_POLL_INTERVAL_MS', 1000, 10, 60_000),
    hcloudSshKeys,
    hcloudManagedBy: managedBy(env),
    leftovers: {
      graceSeconds: integer(env, 'LEFTOVERS_GRACE_SECONDS', 3600, 0, 30 * 86_400),
      dryRun: boolean(env, 'LEFTOVERS_DRY_RUN', false),
      everySeconds: integer(env, 'LEFTOVERS_EVERY_SECONDS', 600, 10, 86_400),
    },
  };
}

/** The configuration's database, as db/connect.ts opens it. */
export const databaseLocation = (config: Pick<Config, 'databaseUrl' | 'databaseDirectUrl' | 'preparedStatements'>) => ({
  url: config.databaseUrl,
  directUrl: config.databaseDirectUrl,
  preparedStatements: config.preparedStatements,
});

export function loadConfig(env: Env = process.env): Config {
  return {
    host: env.HOST || '127.0.0.1',
    port: integer(env, 'PORT', 8080, 0, 65535),
    ...database(env),
    metrics: metricsListener(env),
    tracing: tracingConfig(env),
    dataDir: env.DATA_DIR || '.data',
    logLevel: env.LOG_LEVEL || 'info',
    validateResponses: boolean(env, 'VALIDATE_RESPONSES', false),
    seedDemo: boolean(env, 'SEED_DEMO', true),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    // Off unless set: counting costs a write per request on one row per token, which a single busy token
    // (a CI job, a benchmark) contends on. Production sets it (e.g. 600).
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 0, 0, 1_000_000),
    rateLimitDevicePerMinute: integer(env, 'RATE_LIMIT_DEVICE_PER_MINUTE', 120, 0, 1_000_000),
    // A backstop against runaway clients, high enough for a dashboard fanning one user out to many viewers.
    logStreamsPerUser: integer(env, 'LOG_STREAMS_PER_USER', 2000, 0, 100_000),
    unauthenticatedBodyLimitBytes: integer(env, 'UNAUTHENTICATED_BODY_LIMIT_BYTES', 8192, 1024, 1024 * 1024),
    headersTimeoutMs: integer(env, 'HEADERS_TIMEOUT_SECONDS', 10, 1, 600) * 1000,
    bodyTimeoutMs: integer(env, 'BODY_TIMEOUT_SECONDS', 30, 1, 3600) * 1000,
    keepAliveTimeoutMs: integer(env, 'KEEP_ALIVE_TIMEOUT_SECONDS', 75, 1, 3600) * 1000,
    maxConnections: integer(env, 'MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    trustProxy: trustProxy(env),
    corsOrigins: corsOrigins(env),
    hstsMaxAge: integer(env, 'HSTS_MAX_AGE', 0, 0, 2 ** 31 - 1),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    readyTimeoutMs: integer(env, 'READY_TIMEOUT_MS', 2000, 100, 60_000),
    jwt: jwt(env),
    secretsKey: secretsKey(env),
    publicUrl: publicUrl(env),
    deviceCodeTtlSeconds: integer(env, 'DEVICE_CODE_TTL_SECONDS', 600, 60, 3600),
    devicePollIntervalSeconds: integer(env, 'DEVICE_POLL_INTERVAL_SECONDS', 5, 1, 60),
    role: role(env),
    orphanAfterSeconds: integer(env, 'WORKFLOW_ORPHAN_SECONDS', 15, 1, 3600),
    deadlines: {
      clusterReadySeconds: integer(env, 'CLUSTER_READY_TIMEOUT_SECONDS', 900, 60, 86_400),
      // How long a machine's server may take to run and its node to join and turn Ready (minutes, on Hetzner).
      machineBootSeconds: integer(env, 'MACHINE_BOOT_TIMEOUT_SECONDS', 600, 60, 86_400),
      installSyncSeconds: integer(env, 'INSTALL_SYNC_TIMEOUT_SECONDS', 600, 10, 86_400),
      regenerationWaits: boolean(env, 'REGENERATION_WAITS', (env.CLUSTER_DRIVER || 'simulated') === 'kubernetes'),
    },
    workflowStepDelayMs: integer(env, 'WORKFLOW_STEP_DELAY_MS', 0, 0, 60_000),
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 365, 0, 36_500),
    eventPollMs: integer(env, 'EVENT_POLL_MS', 1000, 10, 60_000),
    workerConcurrency: integer(env, 'WORKER_CONCURRENCY', 8, 1, 256),
    webhooks: {
      allowHttpLoopback: boolean(env, 'WEBHOOK_ALLOW_HTTP_LOOPBACK', false),
      timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
      disableAfterDays: integer(env, 'WEBHOOK_DISABLE_AFTER_DAYS', 5, 1, 365),
      // An attempt that waits costs a socket, not CPU: slots are many, and shared fairly between workspaces.
      concurrency: integer(env, 'WEBHOOK_CONCURRENCY', 512, 1, 4096),
      endpointConcurrency: integer(env, 'WEBHOOK_ENDPOINT_CONCURRENCY', 4, 1, 256),
      circuitFailures: integer(env, 'WEBHOOK_CIRCUIT_FAILURES', 5, 1, 1000),
      endpointsPerWorkspace: integer(env, 'WEBHOOK_ENDPOINTS_PER_WORKSPACE', 256, 1, 10_000),
    },
    logPollMs: integer(env, 'LOG_POLL_MS', 50, 10, 10_000),
    // The contract's 15 s; shorter behind a proxy that cuts idle connections sooner (and in tests).
    logKeepAliveMs: integer(env, 'LOG_KEEP_ALIVE_MS', 15_000, 100, 600_000),
    streamStallMs: integer(env, 'STREAM_STALL_MS', 30_000, 100, 600_000),
    streamReauthSeconds: integer(env, 'STREAM_REAUTH_SECONDS', 30, 1, 3600),
    providerRateLimit: integer(env, 'PROVIDER_RATE_LIMIT', 20, 1, 10_000),
    clusterDriver: clusterDriver(env),
    compute: compute(env),
    simulation: {
      // Short enough to try things by hand, long enough that every intermediate status shows.
      bootSeconds: integer(env, 'SIM_BOOT_SECONDS', 5, 0, 3600),
      controlPlaneSeconds: integer(env, 'SIM_CONTROL_PLANE_SECONDS', 10, 0, 3600),
      releaseSeconds: integer(env, 'SIM_RELEASE_SECONDS', 3, 0, 3600),
      snapshotSeconds: integer(env, 'SIM_SNAPSHOT_SECONDS', 3, 0, 3600),
      failureRate: fraction(env, 'SIM_FAILURE_RATE', 0),
      latencyMs: integer(env, 'SIM_LATENCY_MS', 0, 0, 60_000),
    },
  };
}
