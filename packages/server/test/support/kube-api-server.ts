// A test Kubernetes API server: the few resources and the pod-log endpoint the Kubernetes cluster driver uses,
// over HTTPS with a test CA (kube-ca.pem; its key is not kept, the server's certificate is for 127.0.0.1), so the driver under test runs the real @kubernetes/client-node against it. It refuses, with a
// Kubernetes Status 422 as the real API server does, every object that does not match its published schema:
// TenantControlPlanes against Kamaji's CRD (openAPIV3Schema, committed beside the driver), Applications through
// @kubernetes-models/argo-cd, Secrets, Namespaces, Nodes and Pods through kubernetes-models.
//
// What Kamaji, Argo CD and the kubelet would do is done by the test through the helpers (status, finalizers,
// nodes, pods, log lines), each validated like a request.
import { randomUUID, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { Application, AppProject } from '@kubernetes-models/argo-cd/argoproj.io/v1alpha1';
import { Ajv } from 'ajv';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Namespace, Node, Pod, Secret, ServiceAccount } from 'kubernetes-models/v1';
import { parse as parseYaml } from 'yaml';
import { AdmissionDenied, admitTenantControlPlane, KAMAJI_SUPPORTED_VERSION } from './kamaji.ts';

const CRD = new URL('../../src/providers/kubernetes/kamaji/tenantcontrolplanes.crd.yaml', import.meta.url);
export const TEST_CA_PEM = readFileSync(new URL('./kube-ca.pem', import.meta.url), 'utf8');

type Obj = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  status?: Record<string, unknown>;
  [key: string]: unknown;
};

interface Kind {
  apiVersion: string;
  kind: string;
  namespaced: boolean;
  /** Whether status is a subresource (a PUT of the object keeps the stored status). */
  statusSubresource: boolean;
  validate(object: unknown): void;
  /** The validating admission webhooks on creates and updates (throw AdmissionDenied to refuse). */
  admit?(object: Obj, old: Obj | undefined, server: KubeApiServer): void;
}

let tcpValidator: (((object: unknown) => boolean) & { errors?: unknown }) | undefined;

function validateTenantControlPlane(object: unknown): void {
  if (!tcpValidator) {
    const crd = parseYaml(readFileSync(CRD, 'utf8')) as { spec: { versions: { name: string; schema: { openAPIV3Schema: object } }[] } };
    const schema = crd.spec.versions.find((v) => v.name === 'v1alpha1')!.schema.openAPIV3Schema;
    // strict off: the schema carries Kubernetes' x-kubernetes-* keywords and formats (int32, int-or-string).
    tcpValidator = new Ajv({ strict: false, allErrors: true, logger: false, validateFormats: false }).compile(schema);
  }
  if (!tcpValidator(object)) throw new Error(JSON.stringify(tcpValidator.errors).slice(0, 2000));
}

const KINDS: Record<string, Kind> = {
  'v1/secrets': { apiVersion: 'v1', kind: 'Secret', namespaced: true, statusSubresource: false, validate: (o) => new Secret(o as never).validate() },
  'v1/configmaps': { apiVersion: 'v1', kind: 'ConfigMap', namespaced: true, statusSubresource: false, validate: (o) => new ConfigMap(o as never).validate() },
  'v1/namespaces': { apiVersion: 'v1', kind: 'Namespace', namespaced: false, statusSubresource: true, validate: (o) => new Namespace(o as never).validate() },
  'v1/nodes': { apiVersion: 'v1', kind: 'Node', namespaced: false, statusSubresource: true, validate: (o) => new Node(o as never).validate() },
  'v1/serviceaccounts': {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    namespaced: true,
    statusSubresource: false,
    validate: (o) => new ServiceAccount(o as never).validate(),
  },
  'rbac.authorization.k8s.io/v1/clusterrolebindings': {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    namespaced: false,
    statusSubresource: false,
    validate: (o) => new ClusterRoleBinding(o as never).validate(),
  },
  'v1/pods': { apiVersion: 'v1', kind: 'Pod', namespaced: true, statusSubresource: true, validate: (o) => new Pod(o as never).validate() },
  'kamaji.clastix.io/v1alpha1/tenantcontrolplanes': {
    apiVersion: 'kamaji.clastix.io/v1alpha1',
    kind: 'TenantControlPlane',
    namespaced: true,
    statusSubresource: true,
    validate: validateTenantControlPlane,
    admit: (object, old, server) => admitTenantControlPlane(object, old, server.kamajiSupportedVersion),
  },
  // Argo CD's Application CRD has no status subresource: a PUT replaces the status too.
  'argoproj.io/v1alpha1/applications': {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    namespaced: true,
    statusSubresource: false,
    validate: (o) => new Application(o as never).validate(),
  },
  'argoproj.io/v1alpha1/appprojects': {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    namespaced: true,
    statusSubresource: false,
    validate: (o) => new AppProject(o as never).validate(),
  },
};

/** RFC 7386: null removes a key, an object is merged key by key, anything else replaces. */
function applyMergePatch(target: unknown, patch: unknown): unknown {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

/**
 * Runs the kind's admission webhooks; a denial becomes the Status the API server answers with
 * (k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go, ToStatusErr: 403 Forbidden, the
 * webhook's reason after `<resource>.<group> "<name>" is forbidden: admission webhook "<name>" denied the request: `).
 */
function admit(server: KubeApiServer, resource: string, kind: Kind, object: Obj, old: Obj | undefined): void {
  try {
    kind.admit?.(object, old, server);
  } catch (error) {
    if (!(error instanceof AdmissionDenied)) throw error;
    const parts = resource.split('/'); // "v1/secrets", "kamaji.clastix.io/v1alpha1/tenantcontrolplanes"
    const groupResource = parts.length === 3 ? `${parts[2]}.${parts[0]}` : parts[1];
    throw new StatusError(
      403,
      'Forbidden',
      `${groupResource} "${object.metadata.name}" is forbidden: admission webhook "${error.webhook}" denied the request: ${error.message}`,
    );
  }
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

class StatusError extends Error {
  readonly code: number;
  readonly reason: string;
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

/** A log line as the kubelet keeps it: its time in RFC 3339 with nanoseconds, and its text. */
export interface KubeLogLine {
  time: string;
  line: string;
}

/** Go's RFC3339Nano: trailing zeros of the fraction dropped (and the dot when nothing is left). */
function rfc3339Nano(time: string): string {
  const match = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d+))?Z$/.exec(time)!;
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  return `${match[1]}${fraction ? `.${fraction}` : ''}Z`;
}

/** Nanoseconds since the epoch of an RFC 3339 time, as a bigint (a Number cannot hold them exactly). */
function nanos(time: string): bigint {
  const match = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(time);
  if (!match) throw new StatusError(400, 'BadRequest', `invalid RFC 3339 time "${time}"`);
  const seconds = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(seconds)) throw new StatusError(400, 'BadRequest', `invalid RFC 3339 time "${time}"`);
  return BigInt(seconds) * 1_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

export class KubeApiServer {
  /** Every object, by "<resource key>|<namespace>|<name>". */
  readonly objects = new Map<string, Obj>();
  /** Every write refused, with the reason (tests assert that none happened, or that one did). */
  readonly refused: { method: string; path: string; message: string }[] = [];
  /** Every request, "METHOD path?query". */
  readonly requests: string[] = [];
  private readonly logs = new Map<string, KubeLogLine[]>();
  private readonly followers = new Set<{ key: string; write: (l: KubeLogLine) => void; end: () => void }>();
  private server: Server | undefined;
  private version = 0;
  readonly token = `token-${randomUUID()}`;
  /**
   * The CAs whose client certificates this server accepts (the API server's --client-ca-file); a certificate of
   * any other CA gets 401, as after a CA rotation.
   */
  clientCas: X509Certificate[] = [];
  /** The newest Kubernetes the Kamaji in this cluster supports (its webhook refuses newer minors). */
  kamajiSupportedVersion = KAMAJI_SUPPORTED_VERSION;
  url = '';

  async start(): Promise<this> {
    const pem = (file: string) => readFileSync(new URL(file, import.meta.url));
    // Client certificates are asked for and checked per request against clientCas (which can change), not by TLS.
    this.server = createServer(
      { cert: pem('./kube-server.pem'), key: pem('./kube-server-key.pem'), requestCert: true, rejectUnauthorized: false },
      (req, res) => void this.handle(req, res),
    );
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const follower of this.followers) follower.end();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** A kubeconfig reaching this server: its CA and a bearer token. */
  kubeconfig(): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server: this.url, 'certificate-authority-data': Buffer.from(TEST_CA_PEM).toString('base64') } }],
      users: [{ name: 'admin', user: { token: this.token } }],
      contexts: [{ name: 'test', context: { cluster: 'test', user: 'admin' } }],
      'current-context': 'test',
    });
  }

  // --- what the test does in the controllers' place ---

  get(resource: string, namespace: string | undefined, name: string): Obj | undefined {
    return this.objects.get(`${resource}|${namespace ?? ''}|${name}`);
  }

  list(resource: string, namespace?: string): Obj[] {
    return [...this.objects.entries()].filter(([key]) => key.startsWith(`${resource}|${namespace ?? ''}|`)).map(([, o]) => o);
  }

  /** Writes an object as a controller would (validated like a request; status included). */
  put(resource: string, object: Obj): Obj {
    const kind = KINDS[resource]!;
    const stored = this.check(kind, { apiVersion: kind.apiVersion, kind: kind.kind, ...object }, object.metadata.namespace);
    const existing = this.get(resource, object.metadata.namespace, object.metadata.name);
    return this.store(resource, { ...stored, metadata: { ...existing?.metadata, ...stored.metadata } });
  }

  /** Sets an object's status (a controller's status update, validated). */
  setStatus(resource: string, namespace: string | undefined, name: string, status: Record<string, unknown>): Obj {
    const existing = this.get(resource, namespace, name);
    if (!existing) throw new Error(`no ${resource} ${namespace}/${name}`);
    return this.put(resource, { ...existing, status });
  }

  /** Removes a finalizer, as its controller does once its work is done; the object goes if it was deleted. */
  finalize(resource: string, namespace: string | undefined, name: string, finalizer: string): void {
    const existing = this.get(resource, namespace, name);
    if (!existing) return;
    existing.metadata.finalizers = (existing.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    if (existing.metadata.deletionTimestamp && existing.metadata.finalizers.length === 0) this.remove(resource, namespace, name);
  }

  /** Appends lines to a container's log (the kubelet's), waking followers. */
  appendLog(namespace: string, pod: string, container: string, lines: KubeLogLine[]): void {
    const key = `${namespace}/${pod}/${container}`;
    const log = this.logs.get(key) ?? [];
    this.logs.set(key, log);
    for (const line of lines) {
      log.push(line);
      for (const follower of this.followers) if (follower.key === key) follower.write(line);
    }
  }

  /** Deletes a pod: its followed logs end. */
  deletePod(namespace: string, name: string): void {
    this.remove('v1/pods', namespace, name);
    for (const follower of this.followers) if (follower.key.startsWith(`${namespace}/${name}/`)) follower.end();
  }

  // --- the API ---

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url!, 'http://localhost');
    this.requests.push(`${req.method} ${url.pathname}${url.search}`);
    try {
      if (req.headers.authorization !== `Bearer ${this.token}` && !this.clientCertificateTrusted(req))
        throw new StatusError(401, 'Unauthorized', 'Unauthorized');
      const route = this.route(url.pathname);
      if (route.log) return this.serveLog(res, route.namespace!, route.name!, url.searchParams);
      if (route.token) return this.send(res, 201, this.tokenRequest(route.namespace!, route.name!, (await this.body(req)) as never));
      const kind = KINDS[route.resource];
      if (!kind) throw new StatusError(404, 'NotFound', `the server could not find the requested resource ${route.resource}`);
      const body = req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH' ? await this.body(req) : undefined;
      const result = req.method === 'PATCH' ? this.patch(req.headers['content-type'], route, kind, body!) : this.serve(req.method!, route, kind, body);
      this.send(res, req.method === 'POST' ? 201 : 200, result);
    } catch (error) {
      const status = error instanceof StatusError ? error : new StatusError(500, 'InternalError', (error as Error).message);
      if (status.code === 422 || status.reason === 'Forbidden') this.refused.push({ method: req.method!, path: url.pathname, message: status.message });
      this.send(res, status.code, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: status.message,
        reason: status.reason,
        code: status.code,
      });
    }
  }

  /** Whether the request came with a client certificate issued by one of clientCas, and valid now. */
  private clientCertificateTrusted(req: IncomingMessage): boolean {
    const raw = (req.socket as TLSSocket).getPeerCertificate?.()?.raw;
    if (!raw) return false;
    const certificate = new X509Certificate(raw);
    const now = Date.now();
    if (now < Date.parse(certificate.validFrom) || now > Date.parse(certificate.validTo)) return false;
    return this.clientCas.some((ca) => certificate.checkIssued(ca) && certificate.verify(ca.publicKey));
  }

  /** Tokens the TokenRequest API minted, with their ServiceAccount and expiry. */
  readonly tokens: { token: string; serviceAccount: string; expirationSeconds: number }[] = [];

  /** The TokenRequest API: a token of an existing ServiceAccount, valid for spec.expirationSeconds (default 1 h). */
  private tokenRequest(namespace: string, name: string, body: { apiVersion?: string; kind?: string; spec?: { expirationSeconds?: number } }): unknown {
    if (!this.get('v1/serviceaccounts', namespace, name)) throw new StatusError(404, 'NotFound', `serviceaccounts "${name}" not found`);
    const expirationSeconds = body.spec?.expirationSeconds ?? 3600;
    if (expirationSeconds < 600) throw new StatusError(422, 'Invalid', 'spec.expirationSeconds: may not specify a duration less than 10 minutes');
    const token = randomUUID().replaceAll('-', '') + randomUUID().replaceAll('-', '');
    this.tokens.push({ token, serviceAccount: `${namespace}/${name}`, expirationSeconds });
    const expirationTimestamp = new Date(Date.now() + expirationSeconds * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    return {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      metadata: {},
      spec: { ...body.spec, expirationSeconds },
      status: { token, expirationTimestamp },
    };
  }

  private route(path: string): { resource: string; namespace?: string; name?: string; log: boolean; token?: boolean } {
    const match = /^\/(?:api\/(v1)|apis\/([^/]+\/[^/]+))\/(.*)$/.exec(path);
    if (!match) throw new StatusError(404, 'NotFound', `no route ${path}`);
    const group = match[1] ?? match[2]!;
    const parts = match[3]!.split('/').map(decodeURIComponent);
    if (parts[0] === 'namespaces' && parts.length >= 3) {
      const [, namespace, plural, name, sub] = parts;
      if (sub !== undefined && !(plural === 'pods' && sub === 'log') && !(plural === 'serviceaccounts' && sub === 'token'))
        throw new StatusError(404, 'NotFound', `no subresource ${sub}`);
      return { resource: `${group}/${plural}`, namespace, name, log: sub === 'log', token: sub === 'token' };
    }
    return { resource: `${group}/${parts[0]}`, name: parts[1], log: false };
  }

  private serve(method: string, route: { resource: string; namespace?: string; name?: string }, kind: Kind, body: Obj | undefined): unknown {
    const { resource, namespace, name } = route;
    const existing = name ? this.get(resource, namespace, name) : undefined;
    if (method === 'GET' && !name)
      return {
        apiVersion: kind.apiVersion,
        kind: `${kind.kind}List`,
        metadata: { resourceVersion: String(this.version) },
        items: this.list(resource, namespace),
      };
    if (method === 'GET') {
      if (!existing) throw new StatusError(404, 'NotFound', `${resource} "${name}" not found`);
      return existing;
    }
    if (method === 'POST') {
      const object = this.check(kind, body, namespace);
      if (this.get(resource, namespace, object.metadata.name))
        throw new StatusError(409, 'AlreadyExists', `${resource} "${object.metadata.name}" already exists`);
      admit(this, resource, kind, object, undefined);
      if (kind.statusSubresource) delete object.status;
      return this.store(resource, {
        ...object,
        metadata: { ...object.metadata, uid: randomUUID(), creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') },
      });
    }
    if (method === 'PUT') {
      const object = this.check(kind, body, namespace);
      if (!existing) throw new StatusError(404, 'NotFound', `${resource} "${name}" not found`);
      if (object.metadata.name !== name) throw new StatusError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
      if (object.metadata.resourceVersion !== undefined && object.metadata.resourceVersion !== existing.metadata.resourceVersion) {
        throw new StatusError(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified`);
      }
      admit(this, resource, kind, { ...object, metadata: { ...object.metadata, deletionTimestamp: existing.metadata.deletionTimestamp } }, existing);
      const status = kind.statusSubresource ? existing.status : object.status;
      const { uid, creationTimestamp, deletionTimestamp } = existing.metadata;
      return this.store(resource, {
        ...object,
        ...(status ? { status } : { status: undefined }),
        metadata: { ...object.metadata, uid, creationTimestamp, deletionTimestamp },
      });
    }
    if (method === 'DELETE') {
      if (!existing) throw new StatusError(404, 'NotFound', `${resource} "${name}" not found`);
      if (existing.metadata.finalizers?.length) {
        existing.metadata.deletionTimestamp ??= new Date().toISOString().replace(/\.\d+Z$/, 'Z');
        return existing;
      }
      this.remove(resource, namespace, name!);
      return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind: resource } };
    }
    throw new StatusError(405, 'MethodNotAllowed', `${method} is not supported`);
  }

  /**
   * A JSON merge patch (RFC 7386), the only patch type served here (k8s.io/apiserver's patch handler takes it for
   * custom resources; a strategic merge patch is refused for them with 415). The result is validated like a PUT;
   * the stored status stays unless the patch names it (and a status subresource keeps it always).
   */
  private patch(contentType: string | undefined, route: { resource: string; namespace?: string; name?: string }, kind: Kind, body: Obj): unknown {
    if (contentType?.split(';')[0]?.trim() !== 'application/merge-patch+json')
      throw new StatusError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json`,
      );
    const existing = route.name ? this.get(route.resource, route.namespace, route.name) : undefined;
    if (!existing) throw new StatusError(404, 'NotFound', `${route.resource} "${route.name}" not found`);
    const merged = applyMergePatch(existing, body) as Obj;
    if (kind.statusSubresource) merged.status = existing.status;
    const object = this.check(kind, merged, route.namespace);
    if (object.metadata.name !== existing.metadata.name) throw new StatusError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
    const { uid, creationTimestamp, deletionTimestamp } = existing.metadata;
    return this.store(route.resource, { ...object, metadata: { ...object.metadata, uid, creationTimestamp, deletionTimestamp } });
  }

  /** Validates an object against its kind's schema and the URL (422 Invalid when it does not match). */
  private check(kind: Kind, body: unknown, namespace: string | undefined): Obj {
    const object = structuredClone(body) as Obj;
    const invalid = (message: string) => new StatusError(422, 'Invalid', `${kind.kind} is invalid: ${message}`);
    if (!object || typeof object !== 'object') throw invalid('not an object');
    if (object.apiVersion !== kind.apiVersion || object.kind !== kind.kind)
      throw invalid(`apiVersion/kind must be ${kind.apiVersion}/${kind.kind}, got ${object.apiVersion}/${object.kind}`);
    const name = object.metadata?.name;
    if (typeof name !== 'string' || name.length > 253 || !DNS_SUBDOMAIN.test(name)) throw invalid(`metadata.name: "${name}" is not a DNS-1123 subdomain`);
    if (kind.namespaced && (object.metadata.namespace ?? namespace) !== namespace) throw invalid('metadata.namespace does not match the namespace on the URL');
    if (kind.namespaced) object.metadata.namespace = namespace;
    try {
      kind.validate(object);
    } catch (error) {
      throw invalid((error as Error).message);
    }
    if (kind.kind === 'Secret') {
      // The API server folds stringData into data.
      const secret = object as Obj & { data?: Record<string, string>; stringData?: Record<string, string> };
      for (const [key, value] of Object.entries(secret.data ?? {})) {
        if (Buffer.from(value, 'base64').toString('base64') !== value) throw invalid(`data[${key}]: not base64`);
      }
      secret.data = { ...secret.data, ...Object.fromEntries(Object.entries(secret.stringData ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) };
      delete secret.stringData;
    }
    return object;
  }

  private store(resource: string, object: Obj): Obj {
    const stored = { ...object, metadata: { ...object.metadata, resourceVersion: String(++this.version) } };
    if (stored.status === undefined) delete stored.status;
    this.objects.set(`${resource}|${stored.metadata.namespace ?? ''}|${stored.metadata.name}`, stored);
    return stored;
  }

  private remove(resource: string, namespace: string | undefined, name: string): void {
    this.objects.delete(`${resource}|${namespace ?? ''}|${name}`);
  }

  private serveLog(res: ServerResponse, namespace: string, pod: string, query: URLSearchParams): void {
    const object = this.get('v1/pods', namespace, pod) as (Obj & { spec?: { containers?: { name: string }[] } }) | undefined;
    if (!object) throw new StatusError(404, 'NotFound', `pods "${pod}" not found`);
    const container = query.get('container') ?? object.spec?.containers?.[0]?.name;
    if (!object.spec?.containers?.some((c) => c.name === container))
      throw new StatusError(400, 'BadRequest', `container ${container} is not valid for pod ${pod}`);
    if ((object.status as { phase?: string } | undefined)?.phase === 'Pending')
      throw new StatusError(400, 'BadRequest', `container "${container}" in pod "${pod}" is waiting to start: ContainerCreating`);
    if (query.has('sinceTime') && query.has('sinceSeconds')) throw new StatusError(422, 'Invalid', 'at most one of sinceTime or sinceSeconds may be specified');
    const tailRaw = query.get('tailLines');
    const tail = tailRaw === null ? undefined : Number(tailRaw);
    if (tail !== undefined && (!Number.isInteger(tail) || tail < 0)) throw new StatusError(422, 'Invalid', 'tailLines must be a non-negative integer');
    const since = query.has('sinceTime') ? nanos(query.get('sinceTime')!) : undefined;
    const timestamps = query.get('timestamps') === 'true';
    const format = (l: KubeLogLine) => `${timestamps ? `${rfc3339Nano(l.time)} ` : ''}${l.line}\n`;
    const key = `${namespace}/${pod}/${container}`;
    // Like the kubelet: the last tailLines of the log, then only those at or after sinceTime.
    let lines = this.logs.get(key) ?? [];
    if (tail !== undefined) lines = lines.slice(Math.max(0, lines.length - tail));
    if (since !== undefined) lines = lines.filter((l) => nanos(l.time) >= since);
    res.writeHead(200, { 'content-type': 'text/plain' });
    for (const line of lines) res.write(format(line));
    if (query.get('follow') !== 'true') {
      res.end();
      return;
    }
    const follower = { key, write: (l: KubeLogLine) => res.write(format(l)), end: () => res.end() };
    this.followers.add(follower);
    res.on('close', () => this.followers.delete(follower));
  }

  private async body(req: IncomingMessage): Promise<Obj> {
    let text = '';
    for await (const chunk of req) text += chunk;
    try {
      return JSON.parse(text) as Obj;
    } catch {
      throw new StatusError(400, 'BadRequest', 'the body is not JSON');
    }
  }

  private send(res: ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }
}
