// A double of Argo CD's application controller and repo server, on a test Kubernetes API server: what they write
// to an Application's status, written from Argo CD's source (argoproj/argo-cd 3.6), each rule naming its file.
// One `reconcile()` is one pass of the controller over every Application; each pass moves an Application one
// stage on (an auto-sync starts, finishes, the resources become healthy), as the real one takes several
// refreshes. The chart repositories it can reach are the test's (`addRepository`).
import { randomUUID } from 'node:crypto';
import type { KubeApiServer } from './kube-api-server.ts';

const APP = 'argoproj.io/v1alpha1/applications';

/** A chart repository: a Helm repository (its https URL) or an OCI registry path (oci://host/path), its charts' versions. */
export interface ChartRepository {
  url: string;
  charts: Record<string, string[]>;
  /** When set, the repository answers 401 unless Argo CD has a repository Secret with these. */
  credentials?: { username: string; password: string };
  /** The Services a chart renders (by chart name), which a sync applies to the destination namespace. */
  services?: Record<string, { name: string; type: 'ClusterIP' | 'LoadBalancer' }[]>;
}

type Application = {
  metadata: { name: string; namespace?: string; deletionTimestamp?: string };
  spec: {
    project: string;
    source: { repoURL: string; targetRevision?: string; chart?: string; path?: string };
    destination: { name?: string; server?: string };
  };
  status?: {
    sync?: { status: string; comparedTo?: unknown };
    health?: { status: string; message?: string };
    conditions?: { type: string; message: string; lastTransitionTime?: string }[];
    operationState?: { phase: string; message?: string; syncResult?: { source: unknown; revision: string } };
  };
};

const decode = (value: string | undefined) => (value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8'));
const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export class ArgoCdController {
  private readonly repositories = new Map<string, ChartRepository>();
  /** Applications whose repository error was met once (controller/state.go: repoErrorCache, its grace period). */
  private readonly repoErrorSeen = new Set<string>();
  /** Sync failures the test has in store for the next sync of an Application. */
  private readonly syncFailures = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly server: KubeApiServer;
  private readonly namespace: string;
  /** The destination clusters' API server (the tests have one tenant), where a sync applies what the chart renders. */
  private readonly tenant: KubeApiServer | undefined;

  constructor(server: KubeApiServer, namespace: string, tenant?: KubeApiServer) {
    this.server = server;
    this.namespace = namespace;
    this.tenant = tenant;
  }

  addRepository(repository: ChartRepository): this {
    this.repositories.set(repository.url.replace(/\/+$/, ''), repository);
    return this;
  }

  /** The next sync of this Application fails with this message (a hook or an apply that fails). */
  failNextSync(name: string, message: string): void {
    this.syncFailures.set(name, message);
  }

  /** Reconciles every `everyMs` (real time) until stopped. */
  start(everyMs = 50): this {
    this.timer = setInterval(() => this.reconcile(), everyMs);
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One pass of the application controller over every Application of its namespace. */
  reconcile(): void {
    for (const object of this.server.list(APP, this.namespace)) {
      const app = object as unknown as Application;
      if (app.metadata.deletionTimestamp) continue;
      const status = this.next(app);
      if (status && !same(status, app.status)) this.server.setStatus(APP, this.namespace, app.metadata.name, status);
    }
  }

  private next(app: Application): Application['status'] | undefined {
    const status = structuredClone(app.status ?? {});
    // controller/appcontroller.go refreshAppConditions: an unknown project (projectErrorToCondition) or, through
    // util/argo/argo.go ValidatePermissions, an unknown destination is an InvalidSpecError;
    // processAppRefreshQueueItem then sets sync and health Unknown.
    const destinationError = this.projectError(app.spec.project) ?? this.destinationError(app.spec.destination);
    if (destinationError) {
      return {
        ...status,
        sync: { status: 'Unknown' },
        health: { status: 'Unknown' },
        conditions: [{ type: 'InvalidSpecError', message: destinationError, lastTransitionTime: now() }],
      };
    }
    // controller/state.go CompareAppState: a repository error is ignored the first time (repoErrorGracePeriod),
    // then becomes a ComparisonError "Failed to load target state: …" (the repo server's error through gRPC).
    const sourceError = this.sourceError(app.spec.source, app.spec.project);
    if (sourceError) {
      if (!this.repoErrorSeen.has(app.metadata.name)) {
        this.repoErrorSeen.add(app.metadata.name);
        return undefined;
      }
      const message = `Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = ${sourceError}`;
      return { ...status, sync: { status: 'Unknown' }, conditions: [{ type: 'ComparisonError', message, lastTransitionTime: now() }] };
    }
    this.repoErrorSeen.delete(app.metadata.name);
    delete status.conditions;
    const source = app.spec.source;
    const comparedTo = { source, destination: app.spec.destination };
    const operation = status.operationState;
    // Auto-sync (appcontroller.go autoSync) starts a sync when the source differs from the one the last
    // operation synced (SyncOperationResult.Source, types.go); a failed one of the same source is not retried.
    if (!operation || !same(operation.syncResult?.source, source)) {
      return {
        ...status,
        sync: { status: 'OutOfSync', comparedTo },
        health: { status: 'Progressing' },
        operationState: {
          operation: { sync: { revision: source.targetRevision }, initiatedBy: { automated: true } },
          phase: 'Running',
          message: 'waiting for completion of hook and other resources',
          syncResult: { source, revision: source.targetRevision ?? '' },
          startedAt: now(),
        } as never,
      };
    }
    if (operation.phase === 'Running') {
      const failure = this.syncFailures.get(app.metadata.name);
      this.syncFailures.delete(app.metadata.name);
      if (!failure) this.apply(app);
      return {
        ...status,
        sync: { status: failure ? 'OutOfSync' : 'Synced', comparedTo },
        operationState: {
          ...operation,
          phase: failure ? 'Failed' : 'Succeeded',
          message: failure ?? 'successfully synced (all tasks run)',
          finishedAt: now(),
        } as never,
      };
    }
    if (operation.phase === 'Succeeded' && status.health?.status === 'Progressing') {
      // controller/health.go setApplicationHealth: the worst of its resources' health. A Service of type
      // LoadBalancer is Progressing until it has an ingress address (gitops-engine, pkg/health/health_service.go).
      const waiting = this.servicesOf(app).filter((service) => service.type === 'LoadBalancer' && !this.hasIngress(app, service.name));
      if (waiting.length > 0) return status;
      return { ...status, health: { status: 'Healthy' } };
    }
    return status;
  }

  /** The Services the Application's chart renders, from its repository. */
  private servicesOf(app: Application): { name: string; type: string }[] {
    const { repoURL, chart } = app.spec.source;
    return (chart && this.repositories.get(repoURL.replace(/\/+$/, ''))?.services?.[chart]) || [];
  }

  private hasIngress(app: Application, name: string): boolean {
    const service = this.tenant?.get('v1/services', (app.spec.destination as { namespace?: string }).namespace, name);
    return ((service?.status as { loadBalancer?: { ingress?: unknown[] } } | undefined)?.loadBalancer?.ingress?.length ?? 0) > 0;
  }

  /** A sync applies the chart's Services to the destination namespace (gitops-engine's sync: create or update). */
  private apply(app: Application): void {
    const namespace = (app.spec.destination as { namespace?: string }).namespace;
    if (!this.tenant || !namespace) return;
    for (const service of this.servicesOf(app)) {
      const existing = this.tenant.get('v1/services', namespace, service.name);
      this.tenant.put('v1/services', {
        metadata: { name: service.name, namespace, uid: existing?.metadata.uid ?? randomUUID() },
        spec: { type: service.type, selector: { app: service.name }, ports: [{ port: 80, targetPort: 9898 }] },
        ...(existing?.status ? { status: existing.status } : {}),
      });
    }
  }

  private projectError(project: string): string | undefined {
    if (project === 'default' || this.server.get('argoproj.io/v1alpha1/appprojects', this.namespace, project)) return undefined;
    return `Application referencing project ${project} which does not exist`;
  }

  /** util/argo/argo.go GetDestinationServer: a destination by name is a cluster Secret of that name. */
  private destinationError(destination: Application['spec']['destination']): string | undefined {
    if (!destination.name) return undefined;
    const clusters = this.server
      .list('v1/secrets', this.namespace)
      .filter((s) => s.metadata.labels?.['argocd.argoproj.io/secret-type'] === 'cluster')
      .filter((s) => decode((s as { data?: Record<string, string> }).data?.name) === destination.name);
    return clusters.length === 0 ? `Unable to get cluster: there are no clusters with this name: ${destination.name}` : undefined;
  }

  /**
   * The repo server's answer for a chart source. A Helm repository: util/helm/client.go loadRepoIndex ("failed to
   * get index: 404 Not Found" / "401 Unauthorized"), util/helm/index.go GetEntries ("chart '…' not found in
   * index"). An OCI artifact (oci://registry/path/chart, util/oci/client.go): its digest for the revision.
   * Credentials are a repository Secret whose url is the source's repoURL, of the Application's project or of none
   * (util/db/repository_secrets.go getRepositorySecret: the project's own first, else an unscoped one).
   */
  private sourceError(source: Application['spec']['source'], project: string): string | undefined {
    const oci = source.repoURL.startsWith('oci://');
    if (!oci && !source.chart) return undefined; // a Git folder: not modelled here
    const chart = oci ? source.repoURL.split('/').at(-1)! : source.chart!;
    const url = oci ? source.repoURL.slice(0, source.repoURL.lastIndexOf('/')) : source.repoURL.replace(/\/+$/, '');
    const repository = this.repositories.get(url);
    const reference = `${source.repoURL.replace('oci://', '')}:${source.targetRevision}`;
    if (!repository)
      return oci
        ? `cannot get digest for revision ${source.targetRevision}: ${reference}: not found`
        : 'error loading repo index: failed to get index: 404 Not Found';
    if (repository.credentials && !this.hasCredentials(source.repoURL, oci ? 'oci' : 'helm', project, repository.credentials)) {
      return oci
        ? `cannot get digest for revision ${source.targetRevision}: response status code 401: unauthorized: authentication required`
        : 'error loading repo index: failed to get index: 401 Unauthorized';
    }
    const versions = repository.charts[chart];
    if (!versions) return oci ? `cannot get digest for revision ${source.targetRevision}: ${reference}: not found` : `chart '${chart}' not found in index`;
    if (!versions.includes(source.targetRevision ?? '')) return `invalid revision: version ${source.targetRevision} of chart ${chart} not found`;
    return undefined;
  }

  private hasCredentials(url: string, type: string, project: string, credentials: { username: string; password: string }): boolean {
    const candidates = this.server
      .list('v1/secrets', this.namespace)
      .filter((s) => s.metadata.labels?.['argocd.argoproj.io/secret-type'] === 'repository')
      .map((s) => (s as { data?: Record<string, string> }).data ?? {})
      .filter((data) => decode(data.url) === url);
    const secret = candidates.find((data) => decode(data.project) === project) ?? candidates.find((data) => !data.project);
    return (
      secret !== undefined &&
      decode(secret.type) === type &&
      decode(secret.username) === credentials.username &&
      decode(secret.password) === credentials.password
    );
  }
}
