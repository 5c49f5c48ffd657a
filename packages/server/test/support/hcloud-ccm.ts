// A double of hcloud-cloud-controller-manager (github.com/hetznercloud/hcloud-cloud-controller-manager at v1.35.0)
// in a test tenant cluster, over the Hetzner fake: what its controllers write, each rule naming its file. It runs
// only where the platform installed it: its Argo CD Application (`ccm-<cluster>`) Healthy and its token Secret
// (`hcloud`, key `token`, chart/values.yaml) in kube-system; it sees only that token's project. One `reconcile()` is
// one pass of its controllers. Never written from our driver.
import type { HetznerFake } from './hetzner-fake.ts';
import type { KubeApiServer } from './kube-api-server.ts';

const APP = 'argoproj.io/v1alpha1/applications';
/** k8s.io/cloud-provider/api: TaintExternalCloudProvider. */
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';

type Node = {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { providerID?: string; taints?: { key: string; effect: string; value?: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
};
type Service = {
  metadata: { name: string; namespace: string; uid?: string; deletionTimestamp?: string };
  spec: { type?: string };
  status?: { loadBalancer?: { ingress?: { ip: string }[] } };
};

export class HcloudCloudControllerManager {
  private readonly management: KubeApiServer;
  private readonly tenant: KubeApiServer;
  private readonly fake: HetznerFake;
  private readonly argocdNamespace: string;

  constructor(options: { management: KubeApiServer; tenant: KubeApiServer; fake: HetznerFake; argocdNamespace: string }) {
    this.management = options.management;
    this.tenant = options.tenant;
    this.fake = options.fake;
    this.argocdNamespace = options.argocdNamespace;
  }

  /** The project's token, when the platform's Application runs it and its Secret is there. */
  private token(): string | undefined {
    const running = this.management
      .list(APP, this.argocdNamespace)
      .some((a) => a.metadata.name.startsWith('ccm-') && (a.status as { health?: { status?: string } } | undefined)?.health?.status === 'Healthy');
    const secret = this.tenant.get('v1/secrets', 'kube-system', 'hcloud') as { data?: Record<string, string> } | undefined;
    const token = secret?.data?.token;
    return running && token ? Buffer.from(token, 'base64').toString('utf8') : undefined;
  }

  /** One pass of the node, node lifecycle and service controllers; false when it does not run. */
  reconcile(location = 'fsn1'): boolean {
    const token = this.token();
    if (!token) return false;
    const servers = this.fake.servers(token);
    for (const object of this.tenant.list('v1/nodes')) {
      const node = object as unknown as Node;
      const taints = node.spec?.taints ?? [];
      if (taints.some((t) => t.key === UNINITIALIZED)) {
        // k8s.io/cloud-provider cloud node controller, with hcloud/instances.go InstanceMetadata: the server found by
        // the node's name (lookupServer, no providerID yet), its providerID `hcloud://<id>`
        // (docs/explanation/provider-id.md), type and location as labels; then the taint goes.
        const server = servers.find((s) => s.name === node.metadata.name);
        if (!server) continue; // "no matching server found": retried on the next pass
        this.tenant.put('v1/nodes', {
          ...object,
          metadata: {
            ...node.metadata,
            labels: {
              ...node.metadata.labels,
              'node.kubernetes.io/instance-type': server.server_type.name,
              'topology.kubernetes.io/region': server.location.name,
            },
          },
          spec: { ...node.spec, providerID: `hcloud://${server.id}`, taints: taints.filter((t) => t.key !== UNINITIALIZED) },
        });
        continue;
      }
      // k8s.io/cloud-provider node lifecycle controller: a Node not Ready whose instance does not exist any more
      // (InstanceExists: the server by its providerID, lookupServer) is deleted.
      const id = /^hcloud:\/\/(\d+)$/.exec(node.spec?.providerID ?? '')?.[1];
      const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      if (id && !ready && !servers.some((s) => String(s.id) === id)) this.tenant.delete('v1/nodes', undefined, node.metadata.name);
    }
    // The service controller, hcloud/load_balancers.go EnsureLoadBalancer: a load balancer per LoadBalancer
    // Service, found by or labelled with `hcloud-ccm/service-uid` (internal/hcops/load_balancer.go), named
    // cloudprovider.DefaultLoadBalancerName ("a" + the uid without dashes, 32 at most), in the location of
    // HCLOUD_LOAD_BALANCERS_LOCATION, targeting the nodes' servers; its addresses become the Service's ingress.
    for (const object of this.tenant.listAll('v1/services')) {
      const service = object as unknown as Service;
      if (service.spec.type !== 'LoadBalancer' || service.metadata.deletionTimestamp || !service.metadata.uid) continue;
      if (service.status?.loadBalancer?.ingress?.length) continue;
      const uid = service.metadata.uid;
      const balancer =
        this.fake.loadBalancers(token).find((b) => b.labels['hcloud-ccm/service-uid'] === uid) ??
        this.fake.createLoadBalancer(token, {
          name: `a${uid.replaceAll('-', '')}`.slice(0, 32),
          labels: { 'hcloud-ccm/service-uid': uid },
          location,
          serverIds: this.tenant
            .list('v1/nodes')
            .map((n) => Number(/^hcloud:\/\/(\d+)$/.exec((n as unknown as Node).spec?.providerID ?? '')?.[1]))
            .filter((n) => !Number.isNaN(n)),
        });
      const ingress = [balancer.public_net.ipv4.ip, balancer.public_net.ipv6.ip].filter((ip): ip is string => Boolean(ip)).map((ip) => ({ ip }));
      this.tenant.setStatus('v1/services', service.metadata.namespace, service.metadata.name, { loadBalancer: { ingress } });
    }
    return true;
  }
}
