// The Hetzner Cloud driver behind ComputeProvider, called with openapi-fetch and typed from the committed
// extract of Hetzner's published API description (contract/). Hetzner has no idempotency keys: servers and
// snapshots carry the workflow id as a label, and a re-run adopts what `label_selector=workflow==<id>` finds.
// Everything it makes (servers, snapshots, firewalls) also carries `managed-by=<installation>` (MANAGED_BY_LABEL):
// it looks up, adopts and sweeps only what carries it, so a user's own servers in a BYOM project, or another
// installation's in a shared one, are never taken for ours.
// Long operations return Actions, polled at GET /actions/{id} until success or error. Ids are Hetzner's
// integers, carried as strings.
//
// Tokens: the platform's (HCLOUD_TOKEN) unless a call passes a BYOM credential. A token goes into the
// Authorization header and the rate-limit key's digest, nowhere else: errors and log lines name the
// credential (its id, or "the platform token"), never the token.
import createClient from 'openapi-fetch';
import type { Logger } from 'pino';
import { timedWait } from '../../telemetry/metrics.ts';
import { labelValue } from '../labels.ts';
import {
  type ComputeProvider,
  type CreateServerRequest,
  type LabelledResource,
  ProviderAuthError,
  type ProviderCredential,
  ProviderError,
  type ProviderErrorKind,
  type Server,
  type ServerOffering,
  type Snapshot,
} from '../types.ts';
import type { components, paths } from './contract/schema.d.ts';
import { bucketKey, nextRequestAt, rateLimitHeaders, type TokenRateLimit } from './rate-limit.ts';

type HetznerServer = components['schemas']['server'];
type HetznerImage = components['schemas']['image'];
type HetznerAction = components['schemas']['action'];
type FirewallRule = components['schemas']['rule'];
type HetznerFirewall = components['schemas']['firewall'];
type HetznerServerType = components['schemas']['server_type'];

/**
 * Hetzner's error codes and what the workflows do about each: by `error.code`, never by HTTP status (a 403 is a
 * missing permission, the project's quota or maintenance alike). The codes are hcloud-go's (hcloud/error.go);
 * cluster-api-provider-hetzner (pkg/services/hcloud/server/server.go) likewise gives up on invalid_input and
 * resource_unavailable at creation and requeues `locked` after a wait, and hcloud-go's retry policy
 * (hcloud/client_handler_retry.go) retries conflict and timeout. rate_limit_exceeded never reaches this table:
 * `call` waits for the bucket's reset and sends again. A code not listed is retried with the failure backoff;
 * `resource_locked` is read with its message (hetznerErrorKind).
 */
export const HETZNER_ERROR_KINDS: Readonly<Record<string, ProviderErrorKind>> = {
  unauthorized: 'credential_refused',
  token_readonly: 'credential_refused',
  forbidden: 'permission_missing',
  resource_limit_exceeded: 'project_limit',
  invalid_input: 'refused',
  resource_unavailable: 'refused',
  placement_error: 'refused',
  uniqueness_error: 'refused',
  // error.go: "The server type does not fit for the given server or is deprecated".
  invalid_server_type: 'refused',
  // error.go: "The actions you are trying is protected": the resource's protection must be lifted first.
  protected: 'refused',
  // error.go: "Invalid JSON in request": the same request is as invalid the next time.
  json_error: 'refused',
  // error.go: "The given resource does not support this".
  unsupported_error: 'refused',
  // error.go: "the API functionality was removed".
  deprecated_api_endpoint: 'refused',
  locked: 'busy',
  // DELETE /firewalls/{id} while a server still has the firewall: it goes once that server is gone.
  resource_in_use: 'busy',
  conflict: 'busy',
  server_error: 'unavailable',
  timeout: 'unavailable',
  maintenance: 'unavailable',
  unavailable: 'unavailable',
};

/**
 * What the workflow does about Hetzner's `code`, its `message` given: the table above, and `resource_locked`, which
 * error.go documents as "The resource is locked. The caller should contact support": refused when its message asks
 * for support (no retry unlocks it), else busy like `locked`.
 */
export function hetznerErrorKind(code: string, message = ''): ProviderErrorKind {
  if (code === 'resource_locked') return /support/i.test(message) ? 'refused' : 'busy';
  return HETZNER_ERROR_KINDS[code] ?? 'unavailable';
}

/** Hetzner answered with an error, or an Action of it failed; `kind` (hetznerErrorKind) is what the workflow does. */
export class HetznerError extends ProviderError {
  readonly status: number;
  /** `message` carries Hetzner's own, which hetznerErrorKind reads. */
  constructor(status: number, code: string, message: string) {
    super(hetznerErrorKind(code, message), code, message);
    this.name = 'HetznerError';
    this.status = status;
  }
}

/** The error for Hetzner's answer `code` to `what`, worded for its kind; `who` names the credential, never the token. */
function hetznerError(status: number, code: string, detail: string | undefined, what: string, who: string): ProviderError {
  const said = `${code}${detail ? `: ${detail}` : ''}`;
  switch (hetznerErrorKind(code, detail)) {
    case 'credential_refused':
      return new ProviderAuthError(who, code, detail);
    case 'permission_missing':
      return new HetznerError(status, code, `Hetzner Cloud did not let ${who} ${what} (${said}); give the token Read & Write permission and retry.`);
    case 'project_limit':
      return new HetznerError(
        status,
        code,
        `The Hetzner Cloud project of ${who} has reached one of its own resource limits, so Hetzner refused to ${what} (${said}). ` +
          'This is the project’s limit, not a problem with the token: free resources in that project or ask Hetzner to raise the limit.',
      );
    default:
      return new HetznerError(status, code, `Hetzner Cloud refused to ${what}: ${said}.`);
  }
}

export interface HetznerOptions {
  /** API base, e.g. https://api.hetzner.cloud/v1. */
  endpoint: string;
  /** The platform account's token; calls without a BYOM credential use it. */
  token: string | undefined;
  /** This installation's value of the managed-by label (HCLOUD_MANAGED_BY): what it makes carries it, and it touches nothing else. */
  managedBy: string;
  /** SSH keys (Hetzner names or ids) every server is created with; none keeps SSH closed by the firewall. */
  sshKeys?: string[];
  rateLimit: TokenRateLimit;
  logger?: Logger;
  /** Between two reads of a running Action or of a server shutting down (ms); default 1000 (HCLOUD_POLL_INTERVAL_MS). */
  actionPollMs?: number;
  /** An Action still running after this long (ms) is an error; default 10 minutes. */
  actionTimeoutMs?: number;
  /** How long a graceful shutdown may take before the server is powered off (ms); default 2 minutes. */
  shutdownTimeoutMs?: number;
  /** How long the server types and locations are cached (ms); default one hour. */
  catalogTtlMs?: number;
  /** A request without an answer after this long (ms) fails; default 30 s. */
  requestTimeoutMs?: number;
  fetch?: typeof fetch;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Hetzner's integer id from our string; undefined for anything else (such as another provider's id). */
function hetznerId(id: string): number | undefined {
  return /^-?[0-9]{1,16}$/.test(id) && Number.isSafeInteger(Number(id)) ? Number(id) : undefined;
}

export { labelValue };

const hetznerLabels = (labels: Record<string, string>) => Object.fromEntries(Object.entries(labels).map(([key, value]) => [key, labelValue(value)]));

/** The label that marks what an installation of the platform made, its value naming the installation. */
const MANAGED_BY_LABEL = 'managed-by';
/** The label hcloud-cloud-controller-manager puts on each load balancer it makes (internal/hcops/load_balancer.go, LabelServiceUID). */
const CCM_SERVICE_LABEL = 'hcloud-ccm/service-uid';

/** The statuses of an earlier run's server that is on its way to running, so a re-run adopts it. */
const ADOPTABLE: ReadonlySet<string> = new Set(['initializing', 'starting', 'running']);

/**
 * The inbound rules of a cluster's firewall, its nodes' public addresses given. Hetzner filters only what reaches
 * a server's public interface, and with no `out` rule lets all outbound traffic go, which nodes need (the tenant
 * API server, image registries, package repositories). In:
 * - everything from the cluster's own nodes (TCP, UDP, ICMP, ESP, GRE): the CNI's overlay (VXLAN, Geneve,
 *   WireGuard or IPsec, whichever it uses), pod-to-pod traffic and NodePorts reached through another node;
 * - nothing from the control plane: it runs in the management cluster and reaches the kubelets (logs, exec) through
 *   the konnectivity agent's outbound tunnel, so the kubelet's port 10250 stays closed to the internet;
 * - ICMP from anywhere, for path-MTU discovery;
 * - the NodePort range (30000-32767/tcp) from anywhere: the cloud controller manager's load balancers (kubernetes/
 *   ccm.ts) reach their targets at the nodes' public addresses (no private network), from addresses not known before
 *   the load balancer exists, and Hetzner's firewalls apply to that traffic too; a NodePort or LoadBalancer Service
 *   is there to be reached from outside;
 * - SSH (22/tcp) only when SSH keys are configured: without one the only way in is a root password, better closed.
 * Hetzner refuses an `in` rule without source_ips, so the nodes' rules come only once there is a node.
 */
export function firewallRules(nodeAddresses: string[], ssh: boolean): FirewallRule[] {
  const anywhere = ['0.0.0.0/0', '::/0'];
  const rules: FirewallRule[] = [
    { direction: 'in', protocol: 'icmp', source_ips: anywhere, description: 'path-MTU discovery, ping' },
    { direction: 'in', protocol: 'tcp', port: '30000-32767', source_ips: anywhere, description: 'NodePorts: load balancers, NodePort Services' },
  ];
  if (ssh) rules.push({ direction: 'in', protocol: 'tcp', port: '22', source_ips: anywhere, description: 'SSH, with the configured keys' });
  if (nodeAddresses.length > 0) {
    for (const protocol of ['tcp', 'udp'] as const)
      rules.push({ direction: 'in', protocol, port: '1-65535', source_ips: nodeAddresses, description: 'the cluster’s nodes: CNI, pods, NodePorts' });
    for (const protocol of ['esp', 'gre'] as const)
      rules.push({ direction: 'in', protocol, source_ips: nodeAddresses, description: 'the cluster’s nodes: CNI tunnels' });
  }
  return rules;
}

/** A server's public addresses as firewall sources: its IPv4 address, its IPv6 network. */
function addressesOf(server: HetznerServer): string[] {
  const { ipv4, ipv6 } = server.public_net;
  return [...(ipv4 ? [`${ipv4.ip}/32`] : []), ...(ipv6 ? [ipv6.ip] : [])];
}

/** Server types as Hetzner lists them, what new machines may be given of them, and the locations. */
interface Catalog {
  at: number;
  types: HetznerServerType[];
  offerings: ServerOffering[];
  locations: string[];
}

/** Pages read at most, a guard against an answer whose next_page never ends. */
const MAX_PAGES = 100;

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** An answer, with the credential it was sent with named for error messages. */
type NamedAnswer<T> = Answer<T> & { who: string };

export class HetznerCompute implements ComputeProvider {
  private readonly options: Required<Omit<HetznerOptions, 'logger' | 'fetch' | 'token'>> & Pick<HetznerOptions, 'logger' | 'token'>;
  private readonly client;
  private catalog: Catalog | undefined;

  constructor(options: HetznerOptions) {
    this.options = {
      sshKeys: [],
      actionPollMs: 1000,
      actionTimeoutMs: 600_000,
      shutdownTimeoutMs: 120_000,
      catalogTtlMs: 3_600_000,
      requestTimeoutMs: 30_000,
      ...options,
    };
    const send = options.fetch ?? fetch;
    const timeoutMs = this.options.requestTimeoutMs;
    this.client = createClient<paths>({
      baseUrl: options.endpoint.replace(/\/+$/, ''),
      fetch: (request: Request) => send(request, { signal: AbortSignal.timeout(timeoutMs) }),
    });
  }

  /**
   * One API call with `credential`'s token (else the platform's): waits for the token's rate-limit slot,
   * lets the RateLimit-* answer adjust the bucket, and waits out a 429 and tries again (it is not a failure).
   * Other errors are `data`'s to read, by their code.
   */
  private async call<T>(credential: ProviderCredential | undefined, send: (headers: { Authorization: string }) => Promise<Answer<T>>): Promise<NamedAnswer<T>> {
    const token = credential?.token ?? this.options.token;
    const who = credential ? `cloud credential ${credential.id}` : 'the platform token (HCLOUD_TOKEN)';
    if (!token) throw new ProviderAuthError(who, 'unauthorized', 'no token is configured');
    const key = bucketKey(token);
    for (;;) {
      await timedWait('hetzner-token', this.options.rateLimit.take(key));
      let answer: Answer<T>;
      try {
        answer = await send({ Authorization: `Bearer ${token}` });
      } catch (error) {
        // fetch's own errors carry no request headers; only the cause's code is kept.
        const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
        throw new HetznerError(0, 'unreachable', `Hetzner Cloud API could not be reached (${cause}).`);
      }
      const { response } = answer;
      const limits = rateLimitHeaders(response.headers);
      const exhausted = response.status === 429;
      const until = limits ? nextRequestAt(limits, Date.now(), exhausted) : exhausted ? Date.now() + 1000 : undefined;
      if (until !== undefined) await this.options.rateLimit.defer(key, until);
      if (exhausted) {
        this.options.logger?.warn({ credential: who, wait_ms: Math.max(0, until! - Date.now()) }, 'Hetzner rate limit reached; waiting for its reset');
        continue; // the deferred bucket makes the next take() wait
      }
      return { ...answer, who };
    }
  }

  /** The answer's data, undefined for 404 when `notFound` allows it, else the error its code means (HETZNER_ERROR_KINDS). */
  private static data<T>(answer: NamedAnswer<T>, what: string, { notFound = false } = {}): T | undefined {
    if (answer.response.ok) return answer.data;
    if (notFound && answer.response.status === 404) return undefined;
    const body = (answer.error ?? {}) as { error?: { code?: string; message?: string } };
    throw hetznerError(answer.response.status, body.error?.code ?? 'unknown', body.error?.message, what, answer.who);
  }

  /** Polls an Action until it is no longer running; an Action that ends in error throws. */
  private async awaitAction(action: HetznerAction, credential: ProviderCredential | undefined): Promise<void> {
    const deadline = Date.now() + this.options.actionTimeoutMs;
    let current = action;
    while (current.status === 'running') {
      if (Date.now() > deadline) throw new HetznerError(0, 'timeout', `Hetzner action ${current.command} (${current.id}) did not finish in time.`);
      await sleep(this.options.actionPollMs);
      const answer = await this.call(credential, (headers) => this.client.GET('/actions/{id}', { params: { path: { id: current.id } }, headers }));
      current = HetznerCompute.data(answer, `read action ${current.id}`)!.action;
    }
    if (current.status === 'error') {
      throw new HetznerError(
        0,
        current.error?.code ?? 'action_failed',
        `Hetzner action ${current.command} failed: ${current.error?.code ?? 'action_failed'}${current.error?.message ? ` (${current.error.message})` : ''}.`,
      );
    }
  }

  /** Every page of a list (Hetzner pages with page/per_page and meta.pagination.next_page). */
  private async all<T>(fetchPage: (page: number) => Promise<{ items: T[]; next: number | null }>): Promise<T[]> {
    const items: T[] = [];
    for (let page = 1; page <= MAX_PAGES; ) {
      const result = await fetchPage(page);
      items.push(...result.items);
      if (result.next === null || result.next <= page) break;
      page = result.next;
    }
    return items;
  }

  /** Server types and locations, read from the API and cached (the public catalog is the same for every token). */
  private async loadCatalog(credential?: ProviderCredential, { fresh = false } = {}): Promise<Catalog> {
    if (!fresh && this.catalog && Date.now() - this.catalog.at < this.options.catalogTtlMs) return this.catalog;
    const types = await this.all(async (page) => {
      const answer = await this.call(credential, (headers) => this.client.GET('/server_types', { params: { query: { page, per_page: 50 } }, headers }));
      const data = HetznerCompute.data(answer, 'list server types')!;
      return { items: data.server_types, next: data.meta.pagination.next_page };
    });
    const locations = await this.all(async (page) => {
      const answer = await this.call(credential, (headers) => this.client.GET('/locations', { params: { query: { page, per_page: 50 } }, headers }));
      const data = HetznerCompute.data(answer, 'list locations')!;
      return { items: data.locations, next: data.meta?.pagination.next_page ?? null };
    });
    // A type is sold per location (hcloud-go's ServerTypeLocation): where it is available and not deprecated.
    const offerings = types
      .filter((t) => !t.deprecated)
      .map((t) => ({
        name: t.name,
        cpu: t.cores,
        memory_bytes: Math.round(t.memory * 1024 ** 3),
        locations: t.locations.filter((l) => l.available && l.deprecation === null).map((l) => l.name),
      }))
      .filter((t) => t.locations.length > 0)
      .sort((a, b) => a.memory_bytes - b.memory_bytes || a.cpu - b.cpu || a.name.localeCompare(b.name));
    this.catalog = { at: Date.now(), types, offerings, locations: locations.map((l) => l.name) };
    return this.catalog;
  }

  /**
   * Why Hetzner would not create a server of `typeName` in `location`, from the catalog; undefined when it would. A
   * type deprecated there is still created until its `unavailable_after` (a machine resumed from its snapshot keeps
   * its type); only new machines are refused it (resources/machines.ts).
   */
  private static unsold(catalog: Catalog, typeName: string, location: string): HetznerError | undefined {
    const type = catalog.types.find((t) => t.name === typeName);
    if (!type) return new HetznerError(0, 'invalid_input', `Hetzner Cloud offers no server type ${typeName}.`);
    const there = type.locations.find((l) => l.name === location);
    const sold = type.locations.filter((l) => l.available && l.deprecation === null).map((l) => l.name);
    const elsewhere = `(it is on sale in ${sold.length > 0 ? sold.join(', ') : 'no location'})`;
    if (!there) return new HetznerError(0, 'invalid_input', `Hetzner Cloud does not sell server type ${typeName} in ${location} ${elsewhere}.`);
    if (!there.available) return new HetznerError(0, 'resource_unavailable', `Server type ${typeName} is not available in ${location} now ${elsewhere}.`);
    if (there.deprecation && Date.parse(there.deprecation.unavailable_after) <= Date.now()) {
      return new HetznerError(
        0,
        'invalid_server_type',
        `Server type ${typeName} is no longer sold in ${location} since ${there.deprecation.unavailable_after} ${elsewhere}.`,
      );
    }
    return undefined;
  }

  /** The project's token and the API's address, for the cloud controller manager of a cluster of its servers (kubernetes/ccm.ts). */
  cloudControllerAccess(credential?: ProviderCredential): { token: string; endpoint: string } | undefined {
    const token = credential?.token ?? this.options.token;
    return token ? { token, endpoint: this.options.endpoint } : undefined;
  }

  async offerings(credential?: ProviderCredential): Promise<ServerOffering[]> {
    return (await this.loadCatalog(credential)).offerings.map((o) => ({ ...o, locations: [...(o.locations ?? [])] }));
  }

  async locations(credential?: ProviderCredential): Promise<string[]> {
    return [...(await this.loadCatalog(credential)).locations];
  }

  /** A label selector of what this installation made, narrowed by `terms`. */
  private ours(...terms: string[]): string {
    return [...terms, `${MANAGED_BY_LABEL}==${this.options.managedBy}`].join(',');
  }

  /** Labels as Hetzner takes them, with this installation's managed-by label. */
  private labelled(labels: Record<string, string>): Record<string, string> {
    return hetznerLabels({ ...labels, [MANAGED_BY_LABEL]: this.options.managedBy });
  }

  private async serverByWorkflow(workflow: string, credential: ProviderCredential | undefined): Promise<HetznerServer | undefined> {
    const answer = await this.call(credential, (headers) =>
      this.client.GET('/servers', { params: { query: { label_selector: this.ours(`workflow==${labelValue(workflow)}`) } }, headers }),
    );
    return HetznerCompute.data(answer, 'list servers')!.servers[0];
  }

  async createServer(request: CreateServerRequest): Promise<Server> {
    const { credential } = request;
    // No idempotency keys at Hetzner: an earlier run's server carries this workflow's label.
    const existing = await this.serverByWorkflow(request.labels.workflow, credential);
    const server = existing && ADOPTABLE.has(existing.status) ? toServer(existing) : await this.newServer(request, existing);
    if (request.cluster_id !== undefined) await this.refreshFirewall(request.cluster_id, credential);
    return server;
  }

  /** Creates the server; `unusable` is an earlier run's server that is off, stopping or being deleted, deleted first. */
  private async newServer(request: CreateServerRequest, unusable: HetznerServer | undefined): Promise<Server> {
    const { credential } = request;
    // It would never boot into a node: it goes, and a new one is made.
    if (unusable) await this.deleteServer(String(unusable.id), credential);
    let catalog = await this.loadCatalog(credential);
    const firewall = request.cluster_id === undefined ? undefined : (await this.clusterFirewall(request.cluster_id, credential)).id;
    if (!catalog.locations.includes(request.location)) {
      throw new HetznerError(0, 'invalid_input', `Hetzner Cloud has no location ${request.location} (it has ${catalog.locations.join(', ')}).`);
    }
    // Availability changes by the hour: a refusal is confirmed on a fresh catalog, not the cached one.
    if (HetznerCompute.unsold(catalog, request.server_type, request.location)) catalog = await this.loadCatalog(credential, { fresh: true });
    const unsold = HetznerCompute.unsold(catalog, request.server_type, request.location);
    if (unsold) throw unsold;
    const answer = await this.call(credential, (headers) =>
      this.client.POST('/servers', {
        body: {
          name: request.name,
          server_type: request.server_type,
          location: request.location,
          image: request.image,
          labels: this.labelled({ ...request.labels, ...(request.cluster_id === undefined ? {} : { cluster: request.cluster_id }) }),
          start_after_create: true,
          ...(request.user_data === undefined ? {} : { user_data: request.user_data }),
          ...(this.options.sshKeys.length > 0 ? { ssh_keys: this.options.sshKeys } : {}),
          // The cluster's firewall from the first boot on, not applied after the server is already reachable.
          ...(firewall === undefined ? {} : { firewalls: [{ firewall }] }),
        },
        headers,
      }),
    );
    if (answer.response.status === 409) {
      // Another process created it between our lookup and this call: adopt that one.
      const raced = await this.serverByWorkflow(request.labels.workflow, credential);
      if (raced) return toServer(raced);
    }
    const created = HetznerCompute.data(answer, `create server ${request.name}`)!;
    try {
      await this.awaitAction(created.action, credential);
    } catch (error) {
      // A server whose creation failed would be adopted by the retry: it goes, so the retry makes a new one.
      await this.deleteServer(String(created.server.id), credential).catch(() => {});
      throw error;
    }
    return (await this.getServer(String(created.server.id), credential)) ?? toServer(created.server);
  }

  /** The cluster's firewall (labelled `cluster` and ours), if there is one. */
  private async findFirewall(clusterId: string, credential: ProviderCredential | undefined): Promise<HetznerFirewall | undefined> {
    const answer = await this.call(credential, (headers) =>
      this.client.GET('/firewalls', { params: { query: { label_selector: this.ours(`cluster==${labelValue(clusterId)}`) } }, headers }),
    );
    return HetznerCompute.data(answer, 'list firewalls')!.firewalls[0];
  }

  /** The cluster's firewall, created with the rules for no node yet when it does not exist. */
  private async clusterFirewall(clusterId: string, credential: ProviderCredential | undefined): Promise<HetznerFirewall> {
    const found = await this.findFirewall(clusterId, credential);
    if (found) return found;
    const cluster = labelValue(clusterId);
    const answer = await this.call(credential, (headers) =>
      this.client.POST('/firewalls', {
        body: { name: `cluster-${cluster}`, labels: this.labelled({ cluster }), rules: firewallRules([], this.options.sshKeys.length > 0) },
        headers,
      }),
    );
    if (answer.response.status === 409) {
      // Another machine of the cluster created it meanwhile (its name is taken): use that one.
      const raced = await this.findFirewall(clusterId, credential);
      if (raced) return raced;
    }
    const created = HetznerCompute.data(answer, `create the firewall of cluster ${clusterId}`)?.firewall;
    if (!created) throw new HetznerError(answer.response.status, 'invalid_response', `Hetzner Cloud returned no firewall for cluster ${clusterId}.`);
    return created;
  }

  /**
   * Brings the cluster firewall's rules up to date with the cluster's servers there are now (labelled `cluster` and
   * ours, but one being deleted), when they differ: a node created or deleted, a rule changed by hand, SSH keys
   * configured or removed. A deleted node's address leaves the rules, so whoever gets that address next is not let in.
   * A cluster without a firewall here (no node of it ever was) is left so.
   */
  async refreshFirewall(clusterId: string, credential?: ProviderCredential): Promise<void> {
    const firewall = await this.findFirewall(clusterId, credential);
    if (!firewall) return;
    const nodes = await this.all(async (page) => {
      const answer = await this.call(credential, (headers) =>
        this.client.GET('/servers', { params: { query: { label_selector: this.ours(`cluster==${labelValue(clusterId)}`), page, per_page: 50 } }, headers }),
      );
      const data = HetznerCompute.data(answer, 'list the cluster’s servers')!;
      return { items: data.servers, next: data.meta.pagination.next_page };
    });
    const addresses = nodes
      .filter((node) => node.status !== 'deleting')
      .flatMap(addressesOf)
      .sort();
    const rules = firewallRules(addresses, this.options.sshKeys.length > 0);
    if (sameRules(firewall.rules ?? [], rules)) return;
    const answer = await this.call(credential, (headers) =>
      this.client.POST('/firewalls/{id}/actions/set_rules', { params: { path: { id: firewall.id } }, body: { rules }, headers }),
    );
    for (const action of HetznerCompute.data(answer, `set the rules of the firewall of cluster ${clusterId}`)!.actions)
      await this.awaitAction(action, credential);
  }

  /**
   * What a deleted cluster leaves in this project besides its servers: the load balancers its cloud controller
   * manager made (claimed for the cluster while their targets were its servers, claimLoadBalancers), and its
   * firewall, unless a server still has it (the leftovers run deletes it then).
   */
  async deleteClusterResources(clusterId: string, credential?: ProviderCredential): Promise<void> {
    for (const balancer of await this.loadBalancers(this.ours(`cluster==${labelValue(clusterId)}`), credential)) {
      await this.deleteLoadBalancer(String(balancer.id), credential);
    }
    const firewall = await this.findFirewall(clusterId, credential);
    if (!firewall) return;
    try {
      await this.deleteFirewall(String(firewall.id), credential);
    } catch (error) {
      if (!(error instanceof ProviderError && error.kind === 'busy')) throw error;
      this.options.logger?.info(
        { cluster: clusterId, firewall: firewall.id },
        'the deleted cluster’s firewall is still in use; the leftovers run deletes it later',
      );
    }
  }

  /** Deletes a firewall; one that is gone already is fine, one still applied to a server is refused (`resource_in_use`, busy). */
  async deleteFirewall(id: string, credential?: ProviderCredential): Promise<void> {
    const hid = hetznerId(id);
    if (hid === undefined) return;
    const answer = await this.call(credential, (headers) => this.client.DELETE('/firewalls/{id}', { params: { path: { id: hid } }, headers }));
    HetznerCompute.data(answer, `delete firewall ${id}`, { notFound: true });
  }

  /** Deletes a load balancer; one that is gone already is fine. */
  async deleteLoadBalancer(id: string, credential?: ProviderCredential): Promise<void> {
    const hid = hetznerId(id);
    if (hid === undefined) return;
    const answer = await this.call(credential, (headers) => this.client.DELETE('/load_balancers/{id}', { params: { path: { id: hid } }, headers }));
    HetznerCompute.data(answer, `delete load balancer ${id}`, { notFound: true });
  }

  private async loadBalancers(label_selector: string, credential: ProviderCredential | undefined) {
    return this.all(async (page) => {
      const answer = await this.call(credential, (headers) =>
        this.client.GET('/load_balancers', { params: { query: { label_selector, page, per_page: 50 } }, headers }),
      );
      const data = HetznerCompute.data(answer, 'list load balancers')!;
      return { items: data.load_balancers, next: data.meta.pagination.next_page };
    });
  }

  /**
   * Claims for their cluster the load balancers a tenant's cloud controller manager made that target servers of
   * ours: it labels each with `hcloud-ccm/service-uid` (hcloud-cloud-controller-manager,
   * internal/hcops/load_balancer.go) and with nothing of ours, and the platform adds its managed-by label and the
   * cluster's, so that they go with their cluster (deleteClusterResources) or are swept as leftovers once it is
   * gone. Claimed while a target is still one of the cluster's servers: once its machines are deleted, nothing
   * would tell whose it is.
   */
  private async claimLoadBalancers(servers: HetznerServer[], credential: ProviderCredential | undefined): Promise<void> {
    const clusterOf = new Map(
      servers.filter((s) => s.labels[MANAGED_BY_LABEL] === this.options.managedBy && s.labels.cluster).map((s) => [s.id, s.labels.cluster!]),
    );
    if (clusterOf.size === 0) return;
    for (const balancer of await this.loadBalancers(CCM_SERVICE_LABEL, credential)) {
      if (balancer.labels[MANAGED_BY_LABEL] !== undefined) continue;
      const cluster = balancer.targets.map((t) => (t.server ? clusterOf.get(t.server.id) : undefined)).find((c) => c !== undefined);
      if (cluster === undefined) continue;
      const answer = await this.call(credential, (headers) =>
        this.client.PUT('/load_balancers/{id}', {
          params: { path: { id: balancer.id } },
          body: { labels: { ...balancer.labels, ...this.labelled({ cluster }) } },
          headers,
        }),
      );
      HetznerCompute.data(answer, `label load balancer ${balancer.id}`, { notFound: true });
    }
  }

  async getServer(id: string, credential?: ProviderCredential): Promise<Server | undefined> {
    const hid = hetznerId(id);
    if (hid === undefined) return undefined;
    const answer = await this.call(credential, (headers) => this.client.GET('/servers/{id}', { params: { path: { id: hid } }, headers }));
    const data = HetznerCompute.data(answer, `read server ${id}`, { notFound: true });
    return data?.server ? toServer(data.server) : undefined;
  }

  async shutdownServer(id: string, credential?: ProviderCredential): Promise<void> {
    const hid = hetznerId(id);
    const server = await this.getServer(id, credential);
    if (hid === undefined || !server || server.status === 'off') return;
    const answer = await this.call(credential, (headers) => this.client.POST('/servers/{id}/actions/shutdown', { params: { path: { id: hid } }, headers }));
    await this.awaitAction(HetznerCompute.data(answer, `shut down server ${id}`)!.action, credential);
    // The shutdown Action only delivers the ACPI signal; the server is off when its status says so.
    const deadline = Date.now() + this.options.shutdownTimeoutMs;
    while (Date.now() < deadline) {
      const current = await this.getServer(id, credential);
      if (!current || current.status === 'off') return;
      await sleep(this.options.actionPollMs);
    }
    this.options.logger?.warn({ server_id: id }, 'server ignored the graceful shutdown; powering it off');
    const off = await this.call(credential, (headers) => this.client.POST('/servers/{id}/actions/poweroff', { params: { path: { id: hid } }, headers }));
    await this.awaitAction(HetznerCompute.data(off, `power off server ${id}`)!.action, credential);
  }

  async powerOnServer(id: string, credential?: ProviderCredential): Promise<void> {
    const hid = hetznerId(id);
    if (hid === undefined) return;
    // A shutdown still under way ends first: Hetzner would refuse the poweron as locked meanwhile.
    const deadline = Date.now() + this.options.shutdownTimeoutMs;
    let server = await this.getServer(id, credential);
    while (server?.status === 'stopping' && Date.now() < deadline) {
      await sleep(this.options.actionPollMs);
      server = await this.getServer(id, credential);
    }
    if (server?.status !== 'off') return;
    const answer = await this.call(credential, (headers) => this.client.POST('/servers/{id}/actions/poweron', { params: { path: { id: hid } }, headers }));
    await this.awaitAction(HetznerCompute.data(answer, `power on server ${id}`)!.action, credential);
  }

  async deleteServer(id: string, credential?: ProviderCredential): Promise<void> {
    const hid = hetznerId(id);
    if (hid === undefined) return;
    const server = await this.getServer(id, credential);
    if (!server) return;
    // The last chance to tell whose its cluster's load balancers are: they target it until it is gone.
    if (server.labels.cluster !== undefined && server.labels[MANAGED_BY_LABEL] === this.options.managedBy) {
      await this.claimLoadBalancers([{ id: hid, labels: server.labels } as HetznerServer], credential).catch((error: unknown) =>
        this.options.logger?.warn({ err: error, server: id }, 'claiming the load balancers of a deleted server’s cluster failed; the leftovers run retries'),
      );
    }
    const answer = await this.call(credential, (headers) => this.client.DELETE('/servers/{id}', { params: { path: { id: hid } }, headers }));
    const data = HetznerCompute.data(answer, `delete server ${id}`, { notFound: true });
    if (data?.action) await this.awaitAction(data.action, credential);
    // Its address leaves its cluster's firewall. The server is gone already, so a failure here must not fail the
    // deletion (a retry would find no server and stop): the leftovers run refreshes the rules again.
    const cluster = server.labels.cluster;
    if (cluster !== undefined && server.labels[MANAGED_BY_LABEL] === this.options.managedBy) {
      await this.refreshFirewall(cluster, credential).catch((error: unknown) =>
        this.options.logger?.warn({ err: error, cluster }, 'refreshing the cluster firewall after a server deletion failed; the leftovers run retries'),
      );
    }
  }

  async createSnapshot(serverId: string, labels: Record<string, string> & { workflow: string }, credential?: ProviderCredential): Promise<Snapshot> {
    const found = await this.call(credential, (headers) =>
      this.client.GET('/images', { params: { query: { type: ['snapshot'], label_selector: this.ours(`workflow==${labelValue(labels.workflow)}`) } }, headers }),
    );
    const existing = HetznerCompute.data(found, 'list snapshots')!.images[0];
    if (existing) return toSnapshot(existing, serverId);
    const hid = hetznerId(serverId);
    if (hid === undefined) throw new HetznerError(404, 'not_found', `Hetzner Cloud has no server ${serverId}.`);
    const answer = await this.call(credential, (headers) =>
      this.client.POST('/servers/{id}/actions/create_image', {
        params: { path: { id: hid } },
        body: { type: 'snapshot', labels: this.labelled(labels), description: `snapshot of server ${serverId}` },
        headers,
      }),
    );
    const image = HetznerCompute.data(answer, `snapshot server ${serverId}`)?.image;
    if (!image) throw new HetznerError(answer.response.status, 'invalid_response', `Hetzner Cloud returned no image for the snapshot of server ${serverId}.`);
    // The Action is not awaited: the image's own status (creating → available) is what getSnapshot reports.
    return toSnapshot(image, serverId);
  }

  async getSnapshot(id: string, credential?: ProviderCredential): Promise<Snapshot | undefined> {
    const hid = hetznerId(id);
    if (hid === undefined) return undefined;
    const answer = await this.call(credential, (headers) => this.client.GET('/images/{id}', { params: { path: { id: hid } }, headers }));
    const image = HetznerCompute.data(answer, `read snapshot ${id}`, { notFound: true })?.image;
    return image && image.type === 'snapshot' ? toSnapshot(image) : undefined;
  }

  async listLabelled(credential?: ProviderCredential): Promise<LabelledResource[]> {
    // Only what this installation made: a user's own server with `workflow` and `machine` labels is not ours.
    const label_selector = this.ours();
    const servers = await this.all(async (page) => {
      const answer = await this.call(credential, (headers) =>
        this.client.GET('/servers', { params: { query: { label_selector, page, per_page: 50 } }, headers }),
      );
      const data = HetznerCompute.data(answer, 'list servers')!;
      return { items: data.servers, next: data.meta.pagination.next_page };
    });
    const images = await this.all(async (page) => {
      const answer = await this.call(credential, (headers) =>
        this.client.GET('/images', { params: { query: { type: ['snapshot'], label_selector, page, per_page: 50 } }, headers }),
      );
      const data = HetznerCompute.data(answer, 'list snapshots')!;
      return { items: data.images, next: data.meta.pagination.next_page };
    });
    const firewalls = await this.all(async (page) => {
      const answer = await this.call(credential, (headers) =>
        this.client.GET('/firewalls', { params: { query: { label_selector, page, per_page: 50 } }, headers }),
      );
      const data = HetznerCompute.data(answer, 'list firewalls')!;
      return { items: data.firewalls, next: data.meta.pagination.next_page };
    });
    await this.claimLoadBalancers(servers, credential);
    const balancers = await this.loadBalancers(label_selector, credential);
    return [
      ...balancers.map((b) => ({ kind: 'load_balancer' as const, id: String(b.id), labels: b.labels })),
      ...servers.map((s) => ({ kind: 'server' as const, id: String(s.id), labels: s.labels })),
      ...images.map((i) => ({ kind: 'snapshot' as const, id: String(i.id), labels: i.labels })),
      ...firewalls.map((f) => ({ kind: 'firewall' as const, id: String(f.id), labels: f.labels ?? {} })),
    ];
  }

  async deleteSnapshot(id: string, credential?: ProviderCredential): Promise<void> {
    const hid = hetznerId(id);
    if (hid === undefined) return;
    const answer = await this.call(credential, (headers) => this.client.DELETE('/images/{id}', { params: { path: { id: hid } }, headers }));
    HetznerCompute.data(answer, `delete snapshot ${id}`, { notFound: true });
  }
}

/** Whether a firewall's rules (as Hetzner answers them) are `wanted`, in any order. */
function sameRules(current: HetznerFirewall['rules'], wanted: FirewallRule[]): boolean {
  const key = (rule: FirewallRule) =>
    JSON.stringify([
      rule.direction,
      rule.protocol,
      rule.port ?? null,
      [...(rule.source_ips ?? [])].sort(),
      [...(rule.destination_ips ?? [])].sort(),
      rule.description ?? null,
    ]);
  const a = (current ?? []).map(key).sort();
  const b = wanted.map(key).sort();
  return a.length === b.length && a.every((k, i) => k === b[i]);
}

function toServer(server: HetznerServer): Server {
  const image = server.image;
  return {
    id: String(server.id),
    name: server.name,
    status: server.status,
    server_type: server.server_type.name,
    // A snapshot has no name: its id stands for it, as in the create request that used it.
    image: image ? (image.name ?? String(image.id)) : '',
    // `location`, not `datacenter`: Hetzner removed the server's datacenter on 2026-07-01.
    location: server.location.name,
    labels: server.labels,
    from_snapshot: image?.type === 'snapshot',
  };
}

function toSnapshot(image: HetznerImage, serverId?: string): Snapshot {
  return {
    id: String(image.id),
    server_id: image.created_from ? String(image.created_from.id) : (serverId ?? ''),
    // Hetzner's image status: creating → available, or unavailable when it could not be made (our `failed`).
    status: image.status === 'available' ? 'available' : image.status === 'creating' ? 'creating' : 'failed',
    labels: image.labels,
  };
}
