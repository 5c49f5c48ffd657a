// The cluster driver on real Kubernetes. In the management cluster: each cluster's control plane is a Kamaji
// TenantControlPlane, and each helm release an Argo CD Application that deploys into the tenant cluster (which
// is registered with Argo CD as a cluster Secret). In the tenant cluster, reached with the admin kubeconfig that
// Kamaji writes: kubeadm bootstrap tokens for joining machines, Nodes, Pods and their logs.
//
// Every object is named after our ids (Kubernetes names allow no "_": "cl_01…" becomes "cl-01…"), so a
// re-run after a crash finds what the first run created.
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { createInterface } from 'node:readline';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1Secret,
} from '@kubernetes/client-node';
import { Application, AppProject } from '@kubernetes-models/argo-cd/argoproj.io/v1alpha1';
import { ConfigError } from '../../config.ts';
import { type Kubeconfig, kubeconfigYaml } from '../kubeconfig.ts';
import type {
  ClusterDriver,
  ControlPlane,
  ControlPlaneRequest,
  HelmRelease,
  HelmReleaseRequest,
  JoinRequest,
  LogEntry,
  PodContainer,
  ReadLogOptions,
} from '../types.ts';
import { type ArgoApplication, applicationSource, mergePatch, releaseOf, repositorySecret, sameJson } from './argocd.ts';
import { nodeCloudConfig } from './cloud-init.ts';
import { cniApplication, cniApplicationName } from './cni.ts';
import { controlPlaneStatus, type TenantControlPlane } from './kamaji.ts';
import { LABEL } from './labels.ts';
import { logEntries, parseStampedLine, sinceTimeOf } from './log-lines.ts';
import { DNS_SERVICE_IP, POD_CIDR, SERVICE_CIDR } from './network.ts';

export interface KubernetesDriverOptions {
  /** The management cluster, where Kamaji and Argo CD run. */
  management: KubeConfig;
  argocdNamespace: string;
  /** Where the TenantControlPlanes and their Secrets live. */
  kamajiNamespace: string;
}

export { LABEL } from './labels.ts';
export const ARGOCD_FINALIZER = 'resources-finalizer.argocd.argoproj.io';
const KAMAJI = { group: 'kamaji.clastix.io', version: 'v1alpha1', plural: 'tenantcontrolplanes' };
const ARGO = { group: 'argoproj.io', version: 'v1alpha1', plural: 'applications' };
const ARGO_PROJECTS = { group: 'argoproj.io', version: 'v1alpha1', plural: 'appprojects' };

/** Our ids as Kubernetes names. */
export const k8sName = (id: string) => id.toLowerCase().replace(/[^a-z0-9-]/g, '-');
export const applicationName = (namespace: string, release: string) => `${k8sName(namespace)}-${release}`.slice(0, 253);
export const pullSecretName = (release: string) => `${release}-registry`.slice(0, 253);
/** The Argo CD repository Secret of an Application's chart repository. */
export const repositorySecretName = (application: string) => `${application}-repository`.slice(0, 253);

export const isNotFound = (error: unknown) => error instanceof ApiException && error.code === 404;
const isConflict = (error: unknown) => error instanceof ApiException && error.code === 409;

/**
 * What the API server said, in its words: the `message` of the Status it answered with (an admission webhook's
 * reason, a schema violation), not the client's "HTTP-Code: … Body: … Headers: …".
 */
export function apiStatusMessage(error: ApiException<unknown>): string {
  try {
    const status = (typeof error.body === 'string' ? JSON.parse(error.body) : error.body) as { message?: unknown } | undefined;
    if (typeof status?.message === 'string' && status.message) return status.message;
  } catch {
    // not a Status: fall through to the code
  }
  return `HTTP ${error.code}`;
}

/** The driver on the management cluster of MANAGEMENT_KUBECONFIG; a file that is no kubeconfig is a ConfigError. */
export function kubernetesDriver(settings: { kubeconfigPath: string; argocdNamespace: string; kamajiNamespace: string }): KubernetesDriver {
  const management = new KubeConfig();
  try {
    management.loadFromFile(settings.kubeconfigPath);
  } catch (error) {
    throw new ConfigError(`MANAGEMENT_KUBECONFIG: "${settings.kubeconfigPath}" is not a kubeconfig (${(error as Error).message.split('\n')[0]})`);
  }
  if (!management.getCurrentCluster()) throw new ConfigError(`MANAGEMENT_KUBECONFIG: "${settings.kubeconfigPath}" has no current context with a cluster`);
  return new KubernetesDriver({ management, argocdNamespace: settings.argocdNamespace, kamajiNamespace: settings.kamajiNamespace });
}

export class KubernetesDriver implements ClusterDriver {
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly options: KubernetesDriverOptions;
  /** Clusters registered with Argo CD by this process: the resourceVersion of the admin kubeconfig Secret sent. */
  private readonly registered = new Map<string, string>();

  constructor(options: KubernetesDriverOptions) {
    this.options = options;
    this.core = options.management.makeApiClient(CoreV1Api);
    this.custom = options.management.makeApiClient(CustomObjectsApi);
  }

  // --- control planes (Kamaji) ---

  async createCluster(request: ControlPlaneRequest): Promise<ControlPlane> {
    const name = k8sName(request.cluster_id);
    const body: TenantControlPlane & { apiVersion: string; kind: string } = {
      apiVersion: `${KAMAJI.group}/${KAMAJI.version}`,
      kind: 'TenantControlPlane',
      metadata: { name, namespace: this.options.kamajiNamespace, labels: { [LABEL.cluster]: request.cluster_id } },
      spec: {
        controlPlane: { deployment: { replicas: 2 }, service: { serviceType: 'LoadBalancer' } },
        // Kamaji's webhook wants a whole semver (internal/webhook/handlers/tcp_version.go, semver.New) and builds
        // the control plane's image tags from it (registry.k8s.io/kube-apiserver:<release>): a published release.
        kubernetes: { version: request.kubernetes_release, kubelet: { cgroupfs: 'systemd' } },
        // Konnectivity: the tenant's API server, in the management cluster, reaches kubelets (logs, exec) and the
        // tenant's webhooks through the agents on the nodes, not across networks it cannot route.
        addons: { coreDNS: {}, kubeProxy: {}, konnectivity: { server: { port: 8132 } } },
        // The addresses the CNI is configured with (network.ts), not Kamaji's defaults.
        networkProfile: { podCidrs: [POD_CIDR], serviceCidrs: [SERVICE_CIDR], dnsServiceIPs: [DNS_SERVICE_IP] },
      },
    };
    try {
      await this.custom.createNamespacedCustomObject({ ...KAMAJI, namespace: this.options.kamajiNamespace, body });
    } catch (error) {
      if (error instanceof ApiException && error.code >= 400 && error.code < 500 && !isConflict(error))
        throw new Error(`The management cluster refused the control plane: ${apiStatusMessage(error)}`);
      if (!isConflict(error)) throw error; // 409: created by an earlier run
    }
    return (await this.getCluster(request.cluster_id)) ?? { cluster_id: request.cluster_id, status: 'PROVISIONING', message: null, endpoint: null };
  }

  async getCluster(clusterId: string): Promise<ControlPlane | undefined> {
    const tcp = await this.tenantControlPlane(clusterId);
    if (!tcp) return undefined;
    return { cluster_id: clusterId, status: controlPlaneStatus(tcp), message: null, endpoint: tcp.status?.controlPlaneEndpoint ?? null };
  }

  async deleteCluster(clusterId: string): Promise<void> {
    this.registered.delete(clusterId);
    const name = k8sName(clusterId);
    await this.custom.deleteNamespacedCustomObject({ ...ARGO, namespace: this.options.argocdNamespace, name: cniApplicationName(name) }).catch(ignoreNotFound);
    await this.core.deleteNamespacedSecret({ name: `cluster-${name}`, namespace: this.options.argocdNamespace }).catch(ignoreNotFound);
    await this.custom.deleteNamespacedCustomObject({ ...ARGO_PROJECTS, namespace: this.options.argocdNamespace, name }).catch(ignoreNotFound);
    await this.custom.deleteNamespacedCustomObject({ ...KAMAJI, namespace: this.options.kamajiNamespace, name }).catch(ignoreNotFound);
  }

  private async tenantControlPlane(clusterId: string): Promise<TenantControlPlane | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject({
        ...KAMAJI,
        namespace: this.options.kamajiNamespace,
        name: k8sName(clusterId),
      })) as TenantControlPlane;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** The tenant cluster's admin kubeconfig. */
  private async tenant(clusterId: string): Promise<KubeConfig> {
    return (await this.adminKubeconfig(clusterId)).config;
  }

  /**
   * The admin kubeconfig from the Secret Kamaji writes, read at each use and never kept: Kamaji rewrites it when
   * the tenant's certificates rotate, and the old client certificate is then refused. `version` is the Secret's
   * resourceVersion, which changes with it.
   */
  private async adminKubeconfig(clusterId: string): Promise<{ config: KubeConfig; version: string }> {
    const tcp = await this.tenantControlPlane(clusterId);
    const secretName = tcp?.status?.kubeconfig?.admin?.secretName;
    if (!tcp || !secretName || controlPlaneStatus(tcp) !== 'RUNNING') throw new Error(`cluster ${clusterId} has no running control plane`);
    const secret = await this.core.readNamespacedSecret({ name: secretName, namespace: this.options.kamajiNamespace });
    const encoded = secret.data?.['admin.conf'] ?? secret.data?.['super-admin.conf'];
    if (!encoded) throw new Error(`the admin kubeconfig Secret ${secretName} of cluster ${clusterId} has no admin.conf`);
    const config = new KubeConfig();
    config.loadFromString(Buffer.from(encoded, 'base64').toString('utf8'));
    return { config, version: secret.metadata?.resourceVersion ?? '' };
  }

  /**
   * A token of the tenant's ServiceAccount kube-system/platform-admin (bound to cluster-admin; both made on first
   * use) from the TokenRequest API: the API server signs it with the expiry asked for, and nothing stores it.
   */
  async kubeconfig(clusterId: string, ttlSeconds: number): Promise<Kubeconfig> {
    const tenant = await this.tenant(clusterId);
    const core = tenant.makeApiClient(CoreV1Api);
    const rbac = tenant.makeApiClient(RbacAuthorizationV1Api);
    const name = 'platform-admin';
    const namespace = 'kube-system';
    const metadata = { name, labels: { [LABEL.cluster]: clusterId } };
    const existing = (error: unknown) => {
      if (!isConflict(error)) throw error;
    };
    await core.createNamespacedServiceAccount({ namespace, body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata } }).catch(existing);
    await rbac
      .createClusterRoleBinding({
        body: {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata,
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'ServiceAccount', name, namespace }],
        },
      })
      .catch(existing);
    const { status } = await core.createNamespacedServiceAccountToken({
      name,
      namespace,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: ttlSeconds } },
    });
    const cluster = tenant.getCurrentCluster();
    if (!status?.token || !status.expirationTimestamp || !cluster) throw new Error(`the TokenRequest of cluster ${clusterId} returned no token`);
    return {
      kubeconfig: kubeconfigYaml({ name: k8sName(clusterId), server: cluster.server, caData: cluster.caData }, { name, token: status.token }),
      expires_at: Math.floor(new Date(status.expirationTimestamp).getTime() / 1000),
    };
  }

  // --- nodes ---

  async joinMachine(request: JoinRequest): Promise<{ user_data: string }> {
    const tenant = await this.tenant(request.cluster_id);
    const core = tenant.makeApiClient(CoreV1Api);
    // One token per machine: its id is derived from the machine, so a re-run reads the token it minted.
    const id = createHash('sha256').update(request.machine_id).digest('hex').slice(0, 6);
    const name = `bootstrap-token-${id}`;
    let secret: string;
    try {
      const existing = await core.readNamespacedSecret({ name, namespace: 'kube-system' });
      secret = Buffer.from(existing.data?.['token-secret'] ?? '', 'base64').toString('utf8');
    } catch (error) {
      if (!isNotFound(error)) throw error;
      secret = tokenSecret();
      const body: V1Secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace: 'kube-system', labels: { [LABEL.cluster]: request.cluster_id } },
        type: 'bootstrap.kubernetes.io/token',
        stringData: {
          description: `joins machine ${request.machine_id}`,
          'token-id': id,
          'token-secret': secret,
          expiration: new Date(Date.now() + 24 * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
          'usage-bootstrap-authentication': 'true',
          'usage-bootstrap-signing': 'true',
          'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
        },
      };
      await core.createNamespacedSecret({ namespace: 'kube-system', body });
    }
    const cluster = tenant.getCurrentCluster();
    if (!cluster?.caData) throw new Error(`the admin kubeconfig of cluster ${request.cluster_id} has no certificate-authority-data`);
    const ca = new X509Certificate(Buffer.from(cluster.caData, 'base64'));
    const caHash = createHash('sha256')
      .update(ca.publicKey.export({ type: 'spki', format: 'der' }))
      .digest('hex');
    return {
      user_data: nodeCloudConfig({
        endpoint: new URL(cluster.server).host,
        token: `${id}.${secret}`,
        caCertHash: `sha256:${caHash}`,
        nodeName: request.node_name,
        kubernetesRelease: request.kubernetes_release,
      }),
    };
  }

  async nodeReady(clusterId: string, nodeName: string): Promise<boolean> {
    const core = (await this.tenant(clusterId)).makeApiClient(CoreV1Api);
    try {
      const node = await core.readNode({ name: nodeName });
      return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  // --- releases (Argo CD) ---

  /** Registers the tenant cluster with Argo CD: a cluster Secret named after it, with the admin credentials. */
  private async registerCluster(clusterId: string): Promise<string> {
    const clusterName = k8sName(clusterId);
    // Registered again whenever Kamaji rewrote the admin kubeconfig, or Argo CD would keep a refused certificate.
    const { config: tenant, version } = await this.adminKubeconfig(clusterId);
    if (this.registered.get(clusterId) === version) return clusterName;
    const cluster = tenant.getCurrentCluster();
    const user = tenant.getCurrentUser();
    if (!cluster || !user) throw new Error(`the admin kubeconfig of cluster ${clusterId} has no current context`);
    const tlsClientConfig = { caData: cluster.caData, certData: user.certData, keyData: user.keyData, insecure: cluster.skipTLSVerify || undefined };
    const body: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: `cluster-${clusterName}`,
        namespace: this.options.argocdNamespace,
        labels: { 'argocd.argoproj.io/secret-type': 'cluster', [LABEL.cluster]: clusterId },
      },
      type: 'Opaque',
      stringData: { name: clusterName, server: cluster.server, config: JSON.stringify({ bearerToken: user.token, tlsClientConfig }) },
    };
    await this.upsertSecret(this.core, body);
    await this.upsertProject(clusterId, clusterName);
    this.registered.set(clusterId, version);
    return clusterName;
  }

  /**
   * An AppProject per cluster, named after it: its Applications may deploy only to it, and a repository Secret
   * scoped to it serves only them (util/db/repository_secrets.go: a project's own credentials, else unscoped ones).
   */
  private async upsertProject(clusterId: string, clusterName: string): Promise<void> {
    const namespace = this.options.argocdNamespace;
    const project = new AppProject({
      metadata: { name: clusterName, namespace, labels: { [LABEL.cluster]: clusterId } },
      spec: {
        description: `Applications of cluster ${clusterId}`,
        sourceRepos: ['*'],
        destinations: [{ name: clusterName, namespace: '*' }],
        clusterResourceWhitelist: [{ group: '*', kind: '*' }],
      },
    });
    project.validate();
    try {
      await this.custom.createNamespacedCustomObject({ ...ARGO_PROJECTS, namespace, body: project.toJSON() });
    } catch (error) {
      if (!isConflict(error)) throw error; // made by an earlier run, to the same spec
    }
  }

  private async upsertSecret(core: CoreV1Api, body: V1Secret): Promise<void> {
    const { name, namespace } = body.metadata as { name: string; namespace: string };
    try {
      await core.createNamespacedSecret({ namespace, body });
    } catch (error) {
      if (!isConflict(error)) throw error;
      await core.replaceNamespacedSecret({ name, namespace, body });
    }
  }

  /** Registry credentials as a dockerconfigjson Secret in the install's namespace of the tenant cluster. */
  private async pullSecret(request: HelmReleaseRequest): Promise<string | undefined> {
    if (!request.pull_secrets?.length) return undefined;
    const core = (await this.tenant(request.cluster_id)).makeApiClient(CoreV1Api);
    const namespace = k8sName(request.namespace);
    await core
      .createNamespace({ body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { [LABEL.install]: request.namespace } } } })
      .catch((error) => {
        if (!isConflict(error)) throw error;
      });
    const auths = Object.fromEntries(
      request.pull_secrets.map((c) => [
        c.server,
        { username: c.username, password: c.password, auth: Buffer.from(`${c.username}:${c.password}`).toString('base64') },
      ]),
    );
    const name = pullSecretName(request.release);
    await this.upsertSecret(core, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, labels: { [LABEL.install]: request.namespace } },
      type: 'kubernetes.io/dockerconfigjson',
      stringData: { '.dockerconfigjson': JSON.stringify({ auths }) },
    });
    return name;
  }

  async upsertRelease(request: HelmReleaseRequest): Promise<HelmRelease> {
    const destination = await this.registerCluster(request.cluster_id);
    const pullSecret = await this.pullSecret(request);
    // Charts name the pull secrets in `imagePullSecrets` (and `global.` for their subcharts).
    const values = pullSecret
      ? {
          ...request.values,
          imagePullSecrets: [{ name: pullSecret }],
          global: { ...(request.values.global as object | undefined), imagePullSecrets: [{ name: pullSecret }] },
        }
      : request.values;
    const name = applicationName(request.namespace, request.release);
    const namespace = this.options.argocdNamespace;
    const source = applicationSource(request, values);
    await this.repositorySecret(request, name, source);
    const existing = await this.application(name);
    const sameTemplate = existing?.metadata.annotations?.[LABEL.template] === request.template_id;
    const revision =
      existing && !existing.metadata.deletionTimestamp ? Number(existing.metadata.annotations?.[LABEL.revision] ?? 1) + (sameTemplate ? 0 : 1) : 1;
    const application = new Application({
      metadata: {
        name,
        namespace,
        finalizers: [ARGOCD_FINALIZER],
        labels: { [LABEL.cluster]: request.cluster_id, [LABEL.install]: request.namespace },
        annotations: { [LABEL.template]: request.template_id, [LABEL.revision]: String(revision) },
      },
      spec: {
        project: destination,
        source,
        destination: { name: destination, namespace: k8sName(request.namespace) },
        syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ['CreateNamespace=true'] },
      },
    });
    application.validate(); // against Argo CD's schema, before it is sent
    if (!existing) return releaseOf((await this.custom.createNamespacedCustomObject({ ...ARGO, namespace, body: application.toJSON() })) as ArgoApplication);
    // A merge patch of the spec and our annotations: Argo CD writes the status (and its own annotations) meanwhile,
    // and a whole-object replace would race those writes (409) or carry a stale status back.
    const desired = application.toJSON() as unknown as ArgoApplication;
    const body = {
      metadata: { annotations: desired.metadata.annotations, labels: desired.metadata.labels },
      spec: mergePatch(existing.spec, desired.spec),
    };
    const patched = await this.custom.patchNamespacedCustomObject(
      { ...ARGO, namespace, name, body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    return releaseOf(patched as ArgoApplication);
  }

  /** The chart repository's credentials for Argo CD, when the workspace has some for its host; else none is kept. */
  private async repositorySecret(request: HelmReleaseRequest, application: string, source: { repoURL: string } & Record<string, unknown>): Promise<void> {
    const name = repositorySecretName(application);
    const namespace = this.options.argocdNamespace;
    const project = k8sName(request.cluster_id);
    const secret = repositorySecret(request, source, project, { name, namespace, labels: { [LABEL.install]: request.namespace } });
    if (secret) await this.upsertSecret(this.core, secret);
    else await this.core.deleteNamespacedSecret({ name, namespace }).catch(ignoreNotFound);
  }

  /** The cluster's pod network (cni.ts): its Argo CD Application, created once; its nodes turn Ready when it is up. */
  async ensureNetwork(clusterId: string): Promise<void> {
    const destination = await this.registerCluster(clusterId);
    const application = new Application(
      cniApplication({
        clusterName: k8sName(clusterId),
        destination,
        project: destination,
        argocdNamespace: this.options.argocdNamespace,
        labels: { [LABEL.cluster]: clusterId },
      }),
    );
    application.validate();
    const namespace = this.options.argocdNamespace;
    const desired = application.toJSON() as unknown as ArgoApplication;
    const existing = await this.application(desired.metadata.name);
    if (!existing) {
      try {
        await this.custom.createNamespacedCustomObject({ ...ARGO, namespace, body: desired });
        return;
      } catch (error) {
        if (!isConflict(error)) throw error; // 409: created meanwhile; fall through to read and patch it
      }
    }
    const current = existing ?? (await this.application(desired.metadata.name));
    if (!current || sameJson(current.spec, desired.spec)) return;
    // The platform's CNI moved on (a chart bump, another pod CIDR): a merge patch of the spec, as an install's
    // update, so Argo CD's own status writes are left alone.
    await this.custom.patchNamespacedCustomObject(
      { ...ARGO, namespace, name: desired.metadata.name, body: { spec: mergePatch(current.spec, desired.spec) } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  async getRelease(_clusterId: string, namespace: string, release: string): Promise<HelmRelease | undefined> {
    const application = await this.application(applicationName(namespace, release));
    return application && releaseOf(application);
  }

  async uninstallRelease(_clusterId: string, namespace: string, release: string): Promise<void> {
    const name = applicationName(namespace, release);
    // The resources finalizer makes Argo CD delete what the Application deployed before the Application goes.
    await this.custom.deleteNamespacedCustomObject({ ...ARGO, namespace: this.options.argocdNamespace, name }).catch(ignoreNotFound);
    await this.core.deleteNamespacedSecret({ name: repositorySecretName(name), namespace: this.options.argocdNamespace }).catch(ignoreNotFound);
  }

  private async application(name: string): Promise<ArgoApplication | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject({ ...ARGO, namespace: this.options.argocdNamespace, name })) as ArgoApplication;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  // --- pods and logs (tenant cluster) ---

  async listContainers(clusterId: string, namespace: string): Promise<PodContainer[]> {
    const core = (await this.tenant(clusterId)).makeApiClient(CoreV1Api);
    const pods = await core.listNamespacedPod({ namespace: k8sName(namespace) });
    return pods.items
      .filter((pod) => pod.status?.phase !== 'Pending' && !pod.metadata?.deletionTimestamp)
      .flatMap((pod) => (pod.spec?.containers ?? []).map((c) => ({ pod: pod.metadata!.name!, container: c.name })))
      .sort((a, b) => a.pod.localeCompare(b.pod) || a.container.localeCompare(b.container));
  }

  async *readLog(clusterId: string, namespace: string, target: PodContainer, options: ReadLogOptions): AsyncIterable<LogEntry> {
    if (options.signal.aborted) return;
    const tenant = await this.tenant(clusterId);
    // sinceTime has whole seconds: read from the second of the last line sent and drop what was sent by position.
    const since = Math.max(options.after ?? Number.NEGATIVE_INFINITY, options.since_ms === undefined ? Number.NEGATIVE_INFINITY : options.since_ms * 1000);
    const filter = { after: options.after, sinceMs: options.since_ms };
    const read = (follow: boolean, fromMicros: number, tailLines?: number) =>
      this.podLog(tenant, namespace, target, { follow, tailLines, sinceMicros: Number.isFinite(fromMicros) ? fromMicros : undefined }, options.signal);
    if (options.tail === undefined) {
      yield* logEntriesOf(read(options.follow, since), target, filter);
      return;
    }
    // A tail may start inside a run of lines with one timestamp, where positions would differ from a read of
    // the whole run: find where the tail starts, read from that second on, and keep the last `tail` lines.
    let first: number | undefined;
    for await (const raw of read(false, since, options.tail)) {
      first = parseStampedLine(raw)?.micros;
      if (first !== undefined) break;
    }
    let last = options.after;
    if (first !== undefined) {
      const entries: LogEntry[] = [];
      for await (const entry of logEntriesOf(read(false, Math.max(first, since)), target, filter)) entries.push(entry);
      for (const entry of entries.slice(Math.max(0, entries.length - options.tail))) {
        last = entry.position;
        yield entry;
      }
    }
    if (options.follow && !options.signal.aborted) {
      const fromMicros = last === undefined ? Date.now() * 1000 : last;
      yield* logEntriesOf(read(true, Math.max(fromMicros, since)), target, { after: last, sinceMs: options.since_ms });
    }
  }

  /** The raw lines of a container's log (timestamped); ends when the log does, the pod goes away, or `signal` aborts. */
  private async *podLog(
    tenant: KubeConfig,
    namespace: string,
    target: PodContainer,
    params: { follow: boolean; tailLines?: number; sinceMicros?: number },
    signal: AbortSignal,
  ): AsyncIterable<string> {
    const url = new URL(`${tenant.getCurrentCluster()!.server}/api/v1/namespaces/${k8sName(namespace)}/pods/${encodeURIComponent(target.pod)}/log`);
    url.searchParams.set('container', target.container);
    url.searchParams.set('timestamps', 'true');
    if (params.follow) url.searchParams.set('follow', 'true');
    if (params.tailLines !== undefined) url.searchParams.set('tailLines', String(params.tailLines));
    if (params.sinceMicros !== undefined) url.searchParams.set('sinceTime', sinceTimeOf(params.sinceMicros));
    // A plain node:http(s) request (credentials from the kubeconfig): a followed log is a response that never
    // ends, and the reader's signal must be able to close it.
    const request: https.RequestOptions = { method: 'GET', headers: { accept: 'text/plain' } };
    await tenant.applyToHTTPSOptions(request);
    try {
      const response = await new Promise<IncomingMessage>((resolve, reject) => {
        const send = url.protocol === 'https:' ? https.request : http.request;
        send(url, { ...request, signal }, resolve)
          .on('error', reject)
          .end();
      });
      // 404: the pod went away; 400: its container has not started yet (ContainerCreating): nothing to read.
      if (response.statusCode === 404 || response.statusCode === 400) {
        response.resume();
        return;
      }
      if (response.statusCode !== 200) {
        let body = '';
        for await (const chunk of response) body += chunk;
        throw new Error(`reading the log of ${target.pod}/${target.container}: HTTP ${response.statusCode} ${body.slice(0, 200)}`);
      }
      yield* createInterface({ input: response, crlfDelay: Number.POSITIVE_INFINITY });
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
  }
}

async function* logEntriesOf(lines: AsyncIterable<string>, target: PodContainer, filter: { after?: number; sinceMs?: number }): AsyncIterable<LogEntry> {
  const entry = logEntries(target, filter);
  for await (const raw of lines) {
    const parsed = entry(raw);
    if (parsed) yield parsed;
  }
}

function ignoreNotFound(error: unknown): void {
  if (!isNotFound(error)) throw error;
}

/** A bootstrap token's secret part: 16 characters of [a-z0-9]. */
function tokenSecret(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(16)].map((b) => alphabet[b % alphabet.length]).join('');
}
