// What Kamaji takes and what it reports, read from its source (github.com/clastix/kamaji, checked against commit
// ddbabd87ed0e, release 26.8.2-edge, whose supported maximum is Kubernetes v1.36).
import type { ControlPlaneStatus } from '../types.ts';

export interface TenantControlPlane {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: Record<string, unknown>;
  status?: {
    controlPlaneEndpoint?: string;
    kubeconfig?: { admin?: { secretName?: string } };
    kubernetesResources?: { version?: { status?: string; version?: string } };
  };
}

/**
 * Kamaji's `status.kubernetesResources.version.status` (api/v1alpha1/tenantcontrolplane_status.go) → ours.
 * computeStatus (internal/resources/k8s_deployment_resource.go) says NotReady while the control plane's
 * Deployment has no ready replica, which is every initial rollout, and Provisioning or Unknown before; none of
 * its values means a failure, so a control plane that never becomes Ready is cut off by the create workflow's
 * deadline, not here. Sleeping (no replicas asked for) and WriteLimited are control planes that run.
 */
export function controlPlaneStatus(tcp: TenantControlPlane): ControlPlaneStatus {
  if (tcp.metadata.deletionTimestamp) return 'DELETING';
  const version = tcp.status?.kubernetesResources?.version?.status;
  const runs = version === 'Ready' || version === 'Sleeping' || version === 'WriteLimited';
  return runs && tcp.status?.kubeconfig?.admin?.secretName ? 'RUNNING' : 'PROVISIONING';
}
