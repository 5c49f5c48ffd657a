// Kamaji's rules, for the test Kubernetes API server, each written from Kamaji's source (github.com/clastix/kamaji
// at commit ddbabd87ed0e, release 26.8.2-edge) and named where it comes from. Never from our driver.

/** internal/upgrade/kubeadm_version.go: the newest Kubernetes this Kamaji builds control planes for. */
export const KAMAJI_SUPPORTED_VERSION = 'v1.36.0';

/** The validating webhook's name (internal/webhook/routes/tcp_validate.go, `name=vtenantcontrolplane.kb.io`). */
export const KAMAJI_VALIDATING_WEBHOOK = 'vtenantcontrolplane.kb.io';

/** A validating webhook said no (controller-runtime's admission.Denied: allowed false, code 403, the reason). */
export class AdmissionDenied extends Error {
  readonly webhook: string;
  constructor(webhook: string, reason: string) {
    super(reason);
    this.webhook = webhook;
  }
}

type Semver = { major: number; minor: number; patch: number };

/**
 * github.com/blang/semver's Parse, as far as Kamaji depends on it: Major.Minor.Patch, numbers without leading
 * zeroes; a pre-release or build suffix after the patch is allowed. Returns the error text blang/semver gives.
 */
function parseSemver(input: string): Semver | string {
  if (input.length === 0) return 'Version string empty';
  const parts = input.split('.');
  if (parts.length < 3) return 'No Major.Minor.Patch elements found';
  const [majorText, minorText] = parts as [string, string];
  // SplitN(s, ".", 3): the patch part runs to the end, pre-release and build included.
  const patchText = parts.slice(2).join('.').split(/[-+]/)[0]!;
  const number = (text: string, which: string): number | string => {
    if (!/^[0-9]+$/.test(text)) return `Invalid character(s) found in ${which} number "${text}"`;
    if (text.length > 1 && text.startsWith('0')) return `${which[0]!.toUpperCase()}${which.slice(1)} number must not contain leading zeroes "${text}"`;
    return Number(text);
  };
  const major = number(majorText, 'major');
  if (typeof major === 'string') return major;
  const minor = number(minorText, 'minor');
  if (typeof minor === 'string') return minor;
  const patch = number(patchText, 'patch');
  if (typeof patch === 'string') return patch;
  return { major, minor, patch };
}

/** TenantControlPlaneVersion.normalizeKubernetesVersion: the first "v" goes. */
const normalize = (version: string) => version.replace('v', '');

/**
 * internal/webhook/handlers/tcp_version.go, TenantControlPlaneVersion.OnCreate and OnUpdate: the version must
 * parse as semver (patch included) and its minor may not pass the supported one; an update may not go down nor
 * skip a minor. Returns the denial's reason, or undefined when admitted.
 */
export function tenantControlPlaneVersionDenial(version: string, previous?: string): string | undefined {
  const wanted = parseSemver(normalize(version));
  if (typeof wanted === 'string') return `unable to parse the desired Kubernetes version: ${wanted}`;
  const supported = parseSemver(normalize(KAMAJI_SUPPORTED_VERSION)) as Semver;
  // "No need to check if the patch version": the patch is zeroed before comparing.
  const compare = (a: Semver, b: Semver) => a.major - b.major || a.minor - b.minor || a.patch - b.patch;
  const newer = { ...wanted, patch: 0 };
  if (previous === undefined) {
    if (compare(newer, supported) > 0)
      return `unable to create a TenantControlPlane with a Kubernetes version greater than the supported one, actually v${supported.major}.${supported.minor}`;
    return undefined;
  }
  const old = parseSemver(normalize(previous));
  if (typeof old === 'string') return `unable to parse the previous Kubernetes version: ${old}`;
  const older = { ...old, patch: 0 };
  if (compare(newer, supported) > 0) return `unable to upgrade to a version greater than the supported one (v${supported.major}.${supported.minor})`;
  if (compare(newer, older) < 0) return `unable to downgrade a TenantControlPlane from ${older.major}.${older.minor}.0 to ${newer.major}.${newer.minor}.0`;
  if (newer.minor - older.minor > 1) return 'unable to upgrade to a minor version in a non-sequential mode';
  return undefined;
}

type TenantControlPlane = { metadata: { deletionTimestamp?: string }; spec?: { kubernetes?: { version?: string } } };

/** Kamaji's validating webhook on TenantControlPlanes (create and update), as far as the version goes. */
export function admitTenantControlPlane(object: TenantControlPlane, old: TenantControlPlane | undefined): void {
  // OnUpdate lets an object being deleted through (its finalizer's removal is an update).
  if (old && object.metadata.deletionTimestamp) return;
  const denial = tenantControlPlaneVersionDenial(object.spec?.kubernetes?.version ?? '', old?.spec?.kubernetes?.version);
  if (denial) throw new AdmissionDenied(KAMAJI_VALIDATING_WEBHOOK, denial);
}
