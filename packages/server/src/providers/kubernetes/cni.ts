// The pod network every tenant cluster gets: Kamaji installs no CNI, and a kubelet without one reports its node
// NotReady ("cni plugin not initialized"). The platform installs Flannel's chart through Argo CD once the control
// plane runs, as it installs products.
//
// Flannel rather than Cilium: it needs nothing of the kernel beyond VXLAN (Ubuntu 24.04 has it), no eBPF and no
// access to the control plane's host network, which in Kamaji runs in the management cluster; and it takes one
// setting, the pod CIDR, which must be the control plane's (network.ts). Its overlay is VXLAN on UDP 8472 between
// the nodes. Chart and values from flannel-io/flannel, chart/kube-flannel/ (Chart.yaml, values.yaml) at v0.28.9;
// the namespace must admit privileged pods (flannel's Documentation/kubernetes.md, "Pod Security").
import { POD_CIDR } from './network.ts';

export const CNI_CHART = { repoURL: 'https://flannel-io.github.io/flannel/', chart: 'flannel', targetRevision: 'v0.28.9' } as const;
export const CNI_NAMESPACE = 'kube-flannel';

/** The Argo CD Application of a cluster's CNI, named after the cluster (`k8sName` of its id). */
export const cniApplicationName = (clusterName: string) => `cni-${clusterName}`;

/**
 * The CNI's Application, deploying into the tenant cluster registered with Argo CD as `destination`, in the
 * cluster's own AppProject (`project`) as its installs are. No resources finalizer: the Application goes with its
 * cluster, whose network goes with it.
 */
export function cniApplication(options: {
  clusterName: string;
  destination: string;
  project: string;
  argocdNamespace: string;
  labels: Record<string, string>;
}) {
  return {
    metadata: { name: cniApplicationName(options.clusterName), namespace: options.argocdNamespace, labels: options.labels },
    spec: {
      project: options.project,
      source: { ...CNI_CHART, helm: { releaseName: 'flannel', valuesObject: { podCidr: POD_CIDR } } },
      destination: { name: options.destination, namespace: CNI_NAMESPACE },
      syncPolicy: {
        automated: { prune: true, selfHeal: true },
        syncOptions: ['CreateNamespace=true'],
        managedNamespaceMetadata: { labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } },
      },
    },
  };
}
