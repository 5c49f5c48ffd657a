// A kubeconfig file for one cluster and one bearer token, as the drivers hand it to a cluster's owner.
import { stringify } from 'yaml';

export interface Kubeconfig {
  /** The file, YAML. */
  kubeconfig: string;
  /** Unix seconds when its token stops working. */
  expires_at: number;
}

export function kubeconfigYaml(cluster: { name: string; server: string; caData?: string }, user: { name: string; token: string }): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: cluster.name, cluster: { server: cluster.server, ...(cluster.caData ? { 'certificate-authority-data': cluster.caData } : {}) } }],
    users: [{ name: user.name, user: { token: user.token } }],
    contexts: [{ name: cluster.name, context: { cluster: cluster.name, user: user.name } }],
    'current-context': cluster.name,
  });
}
