// A stateful fake of the Hetzner Cloud API for the driver's tests: servers, images (snapshots), actions and
// labels in memory, per project token, with Hetzner's RateLimit-* headers and injectable 429s, revoked tokens
// and failures. Every request body and every answer is validated with Ajv against the committed extract of
// Hetzner's published description (the same one the driver's types come from); a violation is recorded in
// `violations`, which the tests assert empty, so the fake cannot drift from Hetzner.
//
// Its behaviour follows Hetzner, each rule naming where: errors carry Hetzner's `error.code` with the HTTP status
// Hetzner's reference gives it (ERROR_STATUS); an Action-starting request on a server that already has an Action
// running is 423 `locked` (the reference's error table: "there is already an Action running"); a server passes
// through `initializing` (its create_server Action running) and `starting` before `running` (the server schema's
// status enum); a snapshot is `creating` until its create_image Action ends, then `available`, or `unavailable`
// when the Action fails (the image schema's status enum); a server is created only with SSH keys the project has
// (POST /servers: `ssh_keys`, "SSH key IDs or names which should be injected into the Server") and firewalls that
// exist; a firewall's name is unique in its project, and its rules follow the rule schema (`port` only for tcp and
// udp, and then required; `source_ips` for an `in` rule); a firewall still applied to a server cannot be deleted
// (DELETE /firewalls/{id}: 422 `resource_in_use`, "Firewall still applied to a resource"), and a server takes its
// firewalls with it when it is deleted (the firewall's `applied_to` lists only servers that exist). A server has a
// `location` and no `datacenter` (removed 2026-07-01: hcloud-go hcloud/schema/server.go, CHANGELOG v2.45.0); server
// types are sold per location (SERVER_TYPES, and the rules of `server` below).
//
// Actions take time as Hetzner's do: `running` with a `progress` that grows, for seconds by default (a server's
// create_server takes tens of seconds at Hetzner; hcloud-go's hcloud/action_waiter.go polls them, every 500 ms by
// default in hcloud/client.go), then `success` or `error`. A test that needs speed sets `actionMs` lower; at least
// one test keeps the default. POST /servers/{id}/actions/poweron (`start_server`) turns an `off` server `starting`,
// then `running`.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { components } from '../../src/providers/hetzner/contract/schema.d.ts';

type S = components['schemas'];
type HServer = S['server'];
type HImage = S['image'];
type HAction = S['action'];
type HFirewall = S['firewall'];
type HLoadBalancer = S['load_balancer'];

export const extractPath = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'providers', 'hetzner', 'contract', 'openapi.json');
const document = JSON.parse(readFileSync(extractPath, 'utf8')) as { paths: Record<string, Record<string, any>> };

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
for (const format of ['int32', 'int64', 'double', 'decimal']) ajv.addFormat(format, true);
ajv.addSchema(jsonSchemaOf(document) as object, 'hetzner');

/**
 * OpenAPI 3.0's `nullable: true` beside `allOf` (no `type`) means "this, or null", which Ajv's `nullable`
 * keyword refuses; rewritten as `anyOf: [this, null]`, the only change made to the extract for Ajv.
 */
function jsonSchemaOf(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonSchemaOf);
  if (node === null || typeof node !== 'object') return node;
  const entries = Object.entries(node as Record<string, unknown>).map(([key, value]) => [key, jsonSchemaOf(value)] as const);
  const schema = Object.fromEntries(entries) as Record<string, unknown>;
  if (schema.nullable === true && schema.type === undefined) {
    const { nullable: _nullable, ...rest } = schema;
    return { anyOf: [rest, { type: 'null' }] };
  }
  return schema;
}
const pointer = (...parts: string[]) => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
const validators = new Map<string, ValidateFunction | undefined>();
function validatorAt(...parts: string[]): ValidateFunction | undefined {
  const ref = `hetzner#/${pointer(...parts)}`;
  if (!validators.has(ref)) validators.set(ref, ajv.getSchema(ref));
  return validators.get(ref);
}

const LOCATIONS: S['location'][] = [
  {
    id: 1,
    name: 'fsn1',
    city: 'Falkenstein',
    country: 'DE',
    description: 'Falkenstein DC Park 1',
    latitude: 50.47612,
    longitude: 12.370071,
    network_zone: 'eu-central',
  },
  {
    id: 2,
    name: 'nbg1',
    city: 'Nuremberg',
    country: 'DE',
    description: 'Nuremberg DC Park 1',
    latitude: 49.452102,
    longitude: 11.076665,
    network_zone: 'eu-central',
  },
  {
    id: 3,
    name: 'hel1',
    city: 'Helsinki',
    country: 'FI',
    description: 'Helsinki DC Park 1',
    latitude: 60.169855,
    longitude: 24.938379,
    network_zone: 'eu-central',
  },
];
const price = (net: string): S['price'] => ({ net, gross: net });
/** A deprecation announced a year ago, effective `days` from now (past when negative). */
const deprecation = (days: number): S['deprecation_info'] => ({
  announced: new Date(Date.now() - 365 * 86_400_000).toISOString(),
  unavailable_after: new Date(Date.now() + days * 86_400_000).toISOString(),
});
/** How a type is sold in one location: not at all (absent), `available` or not, deprecated or not. */
type Sale = { available?: boolean; deprecation?: S['deprecation_info'] };
/**
 * A server type is sold per location (hcloud-go hcloud/schema/server_type.go `ServerTypeLocation`: `available`,
 * `recommended`, `deprecation`; CHANGELOG v2.25.0 and v2.38.0): listed only where it is sold, every location unless
 * `sales` says otherwise. Its top-level `deprecated` is the old flag, true only where every location deprecates it.
 */
const serverType = (id: number, name: string, cores: number, memory: number, sales: Record<string, Sale | null> = {}): S['server_type'] => {
  const locations = LOCATIONS.filter((l) => sales[l.name] !== null).map((l) => ({
    id: l.id,
    name: l.name,
    available: sales[l.name]?.available ?? true,
    recommended: sales[l.name] === undefined,
    deprecation: sales[l.name]?.deprecation ?? null,
  }));
  return {
    id,
    name,
    cores,
    memory,
    disk: 40,
    deprecated: locations.every((l) => l.deprecation !== null),
    description: name.toUpperCase(),
    architecture: name.startsWith('cax') ? 'arm' : 'x86',
    cpu_type: name.startsWith('ccx') ? 'dedicated' : 'shared',
    storage_type: 'local',
    category: 'regular_purpose',
    locations,
    prices: locations.map((l) => ({
      location: l.name,
      included_traffic: 21990232555520,
      price_hourly: price('0.0060'),
      price_monthly: price('3.79'),
      price_per_tb_traffic: price('1.00'),
    })),
  };
};
const retired = { deprecation: deprecation(-30) };
/**
 * More than one page (per_page 50 → two pages at 60), so pagination is exercised. cx11 is retired everywhere;
 * cpx31 is deprecated in nbg1 (still created there until its date); cax41 is not sold in nbg1 at all and is sold
 * out in hel1.
 */
export const SERVER_TYPES: S['server_type'][] = [
  serverType(1, 'cx11', 1, 2, { fsn1: retired, nbg1: retired, hel1: retired }),
  serverType(2, 'cx22', 2, 4),
  serverType(3, 'cpx31', 4, 8, { nbg1: { deprecation: deprecation(90) } }),
  serverType(4, 'cax41', 16, 32, { nbg1: null, hel1: { available: false } }),
  ...Array.from({ length: 56 }, (_, i) => serverType(100 + i, `ccx${100 + i}`, 8, 32 + i)),
];
const SYSTEM_IMAGES = ['ubuntu-24.04', 'debian-12'];

/**
 * The HTTP status Hetzner answers each error code with (the API reference's "Errors" table; the codes are
 * hcloud-go's hcloud/error.go). The driver reads the code, so a status here only has to be Hetzner's.
 */
export const ERROR_STATUS: Readonly<Record<string, number>> = {
  unauthorized: 401,
  token_readonly: 401,
  forbidden: 403,
  resource_limit_exceeded: 403,
  maintenance: 403,
  invalid_input: 400,
  json_error: 400,
  not_found: 404,
  uniqueness_error: 409,
  conflict: 409,
  resource_in_use: 422,
  resource_unavailable: 412,
  placement_error: 412,
  locked: 423,
  protected: 423,
  // hcloud-go's CHANGELOG (v2.44.0): a removed endpoint answers "HTTP 410 Gone".
  deprecated_api_endpoint: 410,
  rate_limit_exceeded: 429,
  server_error: 500,
  unavailable: 503,
  timeout: 504,
};

interface Project {
  servers: Map<number, HServer>;
  images: Map<number, HImage>;
  actions: Map<number, HAction & { finishAt: number; effect?: () => void; onFail?: () => void; fail?: { code: string; message: string } }>;
  /** When each `starting` server is `running` (Unix ms). */
  runningAt: Map<number, number>;
  firewalls: Map<number, HFirewall>;
  /** The project's SSH keys: id → name. */
  sshKeys: Map<number, string>;
  loadBalancers: Map<number, HLoadBalancer>;
}

/** Hetzner's bucket: `limit` requests, refilled at limit per hour (one a second at the default 3600). */
interface Bucket {
  limit: number;
  tokens: number;
  updatedMs: number;
  /** Spent right before the next request arrives (exhaust), whenever that is. */
  spentBeforeNext?: boolean;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  query: string;
  authorization: string | undefined;
  body: unknown;
  status: number;
  /** When the request arrived (Unix ms). */
  at: number;
}

export interface HetznerFake {
  url: string;
  /** Every request, in order, with the Authorization header it carried and the status it got. */
  requests: ReceivedRequest[];
  /** Request bodies and answers the extract's schemas refuse (must stay empty). */
  violations: string[];
  /** A token the fake accepts, its own project, with its hourly limit (default `requestsPerHour`). */
  addToken(token: string, perHour?: number): void;
  /** The token's project now answers 401 (a revoked token). */
  revoke(token: string): void;
  /**
   * Spends the token's bucket, as another client of the token would right before the next request: that request
   * gets 429, whenever it comes and however fast the bucket refills, and the next ones until it refilled one.
   */
  exhaust(token: string): void;
  /** The next Action of this command (create_server, shutdown_server, …) ends in error. */
  failNextAction(command: string, code?: string): void;
  /** The next request to `method route` (e.g. `post /servers`) is answered with Hetzner's error `code`. */
  refuseNext(methodRoute: string, code: string, message?: string): void;
  /**
   * Another client starts an Action on the server that runs `ms`: meanwhile Action requests on it are 423 `locked`.
   * The function returned ends that Action now (a test that counts time on its own clock ends it there).
   */
  occupy(token: string, serverId: number, ms: number): () => void;
  /** Milliseconds an Action runs before it succeeds (default ACTION_MS, seconds as at Hetzner). */
  actionMs: number;
  /** Milliseconds a server stays `starting` after its create_server or poweron Action before it is `running` (default STARTING_MS). */
  startingMs: number;
  /** Whether a graceful shutdown turns the server off (false: it ignores ACPI, the driver must power off). */
  honourShutdown: boolean;
  servers(token: string): HServer[];
  images(token: string): HImage[];
  firewalls(token: string): HFirewall[];
  loadBalancers(token: string): HLoadBalancer[];
  /**
   * A load balancer made in the token's project as POST /load_balancers makes it (a lb11 with a public IPv4 and IPv6
   * address, round robin, the `targets` servers), for a test's cloud controller manager; returns it.
   */
  createLoadBalancer(token: string, request: { name: string; labels: Record<string, string>; location: string; serverIds: number[] }): HLoadBalancer;
  /** Adds an SSH key to the token's project; returns its id. */
  addSshKey(token: string, name: string): number;
  /** Called with the project's servers as they are when a server creation arrives (before it is made). */
  onCreate: ((token: string, servers: HServer[]) => void) | undefined;
  /** Changes a live server behind the driver's back (drift). */
  mutateServer(token: string, id: number, change: (server: HServer) => void): void;
  close(): Promise<void>;
}

/** How long an Action runs by default (ms): seconds, as Hetzner's do. */
export const ACTION_MS = 3000;
/** How long a server is `starting` by default (ms) once its create_server or poweron Action ended. */
export const STARTING_MS = 2000;

export async function startHetznerFake(
  options: { tokens?: string[]; requestsPerHour?: number; actionMs?: number; startingMs?: number } = {},
): Promise<HetznerFake> {
  const projects = new Map<string, Project>();
  const revoked = new Set<string>();
  const buckets = new Map<string, Bucket>();
  const failing = new Map<string, string>();
  const refusals = new Map<string, { code: string; message: string }>();
  let nextId = 1000;
  const requests: ReceivedRequest[] = [];
  const violations: string[] = [];
  const perHour = options.requestsPerHour ?? 3600;
  const refill = (bucket: Bucket, nowMs: number) => {
    bucket.tokens = Math.min(bucket.limit, bucket.tokens + ((nowMs - bucket.updatedMs) / 3_600_000) * bucket.limit);
    bucket.updatedMs = nowMs;
  };

  const fake: HetznerFake = {
    url: '',
    requests,
    violations,
    actionMs: options.actionMs ?? ACTION_MS,
    startingMs: options.startingMs ?? STARTING_MS,
    honourShutdown: true,
    onCreate: undefined,
    addToken(token, limit = perHour) {
      projects.set(token, {
        servers: new Map(),
        images: new Map(),
        actions: new Map(),
        runningAt: new Map(),
        firewalls: new Map(),
        sshKeys: new Map(),
        loadBalancers: new Map(),
      });
      buckets.set(token, { limit, tokens: limit, updatedMs: Date.now() });
    },
    revoke(token) {
      revoked.add(token);
    },
    exhaust(token) {
      buckets.get(token)!.spentBeforeNext = true;
    },
    failNextAction(command, code = 'action_failed') {
      failing.set(command, code);
    },
    refuseNext(methodRoute, code, message = `${code} (refused by the fake)`) {
      refusals.set(methodRoute.toLowerCase(), { code, message });
    },
    occupy(token, serverId, ms) {
      const project = projects.get(token)!;
      const action = project.actions.get(startAction(project, 'change_protection', { id: serverId, type: 'server' }).id)!;
      action.finishAt = Date.now() + ms;
      return () => {
        action.finishAt = Math.min(action.finishAt, Date.now());
      };
    },
    servers: (token) => [...(projects.get(token)?.servers.values() ?? [])],
    images: (token) => [...(projects.get(token)?.images.values() ?? [])],
    firewalls: (token) => [...(projects.get(token)?.firewalls.values() ?? [])],
    loadBalancers: (token) => [...(projects.get(token)?.loadBalancers.values() ?? [])],
    createLoadBalancer(token, request) {
      const project = projects.get(token)!;
      const location = LOCATIONS.find((l) => l.name === request.location);
      if (!location) throw new Error(`no location ${request.location}`);
      const id = nextId++;
      const balancer: HLoadBalancer = {
        id,
        name: request.name,
        labels: request.labels,
        created: iso(),
        location,
        load_balancer_type: {
          id: 1,
          name: 'lb11',
          description: 'LB11',
          deprecated: null,
          max_assigned_certificates: 10,
          max_connections: 10000,
          max_services: 5,
          max_targets: 25,
          prices: LOCATIONS.map((l) => ({
            location: l.name,
            included_traffic: 21990232555520,
            price_hourly: price('0.0090'),
            price_monthly: price('5.39'),
            price_per_tb_traffic: price('1.00'),
          })),
        },
        algorithm: { type: 'round_robin' },
        protection: { delete: false },
        public_net: { enabled: true, ipv4: { ip: `198.51.100.${id % 250}`, dns_ptr: null }, ipv6: { ip: `2001:db8::${id.toString(16)}`, dns_ptr: null } },
        private_net: [],
        services: [],
        targets: request.serverIds.map((server) => ({ type: 'server' as const, server: { id: server }, use_private_ip: false })),
        included_traffic: 21990232555520,
        ingoing_traffic: null,
        outgoing_traffic: null,
      };
      project.loadBalancers.set(id, balancer);
      return balancer;
    },
    addSshKey(token, name) {
      const id = nextId++;
      projects.get(token)!.sshKeys.set(id, name);
      return id;
    },
    mutateServer(token, id, change) {
      const project = projects.get(token);
      const server = project?.servers.get(id);
      if (!server) throw new Error(`no server ${id}`);
      change(server);
      // A status the test sets stays until the test changes it: the boot in progress no longer moves it on.
      project!.runningAt.delete(id);
    },
    close: async () => {},
  };
  for (const token of options.tokens ?? []) fake.addToken(token);

  const iso = () => new Date().toISOString();

  /** Runs every finished Action's effect (Hetzner's state moves on in time, whoever looks). */
  function settle(project: Project): void {
    const now = Date.now();
    for (const action of project.actions.values()) {
      if (action.status !== 'running') continue;
      if (action.finishAt > now) {
        const total = action.finishAt - Date.parse(action.started);
        action.progress = total > 0 ? Math.min(99, Math.floor((100 * (now - Date.parse(action.started))) / total)) : 0;
        continue;
      }
      action.progress = 100;
      action.finished = iso();
      if (action.fail) {
        action.status = 'error';
        action.error = action.fail;
        action.onFail?.();
      } else {
        action.status = 'success';
        action.effect?.();
      }
    }
    for (const [id, at] of project.runningAt) {
      if (at > now) continue;
      project.runningAt.delete(id);
      const found = project.servers.get(id);
      if (found?.status === 'starting') found.status = 'running';
    }
  }

  /** Hetzner refuses to start an Action on a server that has one running: 423 `locked`. */
  function locked(project: Project, serverId: number): boolean {
    return [...project.actions.values()].some((a) => a.status === 'running' && a.resources.some((r) => r.type === 'server' && r.id === serverId));
  }

  function startAction(project: Project, command: string, resource: { id: number; type: string }, effect?: () => void, onFail?: () => void): HAction {
    const code = failing.get(command);
    failing.delete(command);
    const action = {
      id: nextId++,
      command,
      status: 'running' as const,
      progress: 0,
      started: iso(),
      finished: null,
      error: null,
      resources: [resource],
      finishAt: Date.now() + fake.actionMs,
      effect,
      onFail,
      ...(code ? { fail: { code, message: `${command} failed` } } : {}),
    };
    project.actions.set(action.id, action);
    return publicAction(action);
  }
  const publicAction = ({
    finishAt: _f,
    effect: _e,
    onFail: _o,
    fail: _x,
    ...action
  }: Project['actions'] extends Map<number, infer A> ? A : never): HAction => ({
    ...action,
  });

  function image(id: number, name: string | null, type: HImage['type'], labels: Record<string, string>, createdFrom: HServer | null): HImage {
    return {
      id,
      name,
      type,
      labels,
      status: type === 'snapshot' ? 'creating' : 'available',
      architecture: 'x86',
      bound_to: null,
      created: iso(),
      created_from: createdFrom ? { id: createdFrom.id, name: createdFrom.name } : null,
      deleted: null,
      deprecated: null,
      description: name ?? `snapshot of ${createdFrom?.name}`,
      disk_size: 40,
      image_size: type === 'snapshot' ? 2.3 : null,
      os_flavor: 'ubuntu',
      os_version: '24.04',
      protection: { delete: false },
      rapid_deploy: type !== 'snapshot',
    };
  }

  const validHostname = (name: string) => name.length <= 253 && name.split('.').every((label) => /^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/.test(label));

  function server(project: Project, body: S['create_server_request']): HServer | { code: string; message: string } | string {
    const location = LOCATIONS.find((l) => l.name === body.location);
    const type = SERVER_TYPES.find((t) => t.name === body.server_type);
    if (!location || !type) return 'invalid_input';
    // Sold per location (hcloud-go hcloud/schema/server_type.go): a type not listed for the location is refused as
    // input (CHANGELOG v2.25.0: "not supported in location"; the API's words below), one listed but not `available`
    // (CHANGELOG v2.38.0) as unavailable (error.go: resource_unavailable, "Resource currently unavailable"), one past
    // its `unavailable_after` (hcloud/deprecation.go: "removed from the API") as an invalid server type (error.go:
    // invalid_server_type, "is deprecated").
    const sale = type.locations.find((l) => l.name === location.name);
    if (!sale) return { code: 'invalid_input', message: 'unsupported location for server type' };
    if (!sale.available) return { code: 'resource_unavailable', message: 'server type unavailable in this location' };
    if (sale.deprecation && Date.parse(sale.deprecation.unavailable_after) <= Date.now())
      return { code: 'invalid_server_type', message: 'server type is deprecated in this location' };
    // "Server names must be unique per Project and valid hostnames as per RFC 1123 (i.e. may only contain letters,
    // digits, periods, and dashes)" (the API's create_server description); RFC 1123 §2.1 keeps RFC 1035's labels of
    // at most 63 characters that neither start nor end with a dash.
    if (!validHostname(body.name)) return { code: 'invalid_input', message: `invalid input in field 'name'` };
    const snapshot = /^[0-9]+$/.test(body.image) ? project.images.get(Number(body.image)) : undefined;
    if (/^[0-9]+$/.test(body.image) && !snapshot) return 'not_found';
    if (!snapshot && !SYSTEM_IMAGES.includes(body.image)) return 'not_found';
    if ([...project.servers.values()].some((s) => s.name === body.name)) return 'uniqueness_error';
    const keys = [...project.sshKeys];
    if ((body.ssh_keys ?? []).some((key) => !keys.some(([id, name]) => name === key || String(id) === key))) return 'invalid_input';
    const firewalls = (body.firewalls ?? []).map((f) => project.firewalls.get(f.firewall));
    if (firewalls.some((f) => f === undefined)) return 'not_found';
    const id = nextId++;
    return {
      id,
      name: body.name,
      status: 'initializing',
      created: iso(),
      labels: body.labels ?? {},
      locked: false,
      server_type: type,
      location,
      image: snapshot ?? image(1, body.image, 'system', {}, null),
      backup_window: null,
      included_traffic: 21990232555520,
      ingoing_traffic: 0,
      outgoing_traffic: 0,
      iso: null,
      primary_disk_size: 40,
      private_net: [],
      load_balancers: [],
      volumes: [],
      placement_group: null,
      rescue_enabled: false,
      protection: { delete: false, rebuild: false },
      public_net: {
        ipv4: { id: id + 1, ip: `203.0.113.${id % 250}`, blocked: false, dns_ptr: `static.${id}.example` },
        ipv6: null,
        floating_ips: [],
        firewalls: firewalls.map((f) => ({ id: f!.id, status: 'applied' as const })),
      },
    };
  }

  /** The servers a firewall is applied to: those created with it that still exist (a deleting one still has it). */
  const appliedTo = (project: Project, firewallId: number): HFirewall['applied_to'] =>
    [...project.servers.values()]
      .filter((s) => s.public_net.firewalls?.some((f) => f.id === firewallId))
      .map((s) => ({ type: 'server' as const, server: { id: s.id } }));

  /** A rule as Hetzner answers it: every field present (the firewall schema requires them), null or empty when unset. */
  const stored = (rules: S['rule'][]): HFirewall['rules'] =>
    rules.map((r) => ({
      direction: r.direction,
      protocol: r.protocol,
      port: r.port ?? null,
      source_ips: r.source_ips ?? [],
      destination_ips: r.destination_ips ?? [],
      description: r.description ?? null,
    }));

  /** The rule schema's constraints Hetzner enforces: `port` for tcp and udp only (and required there), sources for `in`. */
  function badRule(rules: S['rule'][]): string | undefined {
    for (const rule of rules) {
      const ported = rule.protocol === 'tcp' || rule.protocol === 'udp';
      if (ported !== (rule.port !== undefined && rule.port !== null)) return `port is ${ported ? 'required' : 'not allowed'} for protocol ${rule.protocol}`;
      if (rule.direction === 'in' && (rule.source_ips ?? []).length === 0) return 'source_ips is required for an in rule';
    }
    return undefined;
  }

  /** Hetzner's label selector terms, comma-separated (the API reference's "Label Selector"): `k==v`, `k=v`, `k!=v`, `k` (has it), `!k`. */
  function matches(labels: Record<string, string>, selector: string | null): boolean {
    if (!selector) return true;
    return selector.split(',').every((term) => {
      const unequal = /^([^!=]+)!=(.*)$/.exec(term);
      if (unequal) return labels[unequal[1]!] !== unequal[2];
      if (term.startsWith('!')) return !(term.slice(1) in labels);
      if (!term.includes('=')) return term in labels;
      const [key, value] = term.split(/==?/);
      return labels[key!] === value;
    });
  }

  function page<T>(items: T[], query: URLSearchParams): { items: T[]; meta: S['meta'] } {
    const perPage = Number(query.get('per_page') ?? 25);
    const current = Number(query.get('page') ?? 1);
    const last = Math.max(1, Math.ceil(items.length / perPage));
    return {
      items: items.slice((current - 1) * perPage, current * perPage),
      meta: {
        pagination: {
          page: current,
          per_page: perPage,
          previous_page: current > 1 ? current - 1 : null,
          next_page: current < last ? current + 1 : null,
          last_page: last,
          total_entries: items.length,
        },
      },
    };
  }

  const error = (status: number, code: string, message: string) => ({ status, body: { error: { code, message } } });

  function handle(
    method: string,
    route: string,
    id: number | undefined,
    query: URLSearchParams,
    body: any,
    project: Project,
    token: string,
  ): { status: number; body?: unknown } {
    const key = `${method} ${route}`;
    switch (key) {
      case 'get /servers': {
        const list = [...project.servers.values()].filter((s) => matches(s.labels, query.get('label_selector')));
        const { items, meta } = page(list, query);
        return { status: 200, body: { servers: items, meta } };
      }
      case 'post /servers': {
        fake.onCreate?.(token, [...project.servers.values()]);
        const created = server(project, body);
        if (typeof created === 'string') return error(ERROR_STATUS[created]!, created, `server ${body.name} could not be created: ${created}`);
        if ('code' in created) return error(ERROR_STATUS[created.code] ?? 400, created.code, created.message);
        project.servers.set(created.id, created);
        const action = startAction(project, 'create_server', { id: created.id, type: 'server' }, () => {
          created.status = 'starting';
          project.runningAt.set(created.id, Date.now() + fake.startingMs);
        });
        return { status: 201, body: { server: created, action, next_actions: [], root_password: null } };
      }
      case 'get /servers/{id}': {
        const found = project.servers.get(id!);
        return found ? { status: 200, body: { server: found } } : error(404, 'not_found', `server ${id} not found`);
      }
      case 'delete /servers/{id}': {
        const found = project.servers.get(id!);
        if (!found) return error(404, 'not_found', `server ${id} not found`);
        // The server's `protection.delete` refuses its deletion until lifted (hcloud-go hcloud/error.go: protected).
        if (found.protection.delete) return error(423, 'protected', `server ${id} has delete protection enabled`);
        if (locked(project, found.id)) return error(423, 'locked', `server ${id} is locked: an action is running`);
        found.status = 'deleting';
        // A deleted server leaves the load balancers that targeted it (a server target exists only for a server).
        const action = startAction(project, 'delete_server', { id: found.id, type: 'server' }, () => {
          project.servers.delete(found.id);
          for (const balancer of project.loadBalancers.values()) balancer.targets = balancer.targets.filter((t) => t.server?.id !== found.id);
        });
        return { status: 200, body: { action } };
      }
      case 'post /servers/{id}/actions/shutdown':
      case 'post /servers/{id}/actions/poweroff': {
        const found = project.servers.get(id!);
        if (!found) return error(404, 'not_found', `server ${id} not found`);
        if (locked(project, found.id)) return error(423, 'locked', `server ${id} is locked: an action is running`);
        const graceful = route.endsWith('shutdown');
        if (!graceful || fake.honourShutdown) found.status = 'stopping';
        const action = startAction(project, graceful ? 'shutdown_server' : 'stop_server', { id: found.id, type: 'server' }, () => {
          if (!graceful || fake.honourShutdown) found.status = 'off';
        });
        return { status: 201, body: { action } };
      }
      case 'post /servers/{id}/actions/poweron': {
        const found = project.servers.get(id!);
        if (!found) return error(404, 'not_found', `server ${id} not found`);
        if (locked(project, found.id)) return error(423, 'locked', `server ${id} is locked: an action is running`);
        const action = startAction(project, 'start_server', { id: found.id, type: 'server' }, () => {
          if (found.status !== 'off') return;
          found.status = 'starting';
          project.runningAt.set(found.id, Date.now() + fake.startingMs);
        });
        return { status: 201, body: { action } };
      }
      case 'post /servers/{id}/actions/create_image': {
        const found = project.servers.get(id!);
        if (!found) return error(404, 'not_found', `server ${id} not found`);
        if (locked(project, found.id)) return error(423, 'locked', `server ${id} is locked: an action is running`);
        const snapshot = image(nextId++, null, body?.type ?? 'snapshot', body?.labels ?? {}, found);
        if (body?.description) snapshot.description = body.description;
        project.images.set(snapshot.id, snapshot);
        const action = startAction(
          project,
          'create_image',
          { id: found.id, type: 'server' },
          () => {
            snapshot.status = 'available';
          },
          () => {
            snapshot.status = 'unavailable';
          },
        );
        return { status: 201, body: { image: snapshot, action } };
      }
      case 'get /images': {
        const types = query.getAll('type');
        const list = [...project.images.values()].filter(
          (i) => (types.length === 0 || types.includes(i.type)) && matches(i.labels, query.get('label_selector')),
        );
        const { items, meta } = page(list, query);
        return { status: 200, body: { images: items, meta } };
      }
      case 'get /images/{id}': {
        const found = project.images.get(id!);
        return found ? { status: 200, body: { image: found } } : error(404, 'not_found', `image ${id} not found`);
      }
      case 'delete /images/{id}': {
        if (!project.images.delete(id!)) return error(404, 'not_found', `image ${id} not found`);
        return { status: 204 };
      }
      case 'get /firewalls': {
        const name = query.get('name');
        const list = [...project.firewalls.values()]
          .filter((f) => (!name || f.name === name) && matches(f.labels ?? {}, query.get('label_selector')))
          .map((f) => ({ ...f, applied_to: appliedTo(project, f.id) }));
        const { items, meta } = page(list, query);
        return { status: 200, body: { firewalls: items, meta } };
      }
      case 'post /firewalls': {
        if ([...project.firewalls.values()].some((f) => f.name === body.name))
          return error(409, 'uniqueness_error', `firewall name ${body.name} is already used`);
        const invalid = badRule(body.rules ?? []);
        if (invalid) return error(400, 'invalid_input', invalid);
        const firewall: HFirewall = {
          id: nextId++,
          name: body.name,
          labels: body.labels ?? {},
          rules: stored(body.rules ?? []),
          applied_to: [],
          created: iso(),
        };
        project.firewalls.set(firewall.id, firewall);
        return { status: 201, body: { firewall, actions: [] } };
      }
      case 'post /firewalls/{id}/actions/set_rules': {
        const found = project.firewalls.get(id!);
        if (!found) return error(404, 'not_found', `firewall ${id} not found`);
        const invalid = badRule(body.rules ?? []);
        if (invalid) return error(400, 'invalid_input', invalid);
        const action = startAction(project, 'set_firewall_rules', { id: found.id, type: 'firewall' }, () => {
          found.rules = stored(body.rules);
        });
        return { status: 201, body: { actions: [action] } };
      }
      case 'delete /firewalls/{id}': {
        if (!project.firewalls.has(id!)) return error(404, 'not_found', `firewall ${id} not found`);
        // The reference's operation-specific error of DELETE /firewalls/{id}.
        if (appliedTo(project, id!).length > 0) return error(422, 'resource_in_use', 'Firewall still applied to a resource');
        project.firewalls.delete(id!);
        return { status: 204 };
      }
      case 'get /load_balancers': {
        const list = [...project.loadBalancers.values()].filter((b) => matches(b.labels, query.get('label_selector')));
        const { items, meta } = page(list, query);
        return { status: 200, body: { load_balancers: items, meta } };
      }
      case 'put /load_balancers/{id}': {
        const found = project.loadBalancers.get(id!);
        if (!found) return error(404, 'not_found', `load balancer ${id} not found`);
        if (body?.name !== undefined) found.name = body.name;
        if (body?.labels !== undefined) found.labels = body.labels;
        return { status: 200, body: { load_balancer: found } };
      }
      case 'delete /load_balancers/{id}': {
        if (!project.loadBalancers.delete(id!)) return error(404, 'not_found', `load balancer ${id} not found`);
        return { status: 204 };
      }
      case 'get /actions/{id}': {
        const found = project.actions.get(id!);
        return found ? { status: 200, body: { action: publicAction(found) } } : error(404, 'not_found', `action ${id} not found`);
      }
      case 'get /server_types': {
        const { items, meta } = page(SERVER_TYPES, query);
        return { status: 200, body: { server_types: items, meta } };
      }
      case 'get /locations': {
        const { items, meta } = page(LOCATIONS, query);
        return { status: 200, body: { locations: items, meta } };
      }
      default:
        return error(404, 'not_found', `${method.toUpperCase()} ${route} is not part of the fake`);
    }
  }

  function respond(res: ServerResponse, method: string, route: string, token: string | undefined, result: { status: number; body?: unknown }): void {
    const operation = document.paths[route]?.[method];
    if (operation && result.body !== undefined) {
      const status = String(result.status);
      const responseKey = operation.responses[status] ? status : `${status[0]}xx`;
      const validate = validatorAt('paths', route, method, 'responses', responseKey, 'content', 'application/json', 'schema');
      if (!validate) violations.push(`${method.toUpperCase()} ${route} ${status}: the extract has no schema for this answer`);
      else if (!validate(result.body)) violations.push(`${method.toUpperCase()} ${route} ${status}: ${ajv.errorsText(validate.errors)}`);
    }
    const bucket = token ? buckets.get(token) : undefined;
    if (bucket) {
      // Reset: the Unix second at which the bucket is full again.
      const fullInMs = ((bucket.limit - bucket.tokens) / bucket.limit) * 3_600_000;
      res.setHeader('RateLimit-Limit', String(bucket.limit));
      res.setHeader('RateLimit-Remaining', String(Math.floor(bucket.tokens)));
      res.setHeader('RateLimit-Reset', String(Math.ceil((bucket.updatedMs + fullInMs) / 1000)));
    }
    res.statusCode = result.status;
    if (result.body === undefined) {
      res.end();
      return;
    }
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(result.body));
  }

  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    serve(req, res).catch((thrown: unknown) => {
      violations.push(`the fake failed on ${req.method} ${req.url}: ${thrown instanceof Error ? thrown.message : String(thrown)}`);
      if (!res.headersSent) res.statusCode = 500;
      res.end();
    });
  });
  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://fake');
    const method = (req.method ?? 'GET').toLowerCase();
    const path = url.pathname.replace(/^\/v1/, '');
    const idMatch = /^\/(servers|images|actions|firewalls|load_balancers)\/([0-9]+)(\/.*)?$/.exec(path);
    const route = idMatch ? `/${idMatch[1]}/{id}${idMatch[3] ?? ''}` : path;
    const id = idMatch ? Number(idMatch[2]) : undefined;
    const authorization = req.headers.authorization;
    let body: unknown;
    const at = Date.now();
    const record = (status: number) => requests.push({ method: method.toUpperCase(), path, query: url.search, authorization, body, status, at });
    const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined;
    const project = token ? projects.get(token) : undefined;
    if (!token || !project || revoked.has(token)) {
      record(401);
      respond(res, method, route, undefined, error(401, 'unauthorized', 'unable to authenticate'));
      return;
    }
    const bucket = buckets.get(token)!;
    if (bucket.spentBeforeNext) {
      bucket.spentBeforeNext = false;
      bucket.tokens = 0;
      bucket.updatedMs = Date.now();
    }
    refill(bucket, Date.now());
    if (bucket.tokens < 1) {
      record(429);
      respond(res, method, route, token, error(429, 'rate_limit_exceeded', 'limit of requests per hour reached'));
      return;
    }
    bucket.tokens -= 1;
    if (chunks.length > 0) {
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        record(400);
        respond(res, method, route, token, error(400, 'json_error', 'invalid JSON'));
        return;
      }
      const validate = validatorAt('paths', route, method, 'requestBody', 'content', 'application/json', 'schema');
      if (validate && !validate(body)) violations.push(`${method.toUpperCase()} ${route} request: ${ajv.errorsText(validate.errors)}`);
    }
    settle(project);
    const refusal = refusals.get(`${method} ${route}`);
    if (refusal) {
      refusals.delete(`${method} ${route}`);
      record(ERROR_STATUS[refusal.code] ?? 400);
      respond(res, method, route, token, error(ERROR_STATUS[refusal.code] ?? 400, refusal.code, refusal.message));
      return;
    }
    const result = handle(method, route, id, url.searchParams, body, project, token);
    record(result.status);
    respond(res, method, route, token, result);
  }
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`;
  fake.close = () => new Promise<void>((resolve) => http.close(() => resolve()));
  return fake;
}
