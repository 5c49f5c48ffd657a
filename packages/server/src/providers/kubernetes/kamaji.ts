// What Kamaji takes and what it reports, read from its source (github.com/clastix/kamaji, checked against commit
// ddbabd87ed0e, release 26.8.2-edge, whose supported maximum is Kubernetes v1.36).
import type { ControlPlaneStatus } from '../types.ts';

/**
 * The contract's Kubernetes minors → the patch release a TenantControlPlane is created with. Kamaji's validating
 * webhook parses `spec.kubernetes.version` with `semver.New` (Major.Minor.Patch required) and refuses a minor
 * above the one it was built for (internal/webhook/handlers/tcp_version.go, internal/upgrade/kubeadm_version.go);
 * it builds the control plane's image tags from it (registry.k8s.io/kube-apiserver:<version>), so each entry is a
 * published release, and Konnectivity's (v0.<minor>.0) exists for each minor.
 *
 * Evidence each release was published (read 2026-11; kubeadm and kubelet debs of the same version come from
 * pkgs.k8s.io/core:/stable:/v1.<minor>, the same release process):
 * - v1.30.14: the line's last (1.30 ended 2025-07-15): https://kubernetes.io/releases/1.30/ ("Latest patch release
 *   1.30.14") and CHANGELOG/CHANGELOG-1.30.md on kubernetes/kubernetes master ("Changelog since v1.30.13").
 * - v1.31.13: https://github.com/kubernetes/kubernetes/releases/tag/v1.31.13 (2025-09-09), the release notes IBM Cloud
 *   Kubernetes Service's change log links for its move from v1.31.12 (ibm-cloud-docs/containers,
 *   cs_versions_changelog_131.md, master fix pack 1.31.13_1574 of 2025-10-03); k3s v1.31.13+k3s1 (2025-09-22) embeds it.
 * - v1.32.9: https://github.com/kubernetes/kubernetes/releases/tag/v1.32.9, linked the same way for v1.32.8 → v1.32.9
 *   (cs_versions_changelog_132.md, master fix pack 1.32.9_1562 of 2025-10-03); k3s v1.32.9+k3s1 (2025-09-22) embeds it.
 */
export const KUBERNETES_RELEASES: Readonly<Record<string, string>> = {
  'v1.30': 'v1.30.14',
  'v1.31': 'v1.31.13',
  'v1.32': 'v1.32.9',
};

/** The release sent to Kamaji for one of the contract's minors; any other version is a mistake of ours. */
export function kubernetesRelease(minor: string): string {
  const release = KUBERNETES_RELEASES[minor];
  if (!release) throw new Error(`no Kubernetes release is pinned for "${minor}" (known: ${Object.keys(KUBERNETES_RELEASES).join(', ')})`);
  return release;
}

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
