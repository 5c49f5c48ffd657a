// The Hetzner Cloud driver behind ComputeProvider, called with openapi-fetch and typed from the committed
// extract of Hetzner's published API description (contract/). Hetzner has no idempotency keys: servers and
// snapshots carry the workflow id as a label, and a re-run adopts what `label_selector=workflow==<id>` finds.
// Long operations return Actions, polled at GET /actions/{id} until success or error. Ids are Hetzner's
// integers, carried as strings.
//
// Tokens: the platform's (HCLOUD_TOKEN) unless a call passes a BYOM credential. A token goes into the
// Authorization header and the rate-limit key's digest, nowhere else: errors and log lines name the
// credential (its id, or "the platform token"), never the token.
import createClient from 'openapi-fetch';
import type { Logger } from 'pino';
import {
  type ComputeProvider,
  type CreateServerRequest,
  ProviderAuthError,
  type ProviderCredential,
  type Server,
  type ServerOffering,
  type Snapshot,
} from '../types.ts';
import type { components, paths } from './contract/schema.d.ts';
import { bucketKey, nextRequestAt, rateLimitHeaders, type TokenRateLimit } from './rate-limit.ts';

type HetznerServer = components['schemas']['server'];
type HetznerImage = components['schemas']['image'];
type HetznerAction = components['schemas']['action'];

/** Hetzner answered with an error other than an authentication failure (the workflow may retry). */
export class HetznerError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'HetznerError';
    this.status = status;
    this.code = code;
  }
}

export interface HetznerOptions {
  /** API base, e.g. https://api.hetzner.cloud/v1. */
  endpoint: string;
  /** The platform account's token; calls without a BYOM credential use it. */
  token: string | undefined;
  rateLimit: TokenRateLimit;
  logger?: Logger;
  /** Between two reads of a running Action (ms); default 1000. */
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

/**
 * Hetzner's label values are at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric: each run of other
 * characters becomes one dot (`compute://mch_01h…` → `compute.mch_01h…`).
 */
export function labelValue(value: string): string {
  return value
    .replace(/[^A-Za-z0-9._-]+/g, '.')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}

const hetznerLabels = (labels: Record<string, string>) => Object.fromEntries(Object.entries(labels).map(([key, value]) => [key, labelValue(value)]));

/** Pages read at most, a guard against an answer whose next_page never ends. */
const MAX_PAGES = 100;

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

export class HetznerCompute implements ComputeProvider {
  private readonly options: Required<Omit<HetznerOptions, 'logger' | 'fetch' | 'token'>> & Pick<HetznerOptions, 'logger' | 'token'>;
  private readonly client;
  private catalog: { at: number; offerings: ServerOffering[]; locations: string[] } | undefined;

  constructor(options: HetznerOptions) {
    this.options = { actionPollMs: 1000, actionTimeoutMs: 600_000, shutdownTimeoutMs: 120_000, catalogTtlMs: 3_600_000, requestTimeoutMs: 30_000, ...options };
    const send = options.fetch ?? fetch;
    const timeoutMs = this.options.requestTimeoutMs;
    this.client = createClient<paths>({
      baseUrl: options.endpoint.replace(/\/+$/, ''),
      fetch: (request: Request) => send(request, { signal: AbortSignal.timeout(timeoutMs) }),
    });
  }

  /**
   * One API call with `credential`'s token (else the platform's): waits for the token's rate-limit slot,
   * lets the RateLimit-* answer adjust the bucket, waits out a 429 and tries again (it is not a failure), and
   * turns 401/403 into ProviderAuthError and other errors into HetznerError.
   */
  private async call<T>(credential: ProviderCredential | undefined, send: (headers: { Authorization: string }) => Promise<Answer<T>>): Promise<Answer<T>> {
    const token = credential?.token ?? this.options.token;
    const who = credential ? `cloud credential ${credential.id}` : 'the platform token (HCLOUD_TOKEN)';
    if (!token) throw new ProviderAuthError(who, 401);
    const key = bucketKey(token);
    for (;;) {
      await this.options.rateLimit.take(key);
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
      if (response.status === 401 || response.status === 403) throw new ProviderAuthError(who, response.status);
      return answer;
    }
  }

  /** The answer's data, undefined for 404, else a HetznerError with Hetzner's code and message. */
  private static data<T>(answer: Answer<T>, what: string, { notFound = false } = {}): T | undefined {
    if (answer.response.ok) return answer.data;
    if (notFound && answer.response.status === 404) return undefined;
    const body = (answer.error ?? {}) as { error?: { code?: string; message?: string } };
    const code = body.error?.code ?? 'unknown';
    throw new HetznerError(answer.response.status, code, `Hetzner Cloud refused to ${what}: ${code}${body.error?.message ? ` (${body.error.message})` : ''}.`);
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
  private async loadCatalog(credential?: ProviderCredential): Promise<{ offerings: ServerOffering[]; locations: string[] }> {
    if (this.catalog && Date.now() - this.catalog.at < this.options.catalogTtlMs) return this.catalog;
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
    const offerings = types
      .filter((t) => !t.deprecated)
      .map((t) => ({ name: t.name, cpu: t.cores, memory_bytes: Math.round(t.memory * 1024 ** 3) }))
      .sort((a, b) => a.memory_bytes - b.memory_bytes || a.cpu - b.cpu || a.name.localeCompare(b.name));
    this.catalog = { at: Date.now(), offerings, locations: locations.map((l) => l.name) };
    return this.catalog;
  }

  async offerings(credential?: ProviderCredential): Promise<ServerOffering[]> {
    return (await this.loadCatalog(credential)).offerings.map((o) => ({ ...o }));
  }

  async locations(credential?: ProviderCredential): Promise<string[]> {
    return [...(await this.loadCatalog(credential)).locations];
  }

  private async serverByWorkflow(workflow: string, credential: ProviderCredential | undefined): Promise<HetznerServer | undefined> {
    const answer = await this.call(credential, (headers) =>
      this.client.GET('/servers', { params: { query: { label_selector: `workflow==${labelValue(workflow)}` } }, headers }),
    );
    return HetznerCompute.data(answer, 'list servers')!.servers[0];
  }

  async createServer(request: CreateServerRequest): Promise<Server> {
    const { credential } = request;
    // No idempotency keys at Hetzner: an earlier run's server carries this workflow's label.
    const existing = await this.serverByWorkflow(request.labels.workflow, credential);
    if (existing) return toServer(existing);
    const catalog = await this.loadCatalog(credential);
    if (!catalog.locations.includes(request.location)) {
      throw new HetznerError(0, 'invalid_input', `Hetzner Cloud has no location ${request.location} (it has ${catalog.locations.join(', ')}).`);
    }
    if (!catalog.offerings.some((o) => o.name === request.server_type)) {
      throw new HetznerError(0, 'invalid_input', `Hetzner Cloud offers no server type ${request.server_type}.`);
    }
    const answer = await this.call(credential, (headers) =>
      this.client.POST('/servers', {
        body: {
          name: request.name,
          server_type: request.server_type,
          location: request.location,
          image: request.image,
          labels: hetznerLabels(request.labels),
          start_after_create: true,
          ...(request.user_data === undefined ? {} : { user_data: request.user_data }),
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

  async deleteServer(id: string, credential?: ProviderCredential): Promise<void> {
    const hid = hetznerId(id);
    if (hid === undefined) return;
    const answer = await this.call(credential, (headers) => this.client.DELETE('/servers/{id}', { params: { path: { id: hid } }, headers }));
    const data = HetznerCompute.data(answer, `delete server ${id}`, { notFound: true });
    if (data?.action) await this.awaitAction(data.action, credential);
  }

  async createSnapshot(serverId: string, labels: Record<string, string> & { workflow: string }, credential?: ProviderCredential): Promise<Snapshot> {
    const found = await this.call(credential, (headers) =>
      this.client.GET('/images', { params: { query: { type: ['snapshot'], label_selector: `workflow==${labelValue(labels.workflow)}` } }, headers }),
    );
    const existing = HetznerCompute.data(found, 'list snapshots')!.images[0];
    if (existing) return toSnapshot(existing, serverId);
    const hid = hetznerId(serverId);
    if (hid === undefined) throw new HetznerError(404, 'not_found', `Hetzner Cloud has no server ${serverId}.`);
    const answer = await this.call(credential, (headers) =>
      this.client.POST('/servers/{id}/actions/create_image', {
        params: { path: { id: hid } },
        body: { type: 'snapshot', labels: hetznerLabels(labels), description: `snapshot of server ${serverId}` },
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

  async deleteSnapshot(id: string, credential?: ProviderCredential): Promise<void> {
    const hid = hetznerId(id);
    if (hid === undefined) return;
    const answer = await this.call(credential, (headers) => this.client.DELETE('/images/{id}', { params: { path: { id: hid } }, headers }));
    HetznerCompute.data(answer, `delete snapshot ${id}`, { notFound: true });
  }
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
    location: server.location?.name ?? server.datacenter.location.name,
    labels: server.labels,
    from_snapshot: image?.type === 'snapshot',
  };
}

function toSnapshot(image: HetznerImage, serverId?: string): Snapshot {
  return {
    id: String(image.id),
    server_id: image.created_from ? String(image.created_from.id) : (serverId ?? ''),
    status: image.status === 'available' ? 'available' : image.status === 'creating' ? 'creating' : 'failed',
    labels: image.labels,
  };
}
