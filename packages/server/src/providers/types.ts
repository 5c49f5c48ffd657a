// The two outside systems the workflows drive. Shaped after Hetzner Cloud's API (servers, images of type
// snapshot, labels, actions that take time) and after Kubernetes with helm (releases in a namespace, pods,
// the pod-log API's tailLines/sinceTime/follow), so real implementations fit without changing callers.
//
// Every method is safe to call again after a crash: creation takes the caller's idempotency `label`
// (a workflow id) and a second call with the same label returns what the first created.

import type { Kubeconfig } from './kubeconfig.ts';

export interface ServerOffering {
  name: string;
  cpu: number;
  memory_bytes: number;
  /** The regions where it is on sale to new machines (available there, not deprecated there); absent: every region. */
  locations?: string[];
}

/** Whether a new machine in `region` may be given `offering`. */
export const onSaleIn = (offering: ServerOffering, region: string): boolean => offering.locations === undefined || offering.locations.includes(region);

/** Hetzner Cloud's server status set. */
export type ServerStatus = 'initializing' | 'starting' | 'running' | 'stopping' | 'off' | 'deleting' | 'migrating' | 'rebuilding' | 'unknown';

export interface Server {
  id: string;
  name: string;
  status: ServerStatus;
  server_type: string;
  image: string;
  location: string;
  labels: Record<string, string>;
  /** The server runs an image made from a server (a snapshot), so `image` names that, not a system image. */
  from_snapshot?: boolean;
}

export type SnapshotStatus = 'creating' | 'available' | 'failed';

export interface Snapshot {
  id: string;
  server_id: string;
  status: SnapshotStatus;
  labels: Record<string, string>;
}

export interface CreateServerRequest {
  name: string;
  server_type: string;
  location: string;
  /** An image name, or a snapshot id for a server restored from a snapshot. */
  image: string;
  /** Labels the provider stores with the server; `workflow` makes the call idempotent. */
  labels: Record<string, string> & { workflow: string };
  /** A BYOM machine is created with the user's own key (sealed secret opened by the caller). */
  credential?: ProviderCredential;
  /** Cloud-init user data run at first boot (a worker's kubeadm join script). */
  user_data?: string;
  /** The cluster the server is a node of: its nodes share a firewall that admits each other. */
  cluster_id?: string;
}

/**
 * A user's own cloud token (BYOM) and the id of the cloud credential it was opened from, which errors name.
 * Every call about a BYOM machine's server or snapshot passes it: they live in the user's cloud project.
 */
export interface ProviderCredential {
  id: string;
  token: string;
}

/** What a cluster's cloud controller manager needs of the machines' cloud project (ClusterDriver.ensureCloudController). */
export interface CloudControllerRequest {
  cluster_id: string;
  /** The project's API token. */
  token: string;
  /** The cloud API's address when it is not the provider's own. */
  endpoint?: string;
  /** Where new load balancers go: the cluster's region. */
  location: string;
}

/** A cloud provider account (Hetzner Cloud's `/servers`, `/images`, `/server_types`). */
export interface ComputeProvider {
  offerings(credential?: ProviderCredential): Promise<ServerOffering[]>;
  /**
   * What a cloud controller manager in a cluster of this project's servers reaches the provider with: the project's
   * token (the BYOM credential's, else the platform's) and the API's address. Absent where no cloud controller
   * manager runs (the simulated cloud).
   */
  cloudControllerAccess?(credential?: ProviderCredential): { token: string; endpoint: string } | undefined;
  /** Creates a server, or returns the one already created with the same `labels.workflow`. */
  createServer(request: CreateServerRequest): Promise<Server>;
  /** The actual state of a server; undefined when it does not exist (any more). */
  getServer(id: string, credential?: ProviderCredential): Promise<Server | undefined>;
  /** Graceful shutdown (ACPI); the server reaches `off`. */
  shutdownServer(id: string, credential?: ProviderCredential): Promise<void>;
  /** Powers a server that is `off` on again (it boots to `running`); one that is not off, or gone, is left as it is. */
  powerOnServer(id: string, credential?: ProviderCredential): Promise<void>;
  /** Deleting a server that is gone already succeeds. */
  deleteServer(id: string, credential?: ProviderCredential): Promise<void>;
  /** Snapshots a server, or returns the snapshot already made with the same `labels.workflow`. */
  createSnapshot(serverId: string, labels: Record<string, string> & { workflow: string }, credential?: ProviderCredential): Promise<Snapshot>;
  getSnapshot(id: string, credential?: ProviderCredential): Promise<Snapshot | undefined>;
  deleteSnapshot(id: string, credential?: ProviderCredential): Promise<void>;
  /**
   * The servers, snapshots and cluster firewalls of the account that this installation of the platform made (they
   * carry its managed-by label), with their labels (`workflow`, `machine`, `cluster`), for the leftovers reconciler
   * (jobs/leftovers.ts). The three below are absent where nothing can be left over (the simulated cloud
   * deletes with its machines' rows and has no firewalls).
   */
  listLabelled?(credential?: ProviderCredential): Promise<LabelledResource[]>;
  /** Deletes a cluster's firewall; one still applied to a server is refused (a `busy` ProviderError). */
  deleteFirewall?(id: string, credential?: ProviderCredential): Promise<void>;
  /**
   * Deletes what a deleted cluster has in the project besides its servers: the load balancers made for it, and its
   * firewall if it has one (one still applied to a server is left as it is, for the leftovers run).
   */
  deleteClusterResources?(clusterId: string, credential?: ProviderCredential): Promise<void>;
  /** Deletes a load balancer made for a cluster (a leftover); one that is gone already is fine. */
  deleteLoadBalancer?(id: string, credential?: ProviderCredential): Promise<void>;
  /** Brings the cluster firewall's rules up to date with the cluster's servers, when they differ. */
  refreshFirewall?(clusterId: string, credential?: ProviderCredential): Promise<void>;
}

export interface LabelledResource {
  kind: 'server' | 'snapshot' | 'firewall' | 'load_balancer';
  id: string;
  labels: Record<string, string>;
}

/**
 * What a workflow does about a provider's error (providers/hetzner/compute.ts maps Hetzner's codes to these):
 * - `credential_refused`: the token is refused (unknown, revoked, read-only): fail now, naming the credential;
 * - `permission_missing`: the token lacks a permission the call needs: fail now, naming the credential;
 * - `project_limit`: the cloud project's own limit (a quota), not the token: fail now, saying so;
 * - `refused`: the request cannot succeed as sent (input, capacity, placement, a name taken): fail now with the
 *   provider's message;
 * - `busy`: the resource is locked by another action or changed meanwhile: retry after a short wait, bounded;
 * - `unavailable`: the provider is down, overloaded or in maintenance: retry with the failure backoff.
 */
export type ProviderErrorKind = 'credential_refused' | 'permission_missing' | 'project_limit' | 'refused' | 'busy' | 'unavailable';

/** The kinds a retry cannot fix: the workflow fails at once with the message. */
const FINAL_KINDS: ReadonlySet<ProviderErrorKind> = new Set(['credential_refused', 'permission_missing', 'project_limit', 'refused']);

/** The provider answered with an error; `kind` says what the workflow does about it, `code` is the provider's. */
export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly code: string;
  constructor(kind: ProviderErrorKind, code: string, message: string) {
    super(message);
    this.name = 'ProviderError';
    this.kind = kind;
    this.code = code;
  }

  /** A retry cannot succeed: the workflow fails now. */
  get final(): boolean {
    return FINAL_KINDS.has(this.kind);
  }
}

/**
 * The provider refused the token (`credential_refused`): retrying cannot help, so the workflow fails at once.
 * `credential` names which token (the platform's, or a BYOM cloud credential's id), never the token itself.
 */
export class ProviderAuthError extends ProviderError {
  readonly credential: string;
  constructor(credential: string, code: string, detail?: string) {
    super('credential_refused', code, `The cloud provider refused ${credential} (${code}${detail ? `: ${detail}` : ''}); replace the token and retry.`);
    this.name = 'ProviderAuthError';
    this.credential = credential;
  }
}

export type HelmChart = { repo_url: string; target_revision: string; chart?: string; path?: string };

/**
 * Which of a chart's two locations is used: the chart repository's chart when `chart` is not empty, else the Git
 * repository's folder `path`; undefined when both are missing or empty (the product refuses such a source).
 */
export function chartLocation(chart: HelmChart): { chart: string } | { path: string } | undefined {
  if (chart.chart) return { chart: chart.chart };
  if (chart.path) return { path: chart.path };
  return undefined;
}

export interface HelmReleaseRequest {
  cluster_id: string;
  /** One namespace per install. */
  namespace: string;
  /** One release per product source. */
  release: string;
  chart: HelmChart;
  values: Record<string, unknown>;
  /** The product template the release renders, recorded as a release annotation. */
  template_id: string;
  /** Registry credentials the release's pods pull their images with (passed to the chart as imagePullSecrets). */
  pull_secrets?: { server: string; username: string; password: string }[];
}

export type ReleaseStatus = 'pending-install' | 'pending-upgrade' | 'deployed' | 'failed';

export interface HelmRelease {
  namespace: string;
  release: string;
  status: ReleaseStatus;
  revision: number;
  template_id: string;
  /** Why the release failed, from helm's or the pods' events; while pending, what its deployer reports it waits on. */
  message: string | null;
  /** An error its deployer reports while it is pending (Argo CD's ComparisonError, …): it may clear, or fail the install. */
  condition?: string;
}

export interface PodContainer {
  pod: string;
  container: string;
}

export interface LogEntry extends PodContainer {
  /** Unix milliseconds at which the container wrote the line. */
  timestamp_ms: number;
  line: string;
  /** The container's position after this line; `after` resumes from it (kubelet: sinceTime plus a count). */
  position: number;
}

export interface ReadLogOptions {
  /** Only the last `tail` lines of what is there (the pod-log API's tailLines). */
  tail?: number;
  /** Only lines written at or after this moment (Unix ms; the pod-log API's sinceTime). */
  since_ms?: number;
  /** Only lines after this position, from an earlier LogEntry. */
  after?: number;
  /** Keep the stream open and yield lines as they are written. */
  follow: boolean;
  signal: AbortSignal;
}

/**
 * A control plane's state: PROVISIONING until it first serves; RUNNING while it serves (also while it changes: an
 * upgrade, a roll, a certificate rotation, its `message` says which); UNAVAILABLE when it served once and serves no
 * more (asleep, no ready replica); ERROR; DELETING while it is being torn down.
 */
export type ControlPlaneStatus = 'PROVISIONING' | 'RUNNING' | 'UNAVAILABLE' | 'ERROR' | 'DELETING';

/** A call that needs the cluster's control plane found it not serving (its message says why): it may serve again later. */
export class ControlPlaneUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ControlPlaneUnavailable';
  }
}

export interface ControlPlaneRequest {
  cluster_id: string;
  /** The patch release the control plane runs ("v1.35.9"): the cluster's `kaas_release`. */
  kubernetes_release: string;
}

export interface ControlPlane {
  cluster_id: string;
  status: ControlPlaneStatus;
  /** Why it is in ERROR or UNAVAILABLE, or what changes while it runs, from the control plane's status; null when nothing is to be said. */
  message: string | null;
  /** The API server's address, once known. */
  endpoint: string | null;
}

export interface JoinRequest {
  cluster_id: string;
  /** The machine's id: one join token per machine, the same one on a re-run. */
  machine_id: string;
  node_name: string;
  /** The control plane's patch release ("v1.35.9"): the node installs the kubelet and kubeadm of exactly it. */
  kubernetes_release: string;
  /** How long the join token lives: the boot deadline (MACHINE_BOOT_TIMEOUT_SECONDS), by which the node has joined or never will. */
  token_ttl_seconds: number;
  /** The cluster has a cloud controller manager: the kubelet leaves the node's cloud setup to it (`--cloud-provider=external`). */
  external_cloud_provider?: boolean;
}

/** A managed Kubernetes cluster: its control plane, its nodes, and helm releases in it. */
export interface ClusterDriver {
  /** Creates the cluster's control plane, or returns the one already created for the cluster. */
  createCluster(request: ControlPlaneRequest): Promise<ControlPlane>;
  /** The control plane's actual state; undefined when it does not exist (any more). */
  getCluster(clusterId: string): Promise<ControlPlane | undefined>;
  /**
   * Every cluster's control plane as it is now, for the workers' watch (jobs/control-planes.ts), which also keeps
   * what others hold of the clusters' credentials current (Argo CD's). Absent where control planes change only
   * through the platform (the simulated cloud).
   */
  controlPlanes?(): Promise<ControlPlane[]>;
  /** Tears the control plane down; deleting what is gone succeeds. */
  deleteCluster(clusterId: string): Promise<void>;
  /** Mints the machine's join token and returns the cloud-init `user_data` that joins the cluster with it. */
  joinMachine(request: JoinRequest): Promise<{ user_data: string }>;
  /**
   * Deletes the machine's join token: its node has joined, or its boot was given up. The token sits in the server's
   * user data, which the metadata service serves to any pod on the node; gone, it joins nothing more. Deleting one
   * that is gone succeeds.
   */
  endJoin(clusterId: string, machineId: string): Promise<void>;
  /** A kubeconfig of the cluster's API server whose token (cluster-admin) expires after ttlSeconds. */
  kubeconfig(clusterId: string, ttlSeconds: number): Promise<Kubeconfig>;
  /** Installs the cluster's pod network (a CNI) once its control plane runs; installing it again changes nothing. */
  ensureNetwork(clusterId: string): Promise<void>;
  /** Whether the node has joined and is Ready (and, with a cloud controller manager, initialised by it). */
  nodeReady(clusterId: string, nodeName: string): Promise<boolean>;
  /** Removes the node from the cluster: its machine is deleted, or its boot given up. Removing one that is gone succeeds. */
  removeNode(clusterId: string, nodeName: string): Promise<void>;
  /**
   * Installs the cluster's cloud controller manager (load balancers for its Services, Nodes of servers that are gone
   * removed) with its project's token, or brings it up to date; absent where there is none to install.
   */
  ensureCloudController?(request: CloudControllerRequest): Promise<void>;
  /** `helm upgrade --install`: installs the release or upgrades it to the given chart and values. */
  upsertRelease(request: HelmReleaseRequest): Promise<HelmRelease>;
  getRelease(clusterId: string, namespace: string, release: string): Promise<HelmRelease | undefined>;
  /** `helm uninstall`; the release's pods go away. Uninstalling what is gone succeeds. */
  uninstallRelease(clusterId: string, namespace: string, release: string): Promise<void>;
  /** Containers of the pods running in the namespace, in a stable order. */
  listContainers(clusterId: string, namespace: string): Promise<PodContainer[]>;
  /** One container's log, oldest first. */
  readLog(clusterId: string, namespace: string, target: PodContainer, options: ReadLogOptions): AsyncIterable<LogEntry>;
}
