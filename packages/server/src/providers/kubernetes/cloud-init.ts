// A worker's cloud-init: what turns a stock Ubuntu 24.04 server into a node of its tenant cluster. It follows
// Kubernetes' own install guides (kubernetes/website, content/en/docs/setup/production-environment/):
//   - container-runtimes.md, "Install and configure prerequisites": the overlay and br_netfilter modules, IPv4
//     forwarding and bridged traffic through iptables; and its containerd section: `containerd config default`
//     with `SystemdCgroup = true`, since the kubelet of a kubeadm node uses the systemd cgroup driver;
//   - tools/kubeadm/install-kubeadm.md: swap off (the kubelet's default refuses to start with swap on), kubelet
//     and kubeadm from pkgs.k8s.io's repository of the cluster's minor release, held against upgrades; of the
//     control plane's own patch release, pinned as kubeadm's upgrade guide pins them
//     (tools/kubeadm/kubeadm-upgrade.md: `apt-get install -y kubeadm='1.34.x-*'`), not the repository's newest;
// in the order cluster-api-provider-hetzner's Ubuntu worker template runs them (templates/cluster-templates/
// v1beta1/bases/kct-md-0-ubuntu.yaml, its preKubeadmCommands), then `kubeadm join` as CAPI's kubeadm bootstrap
// provider ends its cloud-init. Ubuntu's own containerd package is used: it is in the image's archive.
//
// A cloud-config is YAML; JSON is YAML too, so the document is written with JSON.stringify and no YAML library.

/** What a machine needs to join its cluster with a kubeadm bootstrap token. */
export interface NodeJoin {
  /** The control plane's host:port. */
  endpoint: string;
  /** The bootstrap token, "<id>.<secret>". */
  token: string;
  /** "sha256:<hex>" of the cluster CA's public key (kubeadm's --discovery-token-ca-cert-hash). */
  caCertHash: string;
  nodeName: string;
  /** The control plane's patch release ("v1.35.9"): the kubelet and kubeadm installed are exactly it. */
  kubernetesRelease: string;
}

/** "v1.35.9" → its minor ("v1.35", whose package repository pkgs.k8s.io serves) and its package version ("1.35.9"). */
export function kubernetesPackages(release: string): { minor: string; version: string } {
  const match = /^v(\d+)\.(\d+)\.(\d+)$/.exec(release);
  if (!match) throw new Error(`"${release}" is not a Kubernetes patch release (v1.35.9)`);
  return { minor: `v${match[1]}.${match[2]}`, version: `${match[1]}.${match[2]}.${match[3]}` };
}

const MODULES = ['overlay', 'br_netfilter'];
const SYSCTLS = ['net.bridge.bridge-nf-call-iptables = 1', 'net.bridge.bridge-nf-call-ip6tables = 1', 'net.ipv4.ip_forward = 1'];
const KEYRING = '/etc/apt/keyrings/kubernetes-apt-keyring.gpg';

/** The `#cloud-config` user_data that prepares the server and joins it as `nodeName`. */
export function nodeCloudConfig(join: NodeJoin): string {
  const { minor, version } = kubernetesPackages(join.kubernetesRelease);
  const repository = `https://pkgs.k8s.io/core:/stable:/${minor}/deb/`;
  // The repository's Debian revision follows the version ("1.35.9-1.1"): any revision of exactly this release.
  const pinned = ['kubelet', 'kubeadm'].map((name) => `${name}='${version}-*'`).join(' ');
  const config = {
    write_files: [
      { path: '/etc/modules-load.d/k8s.conf', permissions: '0644', content: `${MODULES.join('\n')}\n` },
      { path: '/etc/sysctl.d/k8s.conf', permissions: '0644', content: `${SYSCTLS.join('\n')}\n` },
    ],
    package_update: true,
    packages: ['apt-transport-https', 'ca-certificates', 'curl', 'gpg', 'containerd'],
    runcmd: [
      // One script: stop at the first command that fails rather than join half-prepared (no -x: the token
      // would land in the console log).
      'set -eu',
      "swapoff -a && sed -i '/\\sswap\\s/d' /etc/fstab",
      ...MODULES.map((module) => `modprobe ${module}`),
      'sysctl --system',
      'mkdir -p /etc/containerd && containerd config default > /etc/containerd/config.toml',
      "sed -i 's/SystemdCgroup = false/SystemdCgroup = true/' /etc/containerd/config.toml",
      'systemctl restart containerd',
      `mkdir -p -m 755 /etc/apt/keyrings && curl -fsSL ${repository}Release.key | gpg --dearmor -o ${KEYRING}`,
      `echo 'deb [signed-by=${KEYRING}] ${repository} /' > /etc/apt/sources.list.d/kubernetes.list`,
      // kubernetes-cni: the CNI plugins in /opt/cni/bin that containerd's default config and the CNI chart (cni.ts) use.
      `apt-get update && apt-get install -y ${pinned} kubernetes-cni && apt-mark hold kubelet kubeadm kubernetes-cni`,
      'systemctl enable --now kubelet',
      ['kubeadm', 'join', join.endpoint, '--token', join.token, '--discovery-token-ca-cert-hash', join.caCertHash, '--node-name', join.nodeName],
    ],
  };
  return `#cloud-config\n${JSON.stringify(config, null, 2)}\n`;
}
