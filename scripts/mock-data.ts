// What `pnpm mock` does to Prism's dynamic answers (`Prefer: dynamic=true`), which json-schema-faker fills field by
// field: each value valid on its own, the record as a whole not, and a string without a pattern or hint is lorem
// ipsum. What a front end would trip over is mended here, by field name, rather than with `x-faker` hints on every
// schema of the contract, which would describe the faker instead of the API:
//   - ids (`id`, `*_id`) in the service's formats (`ins_01j…`; regions `fsn1`…), by field and by the path's resource;
//   - moments (`*_at`, `*_until`) in recent years and passed (but an expiry, a next attempt, an end of support or of
//     a cooling, which may be to come), and a record's never before its `created_at`;
//   - a status message that goes with the record's status, as the server writes it (a failed one says why);
//   - names, node names, server types, URLs and cursors that look like the API's; a quota entry that adds up;
//   - a page that says `has_more` holds records (an empty one says no more follows); an error says what one of its
//     status says, with the contract's code for it;
//   - free-text messages (status messages, notification titles and bodies, error messages and suggestions, …) read
//     as the API's would instead of lorem ipsum.
// Examples (`Prefer: example=…`, the default) are served as written.

import { createHash } from 'node:crypto';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isRecord = (value: Json | undefined): value is { [key: string]: Json } => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Free-text fields of the contract, and what each might say. */
const messages: Record<string, string[]> = {
  title: ['Cluster prod-eu is running', 'Install of Web Shop failed', 'Machine prod-eu-worker-2 is ready', 'Managed clusters quota reached'],
  body: [
    'The control plane of prod-eu is ready; add machines to run workloads.',
    'Helm release wordpress failed: image pull back-off. Check the image and roll back or update the install.',
    'The node joined the cluster and serves workloads.',
    'The workspace uses all the managed clusters its plan allows. Delete one or upgrade the plan to create more.',
  ],
  message: ['The cluster does not exist or is not visible to the caller.', 'The request body is not valid: name is too long.', 'The token was revoked.'],
  suggestion: ['List the clusters to find its id.', 'Use at most 63 characters.', 'Sign in again with platform login.'],
  error_description: ['The user has not approved the request yet.', 'The device code expired; start the sign-in again.'],
  last_error: ['The endpoint answered 503 Service Unavailable.', 'The endpoint did not answer within 10 seconds.', 'Connection refused.'],
  disabled_reason: ['The endpoint failed every delivery for 5 days.'],
  description: ['Deploy notifications for the ops channel', 'Billing system', 'Staging receiver'],
  custom_description: ['A WordPress shop with its database.', 'Internal wiki for the support team.'],
  line: ['GET /healthz 200 1.2ms', 'Listening on 0.0.0.0:8080', 'Connected to the database in 35 ms', 'Worker started: 4 threads'],
};

/**
 * A record's `status_message` by its `status`, as the server writes it: a cluster being made says so, a failed
 * cluster or install says why (never null), one running, installing or being removed has nothing to say
 * (resources/clusters.ts, resources/installs.ts).
 */
const STATUS_MESSAGES: Record<string, (string | null)[]> = {
  PROVISIONING: ['Creating control plane'],
  RUNNING: [null],
  ERROR: [
    'The control plane was not Ready within 900 seconds; delete the cluster and create it again.',
    'Kamaji could not create the control plane: the datastore is unreachable.',
  ],
  DELETING: [null],
  pending: [null],
  installing: [null],
  running: [null],
  uninstalling: [null],
  failed: [
    'Helm release wordpress failed: image pull back-off for docker.io/bitnami/wordpress:6.7.',
    'Argo CD could not sync the release: chart version 19.6.1 not found.',
    'Uninstall failed: Release wordpress was not removed within 600 s: DeletionError: namespace is terminating.',
  ],
};

/** Fields whose moment may be to come (an expiry, the end of a cooling, a next attempt, an end of support); all others have passed. */
const FUTURE_MOMENT = /^(expires_at|next_attempt_at|end_of_support_at|.*_until)$/;

// A stable choice for a value, so the same answer always reads the same.
function pick(options: string[], seed: string): string {
  let hash = 0;
  for (const char of seed) hash = (hash * 31 + char.charCodeAt(0)) | 0;
  return options[Math.abs(hash) % options.length] as string;
}

function pickAny<T>(options: T[], seed: string): T {
  return options[hashOf(seed) % options.length] as T;
}

/** The id prefix of each `*_id` field, and of a record's own `id` under each resource of a path or field. */
const ID_PREFIX: Record<string, string> = {
  workspace_id: 'ws',
  cluster_id: 'cl',
  product_id: 'prd',
  install_id: 'ins',
  compute_config_id: 'cc',
  cloud_credential_id: 'ccr',
  user_id: 'usr',
  owner_id: 'usr',
  actor_id: 'usr',
  invited_by: 'usr',
  template_id: 'tpl',
  workflow_id: 'wf',
  endpoint_id: 'whe',
  event_id: 'evt',
  template_helm_source_id: 'src',
  token_id: 'tok',
  delivery_id: 'whd',
  notification_id: 'ntf',
  suspension_id: 'sus',
  // A record's own id, by the resource it is listed under (the path's last resource, or the field holding it).
  workspaces: 'ws',
  invitations: 'inv',
  clusters: 'cl',
  configs: 'cc',
  cloud_credentials: 'ccr',
  suspensions: 'sus',
  credentials: 'rc',
  products: 'prd',
  sources: 'src',
  installs: 'ins',
  revisions: 'rev',
  notifications: 'ntf',
  events: 'evt',
  audit_events: 'aud',
  webhook_endpoints: 'whe',
  deliveries: 'whd',
  tokens: 'tok',
  sessions: 'ss',
};
const REGIONS = ['fsn1', 'nbg1', 'hel1', 'ash', 'hil', 'sin'];
const NAMES = ['prod-eu', 'staging-us', 'Web shop', 'ci-deploy', 'data-main', 'Support wiki', 'edge-asia', 'billing'];
const SERVER_TYPES = ['cx22', 'cx32', 'cpx21', 'cax11'];
const ULID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** From 2024-01-01 (Unix seconds) to an hour before now: "recent years", as the README promises, and passed. */
const RECENT_FROM = 1_704_067_200;
const recentSpan = () => Math.floor(Date.now() / 1000) - 3600 - RECENT_FROM;
const QUOTAS: Record<string, { type: string; unit: string; displayName: string; limit: number }> = {
  'kaas/clusters': { type: 'allocation', unit: 'count', displayName: 'Managed clusters', limit: 3 },
  'compute/machines': { type: 'allocation', unit: 'count', displayName: 'Compute machines', limit: 3 },
  'compute/cpu': { type: 'allocation', unit: 'cores', displayName: 'CPU cores', limit: 8 },
  'compute/memory': { type: 'allocation', unit: 'bytes', displayName: 'Memory', limit: 17_179_869_184 },
  'compute/provisioning': { type: 'concurrency', unit: 'count', displayName: 'Simultaneous provisions', limit: 3 },
};

function hashOf(seed: string): number {
  let hash = 7;
  for (const char of seed) hash = (hash * 31 + char.charCodeAt(0)) | 0;
  return Math.abs(hash);
}

/** `01j` and 23 characters of the ids' alphabet, drawn from the seed: a stable, well-formed id body. */
function idBody(seed: string): string {
  const bytes = createHash('sha256').update(seed).digest();
  let out = '01j';
  for (let i = 0; out.length < 26; i++) out += ULID_ALPHABET[bytes[i]! % ULID_ALPHABET.length];
  return out;
}

// json-schema-faker's filler words (its LIPSUM_WORDS), which it also cuts short to fit a maxLength.
const LIPSUM = (
  'lorem ipsum dolor sit amet consectetur adipisicing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua ' +
  'enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure in ' +
  'reprehenderit voluptate velit esse cillum eu fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui ' +
  'officia deserunt mollit anim id est laborum'
).split(' ');
/** Whether a text is only filler words (or their beginnings). */
function isFiller(text: string): boolean {
  const words = text
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter(Boolean);
  return words.length > 0 && words.every((word) => LIPSUM.some((filler) => filler.startsWith(word)));
}

const looksLikeId = (value: string, prefix: string) => new RegExp(`^${prefix}_01j[0-9a-z]{23}$`).test(value);

/** The id prefix of an event's object, by its `object_type`. */
const OBJECT_PREFIX: Record<string, string> = {
  cluster: 'cl',
  suspension: 'sus',
  install: 'ins',
  product: 'prd',
  token: 'tok',
  webhook_endpoint: 'whe',
};

/** One field by its name: what json-schema-faker made of it, as the API would have it. */
function mendField(key: string, field: Json, resource: string | undefined): Json {
  if (typeof field === 'string') {
    if (key === 'request_id' && !/^req_[0-9a-f]{32}$/.test(field)) return `req_${createHash('sha256').update(field).digest('hex').slice(0, 32)}`;
    // A provider's snapshot (an image id at Hetzner).
    if (key === 'snapshot_id' && !/^[0-9]+$/.test(field)) return String(100_000_000 + (hashOf(field) % 900_000_000));
    if (key === 'region_id' || key === 'region' || (key === 'id' && resource === 'regions')) return REGIONS.includes(field) ? field : pick(REGIONS, field);
    const prefix = key === 'id' ? (resource ? ID_PREFIX[resource] : undefined) : ID_PREFIX[key];
    if (prefix && !looksLikeId(field, prefix)) return `${prefix}_${idBody(field)}`;
    if (key === 'name' && isFiller(field)) return pick(NAMES, field);
    if (key === 'node_name' && isFiller(field)) return `${pick(['prod-eu', 'staging-us', 'data-main'], field)}-worker-${(hashOf(field) % 9) + 1}`;
    if (key === 'server_type' && isFiller(field)) return pick(SERVER_TYPES, field);
    if (key === 'url' && !/^https:\/\//.test(field)) return `https://hooks.example.com/platform/${hashOf(field) % 100}`;
    if (key === 'stripe_price_id' && isFiller(field)) return `price_${idBody(field).slice(3)}`;
    if (key === 'custom_image' && isFiller(field)) return `https://cdn.example.com/images/${hashOf(field) % 100}.png`;
    if (key === 'repo_url' && !/^(https|oci):\/\/[a-z0-9.-]+(\/[a-z0-9._-]+)*$/.test(field))
      return pick(['https://charts.bitnami.com/bitnami', 'oci://ghcr.io/acme/charts'], field);
    if (key === 'chart' && isFiller(field)) return pick(['wordpress', 'nginx', 'postgresql', 'mediawiki'], field);
    if (key === 'target_revision' && isFiller(field)) return pick(['19.6.1', '18.1.4', '15.5.38'], field);
    if (key === 'path' && isFiller(field)) return pick(['charts/app', 'deploy/helm'], field);
    if (key === 'registry_url' && isFiller(field)) return pick(['ghcr.io', 'registry.gitlab.com', 'docker.io'], field);
    if (key === 'cursor' && isFiller(field))
      return Buffer.from(JSON.stringify({ t: RECENT_FROM + (hashOf(field) % recentSpan()), i: `x_${idBody(field)}` })).toString('base64url');
    return field;
  }
  if (typeof field === 'number') {
    const moment = key.endsWith('_at') || key.endsWith('_until') || key === 'failing_since';
    if (moment && (field < RECENT_FROM || field > RECENT_FROM + recentSpan())) return RECENT_FROM + (field % recentSpan());
    if (key === 'cpu' && field > 64) return [2, 4, 8, 16][field % 4] as number;
    if (key === 'memory_bytes' && field > 2 ** 40) return 2 ** (32 + (field % 4));
    if ((key === 'consecutive_failures' || key === 'attempts') && field > 100) return field % 6;
    if (key === 'revision' && field > 100) return (field % 20) + 1;
  }
  return field;
}

/** A quota entry whose type, unit and name go with its metric, and whose numbers add up. */
function mendQuota(entry: { [key: string]: Json }): { [key: string]: Json } {
  const known = QUOTAS[String(entry.metric)];
  if (!known) return entry;
  const limit = known.limit;
  const usage = Math.min(limit, Math.abs(Number(entry.usage) || 0) % (limit + 1));
  return { ...entry, type: known.type, unit: known.unit, displayName: known.displayName, limit, usage, remaining: limit - usage };
}

function mend(value: Json, resource?: string): Json {
  if (Array.isArray(value)) return value.map((item) => mend(item, resource));
  if (!isRecord(value)) return value;
  let out: { [key: string]: Json } = {};
  for (const [key, field] of Object.entries(value)) {
    if (key === 'status_message' && typeof value.status === 'string' && STATUS_MESSAGES[value.status]) {
      out[key] = pickAny(STATUS_MESSAGES[value.status]!, `${String(field)}${String(value.status)}`);
      continue;
    }
    const options = messages[key];
    // A list's records are of the path's resource; a nested list's, of the field holding it (`sources`).
    const inner = key === 'data' ? resource : key in ID_PREFIX ? key : undefined;
    // A list of ids (`cluster_ids`, `stripe_price_ids`): each as the field of one would be.
    if (key.endsWith('_ids') && Array.isArray(field)) {
      out[key] = field.map((item) => mendField(key.slice(0, -1), item, resource));
      continue;
    }
    out[key] =
      options && typeof field === 'string'
        ? pick(options, field)
        : isRecord(field) || Array.isArray(field)
          ? mend(field, inner)
          : mendField(key, field, resource);
  }
  if (typeof out.metric === 'string' && 'remaining' in out) out = mendQuota(out);
  // A Kubernetes version's release is a patch release of it.
  if (typeof out.id === 'string' && typeof out.release === 'string' && !out.release.startsWith(`${out.id}.`))
    out.release = `${out.id}.${hashOf(out.release) % 15}`;
  // An event names its object by id (the object's own: its id, a machine's provider_id, a quota's metric), and a
  // notification its resource.
  for (const [typeKey, idKey] of [
    ['object_type', 'object_id'],
    ['resource_type', 'resource_id'],
  ] as const) {
    const type = out[typeKey];
    if (typeof type !== 'string' || typeof out[idKey] !== 'string') continue;
    const object = isRecord(out.object) ? out.object : {};
    const own = object.id ?? object.provider_id ?? object.metric;
    const prefix = OBJECT_PREFIX[type];
    const seed = String(out[idKey]);
    out[idKey] =
      typeof own === 'string'
        ? own
        : prefix
          ? `${prefix}_${idBody(seed)}`
          : type === 'machine'
            ? `compute://mch_${idBody(seed)}`
            : pick(Object.keys(QUOTAS), seed);
  }
  const created = out.created_at;
  if (typeof created === 'number') {
    const now = Math.floor(Date.now() / 1000);
    for (const [key, field] of Object.entries(out)) {
      // Later by up to a day: no record changes, is read or expires before it exists; and what has happened has passed.
      if (key.endsWith('_at') && typeof field === 'number' && field < created) {
        const later = created + ((created - field) % 86_400);
        out[key] = FUTURE_MOMENT.test(key) ? later : Math.min(later, now);
      }
    }
  }
  const pagination = out.pagination;
  if (Array.isArray(out.data) && out.data.length === 0 && isRecord(pagination) && pagination.has_more === true) {
    out.pagination = { ...pagination, has_more: false };
  }
  return out;
}

/** The resource a path names last (`/v1/installs/ins_1/revisions` → `revisions`), whose records a list holds. */
function resourceOf(path: string): string | undefined {
  const segments = path
    .split('?')[0]!
    .split('/')
    .filter((segment) => segment in ID_PREFIX || segment === 'regions');
  return segments.at(-1);
}

/** A generated error's code by its status, as the contract's error table has it, and what such an error says. */
const ERRORS: Record<number, { code: string; message: string; suggestion: string }> = {
  400: { code: 'bad_request', message: 'The request body is not valid JSON.', suggestion: "Send a JSON object with 'Content-Type: application/json'." },
  401: { code: 'unauthorized', message: 'The token is unknown, has expired or was revoked.', suggestion: 'Sign in again with platform login.' },
  403: { code: 'forbidden', message: 'X-Workspace-Id names no workspace you are a member of.', suggestion: 'List your workspaces with GET /v1/workspaces.' },
  404: { code: 'not_found', message: 'Cluster cl_01jd2x8m5r7t9v1w3y5a7c9e1g not found.', suggestion: 'List the clusters to find its id.' },
  409: { code: 'conflict', message: 'The resource is in use.', suggestion: 'Delete what uses it first.' },
  413: { code: 'payload_too_large', message: 'The request body is larger than 1048576 bytes.', suggestion: 'Send a smaller body.' },
  415: { code: 'unsupported_media_type', message: 'The operation takes no request body.', suggestion: 'Send the request without a body.' },
  422: { code: 'validation_error', message: 'Body field name is too long.', suggestion: 'Use at most 63 characters.' },
  429: {
    code: 'rate_limited',
    message: 'Too many requests; you may make 600 requests a minute.',
    suggestion: 'Wait for the number of seconds in Retry-After, then retry.',
  },
  500: {
    code: 'internal_error',
    message: 'Something went wrong on our side.',
    suggestion: 'Retry later; if it persists, contact support with the request id.',
  },
  503: { code: 'service_unavailable', message: 'The service is temporarily unavailable.', suggestion: 'Retry after the number of seconds in Retry-After.' },
};

/** Prism's dynamic JSON answer of `status` to a request for `path`, made consistent as described above. */
export function consistentMockData(body: unknown, path = '/', status = 200): unknown {
  const error = ERRORS[status];
  // A generated error says what an error of its status says (its code above all, which front ends branch on).
  if (error && isRecord(body as Json) && isRecord((body as { error?: Json }).error)) return { error };
  return mend(body as Json, resourceOf(path));
}

/** Whether the request asks Prism for dynamic data (`Prefer: dynamic=true`). */
export function asksForDynamicData(prefer: string | string[] | undefined): boolean {
  return [prefer ?? []]
    .flat()
    .join(',')
    .split(/[,;]/)
    .some((preference) => preference.trim().toLowerCase() === 'dynamic=true');
}
