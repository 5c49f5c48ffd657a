// What Kamaji takes and what it reports, read from its source (github.com/clastix/kamaji, checked against commit
// ddbabd87ed0e, release 26.8.2-edge, whose supported maximum is Kubernetes v1.36).
import type { ControlPlaneStatus } from '../types.ts';

export interface TenantControlPlane {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: {
    kubernetes?: { version?: string } & Record<string, unknown>;
    writePermissions?: { blockCreation?: boolean; blockDeletion?: boolean; blockUpdate?: boolean };
  } & Record<string, unknown>;
  status?: {
    controlPlaneEndpoint?: string;
    kubeconfig?: { admin?: { secretName?: string } };
    kubernetesResources?: { version?: { status?: string; version?: string }; deployment?: { readyReplicas?: number } };
  };
}

/**
 * What a control plane that serves says while it changes, by Kamaji's `status.kubernetesResources.version.status`
 * (api/v1alpha1/tenantcontrolplane_status.go), and who set it:
 * - Upgrading, Unknown: computeStatus (internal/resources/k8s_deployment_resource.go) for a Deployment that is
 *   progressing (a pod not updated, ready or available) with ready replicas: a new version, or a roll of the same
 *   one (a management node drained, a Kamaji upgrade, a certificate renewed);
 * - WriteLimited: computeStatus, for `spec.writePermissions` that block some writes;
 * - CertificateAuthorityRotating: internal/resources/ca_certificate.go, while a new CA is made and rolled out;
 * - Migrating: internal/resources/datastore/datastore_migrate.go, while the datastore moves (the migration's
 *   webhook refuses creations and deletions: controllers/soot/controllers/migrate.go).
 */
function servingMessage(tcp: TenantControlPlane, status: string): string | null {
  const kamaji = `(Kamaji: ${status})`;
  switch (status) {
    case 'Upgrading':
      return `The control plane is being upgraded to Kubernetes ${tcp.spec.kubernetes?.version ?? 'a new version'} ${kamaji}; it keeps serving meanwhile.`;
    case 'CertificateAuthorityRotating':
      return `The control plane's certificate authority is being replaced ${kamaji}; it keeps serving, and a kubeconfig fetched before stops working: fetch a new one once this message is gone.`;
    case 'Migrating':
      return `The control plane's datastore is being migrated ${kamaji}: creating and deleting objects is refused until it ends.`;
    case 'WriteLimited': {
      const blocked = Object.entries(tcp.spec.writePermissions ?? {})
        .filter(([, on]) => on)
        .map(([key]) => key.replace(/^block/, '').toLowerCase());
      return `The platform's operators have blocked ${blocked.join(', ') || 'some'} writes to the control plane ${kamaji}: changes of that kind are refused until they are allowed again.`;
    }
    default:
      return `The control plane is rolling out new replicas ${kamaji}; it keeps serving meanwhile.`;
  }
}

/**
 * Kamaji's status → ours. RUNNING while the control plane serves: Ready, or one of the changes of
 * servingMessage with a ready replica of its Deployment and a version that ran (`version.version`, recorded once
 * Ready). computeStatus says NotReady while no replica is ready, which is every initial rollout, and Provisioning or
 * Unknown before; none of its values means a failure, so a control plane that never becomes Ready is cut off by the
 * create workflow's deadline, not here. One that ran and serves no more (Sleeping: `spec.controlPlane.deployment
 * .replicas` is 0; NotReady: no replica is ready) is UNAVAILABLE.
 */
export function controlPlaneStatus(tcp: TenantControlPlane): { status: ControlPlaneStatus; message: string | null } {
  if (tcp.metadata.deletionTimestamp) return { status: 'DELETING', message: null };
  const { version, deployment } = tcp.status?.kubernetesResources ?? {};
  const status = version?.status ?? 'Provisioning';
  const ran = Boolean(version?.version);
  const admin = Boolean(tcp.status?.kubeconfig?.admin?.secretName);
  if (status === 'Ready' && admin) return { status: 'RUNNING', message: null };
  if (status === 'Sleeping')
    return { status: 'UNAVAILABLE', message: 'The control plane is asleep (Kamaji: Sleeping, no replicas): nothing reaches the cluster until it is woken.' };
  if (!ran) return { status: 'PROVISIONING', message: null };
  if ((deployment?.readyReplicas ?? 0) > 0 && admin && status !== 'NotReady' && status !== 'Provisioning')
    return { status: 'RUNNING', message: servingMessage(tcp, status) };
  return {
    status: 'UNAVAILABLE',
    message: `The control plane has no ready replica (Kamaji: ${status}): nothing reaches the cluster until one is ready again.`,
  };
}
