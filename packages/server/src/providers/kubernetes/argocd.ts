// Argo CD as it reports itself, read from its source (argoproj/argo-cd, checked against 3.6): the Application's
// source for a chart (Helm repository, OCI registry or Git folder), the repository Secret that carries a chart
// repository's credentials, the merge patch that moves an Application's spec, and the release status read from
// `status` (conditions, operationState, sync and health).
import type { V1Secret } from '@kubernetes/client-node';
import { chartLocation, type HelmRelease, type HelmReleaseRequest, type ReleaseStatus } from '../types.ts';
import { LABEL } from './labels.ts';

export interface ArgoApplication {
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec: { source: Record<string, unknown> } & Record<string, unknown>;
  status?: {
    sync?: { status?: string; comparedTo?: { source?: unknown } };
    health?: { status?: string; message?: string };
    // pkg/apis/application/v1alpha1/types.go: OperationState, SyncOperationResult.Source (the source synced).
    operationState?: { phase?: string; message?: string; syncResult?: { source?: unknown } };
    // types.go: ApplicationCondition; IsError() is a type ending in "Error".
    conditions?: { type: string; message?: string }[];
  };
}

const isOci = (repoURL: string) => repoURL.startsWith('oci://');

/**
 * The Application's source. An `oci://` chart repository takes Argo CD's native OCI form (docs/user-guide/oci.md):
 * the chart's own artifact as repoURL, `path: .`, the chart version as targetRevision; a Helm repository names its
 * chart; a Git repository its folder.
 */
export function applicationSource(request: HelmReleaseRequest, values: Record<string, unknown>): { repoURL: string } & Record<string, unknown> {
  const { repo_url, target_revision } = request.chart;
  const location = chartLocation(request.chart);
  const helm = { releaseName: request.release, valuesObject: values };
  if (isOci(repo_url) && location && 'chart' in location) {
    return { repoURL: `${repo_url.replace(/\/+$/, '')}/${location.chart}`, targetRevision: target_revision, path: '.', helm };
  }
  return { repoURL: repo_url, targetRevision: target_revision, ...location, helm };
}

/** The host of a registry or repository address, with or without a scheme. */
export function hostOf(address: string): string | undefined {
  try {
    return new URL(address.includes('://') ? address : `https://${address}`).host.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * A repository Secret (docs/operator-manual/declarative-setup.md, "Repositories" and "Helm") with the workspace's
 * registry credential for the chart repository's host, for a chart source; undefined when none matches. Argo CD
 * looks a repository up by its exact URL: the source's repoURL. An OCI source is of type `oci`, a Helm one `helm`.
 * Scoped to the Application's project (the cluster's), so no other workspace's Application is served with it.
 */
export function repositorySecret(
  request: HelmReleaseRequest,
  source: { repoURL: string } & Record<string, unknown>,
  project: string,
  metadata: V1Secret['metadata'],
): V1Secret | undefined {
  const url = source.repoURL;
  if (!isOci(url) && source.chart === undefined) return undefined;
  const host = hostOf(url);
  const credential = request.pull_secrets?.find((c) => host !== undefined && hostOf(c.server) === host);
  if (!credential) return undefined;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { ...metadata, labels: { ...metadata?.labels, 'argocd.argoproj.io/secret-type': 'repository' } },
    type: 'Opaque',
    stringData: { name: metadata?.name ?? url, url, type: isOci(url) ? 'oci' : 'helm', project, username: credential.username, password: credential.password },
  };
}

/**
 * A JSON merge patch (RFC 7386) from `from` to `to`: keys gone are null, objects are patched key by key, anything
 * else is replaced. Sent as a patch, it leaves what Argo CD writes (status, its own annotations) as it is.
 */
export function mergePatch(from: unknown, to: unknown): unknown {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(from) || !isObject(to)) return to;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(from)) if (!(key in to)) patch[key] = null;
  for (const [key, value] of Object.entries(to)) {
    if (sameJson(from[key], value)) continue;
    patch[key] = mergePatch(from[key], value);
  }
  return patch;
}

/** Key-order-independent equality of JSON values (Argo CD echoes the source it compared, keys reordered). */
export function sameJson(a: unknown, b: unknown): boolean {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/**
 * Argo CD's status → the release status. Deployed once the current source is synced and healthy. A finished
 * operation counts only when it synced the current source (SyncOperationResult.Source): a failure of the
 * previous source says nothing about this one. An error condition (ComparisonError for a chart or repository it
 * cannot read, InvalidSpecError for an unknown destination, SyncError, …) is reported as the release's
 * `condition` while it pends: it may clear (controller/state.go retries a repository error), so the workflow
 * decides when it has lasted too long.
 */
export function releaseOf(application: ArgoApplication): HelmRelease {
  const revision = Number(application.metadata.annotations?.[LABEL.revision] ?? 1);
  const { sync, health, operationState, conditions } = application.status ?? {};
  const source = application.spec.source;
  const current = operationState?.syncResult !== undefined && sameJson(operationState.syncResult.source, source);
  let status: ReleaseStatus = revision > 1 ? 'pending-upgrade' : 'pending-install';
  let message: string | null = null;
  const compared = sync?.status === 'Synced' && sameJson(sync.comparedTo?.source, source);
  if (current && (operationState.phase === 'Failed' || operationState.phase === 'Error')) {
    status = 'failed';
    message = operationState.message || `Argo CD sync ${operationState.phase.toLowerCase()}`;
  } else if (compared && health?.status === 'Degraded') {
    status = 'failed';
    message = health.message || 'Degraded';
  } else if (compared && health?.status === 'Healthy') {
    status = 'deployed';
  } else {
    // Why it is not there yet, in Argo CD's words: the running operation's message, else the health's.
    message = (current && operationState.message) || health?.message || null;
  }
  const error = conditions?.find((c) => c.type.endsWith('Error'));
  return {
    namespace: application.metadata.labels?.[LABEL.install] ?? application.metadata.namespace,
    release: String((source.helm as { releaseName?: string } | undefined)?.releaseName ?? application.metadata.name),
    status,
    revision,
    template_id: application.metadata.annotations?.[LABEL.template] ?? '',
    message,
    // A deleted Application reports why its resources are not gone (DeletionError), deployed or not.
    ...((status !== 'deployed' || application.metadata.deletionTimestamp) && error ? { condition: `${error.type}: ${error.message ?? ''}`.trim() } : {}),
  };
}
