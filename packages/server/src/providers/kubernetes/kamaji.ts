// What Kamaji takes and what it reports, read from its source (github.com/clastix/kamaji, checked against commit
// ddbabd87ed0e, release 26.8.2-edge, whose supported maximum is Kubernetes v1.36).
/**
 * The contract's Kubernetes minors → the patch release a TenantControlPlane is created with. Kamaji's validating
 * webhook parses `spec.kubernetes.version` with `semver.New` (Major.Minor.Patch required) and refuses a minor
 * above the one it was built for (internal/webhook/handlers/tcp_version.go, internal/upgrade/kubeadm_version.go);
 * it builds the control plane's image tags from it (registry.k8s.io/kube-apiserver:<version>), so each entry is a
 * published release, and Konnectivity's (v0.<minor>.0) exists for each minor.
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
