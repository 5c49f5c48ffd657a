// A worker booting from its user_data, in kubeadm's and the kubelet's place, against the test tenant API server:
// it reads the `#cloud-config` as cloud-init does, finds the `kubeadm join` its runcmd ends with, and joins only
// when kubeadm would — the endpoint is the cluster's, the token is a live bootstrap token the cluster knows, and the
// CA hash pins the cluster's CA. It installs kubelet and kubeadm as apt would from the pkgs.k8s.io repository the
// runcmd names (a pinned version, or the repository's newest), and kubeadm reads the cluster's kubeadm-config as its
// version can. The joined node reports Ready only once the cluster's pod network is up, and its kubelet's version,
// as the kubelet does. (Whether the rest of the cloud-config would install a working kubelet is checked apart,
// with Debian's cloud-init; see kubernetes-driver.test.ts.)
import { createHash, X509Certificate } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { type KubeApiServer, TEST_CA_PEM } from './kube-api-server.ts';

/** A `kubeadm join` line of a cloud-config's runcmd, its flags by name. */
export interface KubeadmJoin {
  endpoint: string;
  flags: Record<string, string>;
}

/** The shell lines of a cloud-config's runcmd (a list of arguments is no shell line). */
function shellLines(userData: string): string[] {
  const config = parseYaml(userData) as { runcmd?: (string | string[])[] };
  return (config.runcmd ?? []).filter((c): c is string => typeof c === 'string');
}

/**
 * pkgs.k8s.io: one repository per minor (core:/stable:/v1.<minor>/deb/), holding every patch release of it as
 * Debian version "<release>-1.1". `published` is what the test says is out; a later patch may be published while
 * a cluster lives.
 */
export class PackageRepository {
  private readonly releases = new Map<string, string[]>();
  constructor(published: string[]) {
    for (const release of published) this.publish(release);
  }
  publish(release: string): void {
    const minor = release.split('.').slice(0, 2).join('.');
    this.releases.set(minor, [...(this.releases.get(minor) ?? []), release]);
  }
  /**
   * What `apt-get install <name>` or `<name>='<version>-*'` installs from the repository of `minor`: a pinned version
   * (apt's glob on the Debian version), or the newest; apt's own error otherwise.
   */
  resolve(minor: string, spec: string): { name: string; version: string } {
    const [, name, pin] = /^([a-z-]+)(?:='?([0-9.]+)-\*'?)?$/.exec(spec) ?? [];
    if (!name) throw new Error(`E: Unable to locate package ${spec}`);
    const releases = (this.releases.get(minor) ?? []).map((r) => r.replace(/^v/, ''));
    const numeric = (v: string) => v.split('.').map(Number) as [number, number, number];
    const newest = releases.sort((a, b) => numeric(a)[2] - numeric(b)[2]).at(-1);
    if (pin === undefined) {
      if (!newest) throw new Error(`E: Unable to locate package ${name}`);
      return { name, version: newest };
    }
    if (!releases.includes(pin)) throw new Error(`E: Version '${pin}-*' for '${name}' was not found`);
    return { name, version: pin };
  }
}

/** The kubelet and kubeadm the runcmd installs: from the repository its sources line names, as apt resolves them. */
export function installedKubernetes(userData: string, repository: PackageRepository): { kubelet: string; kubeadm: string } {
  const lines = shellLines(userData);
  const source = lines.map((l) => /pkgs\.k8s\.io\/core:\/stable:\/(v\d+\.\d+)\/deb\/ \//.exec(l)).find(Boolean);
  if (!source) throw new Error('no pkgs.k8s.io repository in the runcmd: kubelet and kubeadm cannot be installed');
  const install = lines.map((l) => /apt-get install -y ([^&]+)/.exec(l)).find((m) => m?.[1]?.includes('kubeadm'));
  if (!install) throw new Error('the runcmd installs no kubeadm');
  const installed: Record<string, string> = {};
  for (const spec of install[1]!.trim().split(/\s+/)) {
    const { name, version } = repository.resolve(source[1]!, spec);
    installed[name] = version;
  }
  if (!installed.kubelet || !installed.kubeadm) throw new Error('the runcmd installs no kubelet or no kubeadm');
  return { kubelet: installed.kubelet, kubeadm: installed.kubeadm };
}

/**
 * Which kubeadm minors read a ClusterConfiguration of each API version from kube-system/kubeadm-config. kubeadm
 * join decodes it with its scheme (cmd/kubeadm/app/util/config/cluster.go, getInitConfigurationFromCluster:
 * runtime.DecodeInto with kubeadmscheme.Codecs.UniversalDecoder), so a version its scheme does not register
 * (cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go) fails. v1beta3: added in 1.22 (kubernetes#101129), removed in
 * 1.36 (kubernetes#136016). v1beta4: registered since 1.28 (kubernetes#118866), but its extraArgs became a list of
 * name/value pairs only in 1.29, so a 1.28 kubeadm fails to decode a v1beta4 written by a later one (the log in
 * clastix/kamaji#650).
 */
const CONFIG_API_MINORS: Record<string, { registered: number; decodes: number; removed: number }> = {
  'kubeadm.k8s.io/v1beta3': { registered: 22, decodes: 22, removed: 36 },
  'kubeadm.k8s.io/v1beta4': { registered: 28, decodes: 29, removed: Number.POSITIVE_INFINITY },
};

/** Why a kubeadm of `kubeadmVersion` ("1.30.14") cannot read the cluster's ClusterConfiguration; undefined if it can. */
export function kubeadmConfigRefusal(kubeadmVersion: string, apiVersion: string): string | undefined {
  const minor = Number(kubeadmVersion.split('.')[1]);
  const rule = CONFIG_API_MINORS[apiVersion];
  const prefix = 'unable to fetch the kubeadm-config ConfigMap: failed to decode cluster configuration data: ';
  if (!rule || minor < rule.registered || minor >= rule.removed)
    return `${prefix}no kind "ClusterConfiguration" is registered for version "${apiVersion}" in scheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go:31"`;
  if (minor < rule.decodes) return `${prefix}json: cannot unmarshal array into Go struct field APIServer.apiServer.extraArgs of type map[string]string`;
  return undefined;
}

// cloud-init reads user data starting with "#cloud-config" as cloud-config YAML (cloud-init's docs, "User data
// formats: Cloud config data"); a runcmd entry is a string for the shell or a list of arguments
// (cloudinit/config/cc_runcmd.py, its schema: "array of (string | array of string)").
export function kubeadmJoinOf(userData: string): KubeadmJoin {
  if (!userData.startsWith('#cloud-config\n')) throw new Error('the user_data is no #cloud-config: cloud-init would not read it as one');
  const config = parseYaml(userData) as { runcmd?: (string | string[])[] };
  const commands = (config.runcmd ?? []).map((c) => (Array.isArray(c) ? c : c.split(/\s+/)));
  const joins = commands.filter((c) => c[0] === 'kubeadm' && c[1] === 'join');
  if (joins.length !== 1) throw new Error(`runcmd has ${joins.length} kubeadm join commands, not one`);
  if (commands.at(-1) !== joins[0]) throw new Error('kubeadm join is not the last command: the node would join before it is prepared');
  const [, , endpoint, ...rest] = joins[0]!;
  const flags: Record<string, string> = {};
  for (let i = 0; i < rest.length; i += 2) flags[rest[i]!.replace(/^--/, '')] = rest[i + 1]!;
  return { endpoint: endpoint!, flags };
}

/** The flags of `kubeadm join` that a token-discovery worker join uses (cmd/kubeadm/app/cmd/join.go, options). */
const JOIN_FLAGS = new Set(['token', 'discovery-token-ca-cert-hash', 'node-name']);
// k8s.io/cluster-bootstrap/token/api/types.go: BootstrapTokenPattern.
const TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;

/**
 * The releases pkgs.k8s.io has published of the minors the platform offers, as the Kubernetes release pages list
 * them (kubernetes.io/releases/1.<minor>), and two older lines a test may pin.
 */
export const PUBLISHED = ['v1.27.16', 'v1.28.15', 'v1.30.14', 'v1.31.13', 'v1.32.9', 'v1.35.9', 'v1.36.4'];

/** NodeSystemInfo (core/v1) as a kubelet reports it; only the versions matter here. */
const nodeInfo = (kubeletVersion: string) => ({
  architecture: 'amd64',
  bootID: '',
  containerRuntimeVersion: 'containerd://1.7.28',
  kernelVersion: '6.8.0-71-generic',
  kubeProxyVersion: '',
  kubeletVersion,
  machineID: '',
  operatingSystem: 'linux',
  osImage: 'Ubuntu 24.04.3 LTS',
  systemUUID: '',
});

export const CNI_NOT_READY =
  'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized';

export class KubeadmWorker {
  private readonly tenant: KubeApiServer;
  /** Whether the cluster's pod network (its CNI) is up: the kubelet reports NetworkReady only then. */
  private readonly networkReady: () => boolean;
  /** The joined nodes, each with its kubelet's version. */
  private readonly nodes = new Map<string, string>();
  /** pkgs.k8s.io, where the servers install kubelet and kubeadm from. */
  readonly repository: PackageRepository;

  constructor(tenant: KubeApiServer, networkReady: () => boolean, repository = new PackageRepository(PUBLISHED)) {
    this.tenant = tenant;
    this.networkReady = networkReady;
    this.repository = repository;
  }

  /** Boots a server from its user_data: joins the cluster as kubeadm would, or throws kubeadm's reason. */
  boot(userData: string): string {
    const join = kubeadmJoinOf(userData);
    const installed = installedKubernetes(userData, this.repository);
    for (const flag of Object.keys(join.flags)) if (!JOIN_FLAGS.has(flag)) throw new Error(`unknown flag: --${flag}`);
    if (join.endpoint !== new URL(this.tenant.url).host)
      throw new Error(`couldn't validate the identity of the API Server: ${join.endpoint} is not the cluster`);
    const token = TOKEN.exec(join.flags.token ?? '');
    if (!token) throw new Error(`the bootstrap token "${join.flags.token}" was not of the form "${TOKEN.source}"`);
    // Token discovery: the cluster-info ConfigMap is signed (JWS) only for a live token with
    // usage-bootstrap-signing (pkg/controller/bootstrap/bootstrapsigner.go); kubeadm then pins the CA it carries
    // (cmd/kubeadm/app/discovery/token/token.go, util/pubkeypin: sha256 of the CA's SubjectPublicKeyInfo).
    const secret = this.liveToken(token[1]!, token[2]!);
    if (secret['usage-bootstrap-signing'] !== 'true') throw new Error(`there is no JWS signed token in the cluster-info ConfigMap for token ID "${token[1]}"`);
    const pin = `sha256:${createHash('sha256')
      .update(new X509Certificate(TEST_CA_PEM).publicKey.export({ type: 'spki', format: 'der' }))
      .digest('hex')}`;
    if (join.flags['discovery-token-ca-cert-hash'] !== pin)
      throw new Error(`cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${pin}" are pinned`);
    // TLS bootstrap authenticates with the token (plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go).
    if (secret['usage-bootstrap-authentication'] !== 'true') throw new Error('Unauthorized: the token may not authenticate');
    // Preflight: the cluster's configuration, as this kubeadm reads it.
    const config = this.tenant.get('v1/configmaps', 'kube-system', 'kubeadm-config') as { data?: Record<string, string> } | undefined;
    if (!config?.data?.ClusterConfiguration) throw new Error('unable to fetch the kubeadm-config ConfigMap: configmaps "kubeadm-config" not found');
    const clusterConfiguration = parseYaml(config.data.ClusterConfiguration) as { apiVersion: string; kubernetesVersion: string };
    const refusal = kubeadmConfigRefusal(installed.kubeadm, clusterConfiguration.apiVersion);
    if (refusal) throw new Error(refusal);
    // cmd/kubeadm/app/preflight/checks.go, KubeletVersionCheck: a kubelet of a newer minor than the control plane.
    const [kubeletMinor, controlPlaneMinor] = [installed.kubelet, clusterConfiguration.kubernetesVersion].map((v) => Number(v.split('.')[1]));
    if (kubeletMinor! > controlPlaneMinor!)
      throw new Error(
        `the kubelet version is higher than the control plane version. This is not a supported version skew and may lead to a malfunctional cluster. Kubelet version: "${installed.kubelet}" Control plane version: "${clusterConfiguration.kubernetesVersion.replace(/^v/, '')}"`,
      );
    const nodeName = join.flags['node-name'];
    if (!nodeName) throw new Error('no --node-name: the node would be named after the host name');
    this.nodes.set(nodeName, `v${installed.kubelet}`);
    this.heartbeat();
    return nodeName;
  }

  /** The kubelets' status updates: Ready once the pod network is up, else NotReady for the CNI. */
  heartbeat(): void {
    const ready = this.networkReady();
    for (const [name, kubeletVersion] of this.nodes) {
      // pkg/kubelet/nodestatus/setters.go, ReadyCondition: KubeletReady, or KubeletNotReady with the runtime's error.
      const condition = ready
        ? { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }
        : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: CNI_NOT_READY };
      // NodeSystemInfo.kubeletVersion: what `kubectl get nodes` shows as VERSION (pkg/kubelet/nodestatus/setters.go, VersionInfo).
      this.tenant.put('v1/nodes', {
        metadata: { name },
        status: { conditions: [{ ...condition, lastHeartbeatTime: new Date().toISOString() }], nodeInfo: nodeInfo(kubeletVersion) },
      });
    }
  }

  /** The token's Secret, if it authenticates now (k8s.io/cluster-bootstrap/token/util, and the authenticator). */
  private liveToken(id: string, tokenSecret: string): Record<string, string> {
    const stored = this.tenant.get('v1/secrets', 'kube-system', `bootstrap-token-${id}`) as { type?: string; data?: Record<string, string> } | undefined;
    const data = Object.fromEntries(Object.entries(stored?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    if (stored?.type !== 'bootstrap.kubernetes.io/token' || data['token-id'] !== id || data['token-secret'] !== tokenSecret)
      throw new Error(`couldn't validate the identity of the API Server: could not find a JWS signature in the cluster-info ConfigMap for token ID "${id}"`);
    if (data.expiration && Date.parse(data.expiration) <= Date.now()) throw new Error(`the bootstrap token "${id}" has expired`);
    return data;
  }
}
