// The cloud controller manager every tenant cluster on Hetzner Cloud gets, as its CNI (cni.ts): Hetzner's
// hcloud-cloud-controller-manager, installed by its chart through Argo CD. It initialises the nodes (their
// providerID `hcloud://<server id>`, found by the node's name, which is its server's: hcloud/instances.go,
// lookupServer; then the `node.cloudprovider.kubernetes.io/uninitialized` taint the kubelet's
// `--cloud-provider=external` puts on goes), removes the Node of a server that is gone (k8s.io/cloud-provider's node
// lifecycle controller, through InstanceExists), and gives every Service of type LoadBalancer a Hetzner load
// balancer labelled `hcloud-ccm/service-uid` (internal/hcops/load_balancer.go, Create), whose address becomes the
// Service's ingress, which Argo CD waits for (gitops-engine, pkg/health/health_service.go).
//
// It takes one token (chart/values.yaml: HCLOUD_TOKEN from the Secret `hcloud`, key `token`, in its namespace), so a
// cluster's machines live in one Hetzner project, and it removes the Nodes whose servers it cannot find there.
// Chart and values from hetznercloud/hcloud-cloud-controller-manager at v1.35.0 (chart/Chart.yaml, values.yaml;
// the quick start, docs/guides/quickstart.md, installs it into kube-system). A load balancer needs a location or a
// network zone (hcops.LoadBalancerOps.Create refuses neither): HCLOUD_LOAD_BALANCERS_LOCATION is the cluster's region
// (internal/config/load_balancer_envs.go). No private network: the load balancers reach the nodes' NodePorts at their
// public addresses, which the cluster firewall admits (providers/hetzner/compute.ts, firewallRules).
import type { CloudControllerRequest } from '../types.ts';

export const CCM_CHART = {
  repoURL: 'https://charts.hetzner.cloud',
  chart: 'hcloud-cloud-controller-manager',
  targetRevision: '1.35.0',
} as const;
export const CCM_NAMESPACE = 'kube-system';
/** The Secret the chart's HCLOUD_TOKEN comes from, and its key. */
export const CCM_SECRET = { name: 'hcloud', key: 'token' } as const;

/** The Argo CD Application of a cluster's cloud controller manager, named after the cluster (`k8sName` of its id). */
export const ccmApplicationName = (clusterName: string) => `ccm-${clusterName}`;

const HETZNER_ENDPOINT = 'https://api.hetzner.cloud/v1';

/** The cloud controller manager's Application, in the cluster's AppProject, deploying into the tenant `destination`. */
export function ccmApplication(options: {
  clusterName: string;
  destination: string;
  project: string;
  argocdNamespace: string;
  labels: Record<string, string>;
  request: Pick<CloudControllerRequest, 'endpoint' | 'location'>;
}) {
  const env: Record<string, unknown> = { HCLOUD_LOAD_BALANCERS_LOCATION: { value: options.request.location } };
  if (options.request.endpoint && options.request.endpoint.replace(/\/+$/, '') !== HETZNER_ENDPOINT) env.HCLOUD_ENDPOINT = { value: options.request.endpoint };
  return {
    metadata: { name: ccmApplicationName(options.clusterName), namespace: options.argocdNamespace, labels: options.labels },
    spec: {
      project: options.project,
      source: { ...CCM_CHART, helm: { releaseName: 'hccm', valuesObject: { env } } },
      destination: { name: options.destination, namespace: CCM_NAMESPACE },
      syncPolicy: { automated: { prune: true, selfHeal: true } },
    },
  };
}
