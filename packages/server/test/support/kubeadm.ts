// A worker booting from its user_data, in kubeadm's and the kubelet's place, against the test tenant API server:
// it reads the `#cloud-config` as cloud-init does, finds the `kubeadm join` its runcmd ends with, and joins only
// when kubeadm would — the endpoint is the cluster's, the token is a live bootstrap token the cluster knows, and the
// CA hash pins the cluster's CA. The joined node reports Ready only once the cluster's pod network is up, as the
// kubelet does. (Whether the rest of the cloud-config would install a working kubelet is checked apart, with
// Debian's cloud-init; see kubernetes-driver.test.ts.)
import { createHash, X509Certificate } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { type KubeApiServer, TEST_CA_PEM } from './kube-api-server.ts';

/** A `kubeadm join` line of a cloud-config's runcmd, its flags by name. */
export interface KubeadmJoin {
  endpoint: string;
  flags: Record<string, string>;
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

/** What a runcmd writes to /etc/default/kubelet as KUBELET_EXTRA_ARGS (a shell `echo '…' > /etc/default/kubelet`). */
function kubeletExtraArgs(userData: string): string {
  const config = parseYaml(userData) as { runcmd?: (string | string[])[] };
  for (const command of config.runcmd ?? []) {
    const match = typeof command === 'string' ? /^echo '(?:KUBELET_EXTRA_ARGS=)(.*)' > \/etc\/default\/kubelet$/.exec(command) : null;
    if (match) return match[1]!;
  }
  return '';
}

/** The flags of `kubeadm join` that a token-discovery worker join uses (cmd/kubeadm/app/cmd/join.go, options). */
const JOIN_FLAGS = new Set(['token', 'discovery-token-ca-cert-hash', 'node-name']);
// k8s.io/cluster-bootstrap/token/api/types.go: BootstrapTokenPattern.
const TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;

export const CNI_NOT_READY =
  'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized';

export class KubeadmWorker {
  private readonly tenant: KubeApiServer;
  /** Whether the cluster's pod network (its CNI) is up: the kubelet reports NetworkReady only then. */
  private readonly networkReady: () => boolean;
  private readonly nodes = new Set<string>();
  /** Nodes whose kubelet runs with `--cloud-provider=external`. */
  private readonly external = new Set<string>();

  constructor(tenant: KubeApiServer, networkReady: () => boolean) {
    this.tenant = tenant;
    this.networkReady = networkReady;
  }

  /** Boots a server from its user_data: joins the cluster as kubeadm would, or throws kubeadm's reason. */
  boot(userData: string): string {
    const join = kubeadmJoinOf(userData);
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
    const nodeName = join.flags['node-name'];
    if (!nodeName) throw new Error('no --node-name: the node would be named after the host name');
    this.nodes.add(nodeName);
    // The deb's drop-in 10-kubeadm.conf passes $KUBELET_EXTRA_ARGS from /etc/default/kubelet. An external cloud
    // provider's kubelet registers its node tainted until the cloud controller manager set it up
    // (pkg/kubelet/kubelet_node_status.go, initialNode: TaintExternalCloudProvider, NoSchedule).
    if (kubeletExtraArgs(userData).includes('--cloud-provider=external')) this.external.add(nodeName);
    const taints = this.external.has(nodeName) ? [{ key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' }] : [];
    this.tenant.put('v1/nodes', { metadata: { name: nodeName }, spec: { taints } });
    this.heartbeat();
    return nodeName;
  }

  /** The kubelets' status updates: Ready once the pod network is up, else NotReady for the CNI. */
  heartbeat(): void {
    const ready = this.networkReady();
    for (const name of this.nodes) {
      // pkg/kubelet/nodestatus/setters.go, ReadyCondition: KubeletReady, or KubeletNotReady with the runtime's error.
      const condition = ready
        ? { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }
        : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: CNI_NOT_READY };
      const status = { conditions: [{ ...condition, lastHeartbeatTime: new Date().toISOString() }] };
      // A Node deleted meanwhile (its machine's, or by the cloud controller manager) is not written back: its server is gone.
      if (this.tenant.get('v1/nodes', undefined, name)) this.tenant.setStatus('v1/nodes', undefined, name, status);
      else this.nodes.delete(name);
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
