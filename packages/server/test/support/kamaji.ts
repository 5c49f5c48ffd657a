// Kamaji's rules, for the test Kubernetes API server, each written from Kamaji's source (github.com/clastix/kamaji
// at commit ddbabd87ed0e, release 26.8.2-edge) and named where it comes from. Never from our driver.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { stringify as stringifyYaml } from 'yaml';
import { type KubeApiServer, TEST_CA_PEM } from './kube-api-server.ts';

/** internal/upgrade/kubeadm_version.go: the newest Kubernetes this Kamaji builds control planes for. */
export const KAMAJI_SUPPORTED_VERSION = 'v1.36.0';

/** The API version of the ClusterConfiguration Kamaji's kubeadm (v1.36) writes into kube-system/kubeadm-config. */
export const KAMAJI_KUBEADM_CONFIG_API = 'kubeadm.k8s.io/v1beta4';

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
export function tenantControlPlaneVersionDenial(version: string, previous: string | undefined, supportedVersion: string): string | undefined {
  const wanted = parseSemver(normalize(version));
  if (typeof wanted === 'string') return `unable to parse the desired Kubernetes version: ${wanted}`;
  const supported = parseSemver(normalize(supportedVersion)) as Semver;
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

/**
 * Kamaji's validating webhook on TenantControlPlanes (create and update), as far as the version goes;
 * `supportedVersion` is the Kamaji release's (an older Kamaji supports less).
 */
export function admitTenantControlPlane(object: TenantControlPlane, old: TenantControlPlane | undefined, supportedVersion = KAMAJI_SUPPORTED_VERSION): void {
  // OnUpdate lets an object being deleted through (its finalizer's removal is an update).
  if (old && object.metadata.deletionTimestamp) return;
  const denial = tenantControlPlaneVersionDenial(object.spec?.kubernetes?.version ?? '', old?.spec?.kubernetes?.version, supportedVersion);
  if (denial) throw new AdmissionDenied(KAMAJI_VALIDATING_WEBHOOK, denial);
}

const TCP = 'kamaji.clastix.io/v1alpha1/tenantcontrolplanes';

/** The control plane Deployment's status, as far as computeStatus reads it (apps/v1 DeploymentStatus). */
export interface ControlPlaneDeployment {
  replicas: number;
  readyReplicas: number;
  updatedReplicas: number;
  unavailableReplicas: number;
  generation: number;
  observedGeneration: number;
}

type StoredTenantControlPlane = {
  spec: { controlPlane?: { deployment?: { replicas?: number } }; kubernetes: { version: string }; writePermissions?: Record<string, boolean> };
  status?: { kubernetesResources?: { version?: { version?: string } } };
};

/**
 * internal/resources/k8s_deployment_resource.go, computeStatus: the order of its cases is the rule (a Deployment
 * with no ready replica is NotReady before anything else is looked at; Provisioning only while no version ran).
 */
export function computeStatus(tcp: StoredTenantControlPlane, deployment: ControlPlaneDeployment): string {
  const desired = tcp.spec.controlPlane?.deployment?.replicas ?? 2;
  const progressing =
    deployment.generation !== deployment.observedGeneration ||
    deployment.unavailableReplicas > 0 ||
    deployment.updatedReplicas !== desired ||
    deployment.readyReplicas !== desired ||
    deployment.replicas !== desired;
  const runningVersion = tcp.status?.kubernetesResources?.version?.version ?? '';
  if (desired === 0) return 'Sleeping';
  if (deployment.readyReplicas === 0) return 'NotReady';
  if (Object.values(tcp.spec.writePermissions ?? {}).some(Boolean)) return 'WriteLimited';
  if (!progressing) return 'Ready';
  if (runningVersion.length > 0 && tcp.spec.kubernetes.version !== runningVersion) return 'Upgrading';
  if (runningVersion.length === 0) return 'Provisioning';
  return 'Unknown';
}

/**
 * What Kamaji's controller writes for one TenantControlPlane, in the order of its resources
 * (controllers/resources.go, GetResources: the Service and its endpoint, the certificates and kubeconfigs, then
 * the Deployment), for the test to play step by step.
 */
export class KamajiController {
  private readonly management: KubeApiServer;
  /** The tenant's API server, which the admin kubeconfig reaches; its client CA is Kamaji's. */
  private readonly tenant: KubeApiServer;
  /** Each control plane's CA generation (KAMAJI_PKI), by name. */
  private readonly generations = new Map<string, 0 | 1>();

  constructor(management: KubeApiServer, tenant: KubeApiServer) {
    this.management = management;
    this.tenant = tenant;
  }

  /**
   * The first reconciliations, before the Deployment exists: the status' version says Provisioning (the CRD's
   * default, `+kubebuilder:default=Provisioning` in api/v1alpha1/tenantcontrolplane_status.go).
   */
  provisioning(namespace: string, name: string): void {
    this.management.setStatus(TCP, namespace, name, { kubernetesResources: { version: { status: 'Provisioning' } } });
  }

  /**
   * The Deployment rolls out with `readyReplicas` of its replicas ready: the endpoint and the admin kubeconfig
   * Secret `<name>-admin-kubeconfig` (internal/resources/kubeconfig.go, keys admin.conf and super-admin.conf) are
   * written already, and the version's status is computeStatus's; a Ready control plane's version is recorded
   * (UpdateTenantControlPlaneStatus).
   */
  rollout(namespace: string, name: string, readyReplicas: number): string {
    const tcp = this.management.get(TCP, namespace, name) as unknown as StoredTenantControlPlane | undefined;
    if (!tcp) throw new Error(`no TenantControlPlane ${namespace}/${name}`);
    const desired = tcp.spec.controlPlane?.deployment?.replicas ?? 2;
    const deployment = {
      replicas: desired,
      readyReplicas,
      updatedReplicas: desired,
      unavailableReplicas: desired - readyReplicas,
      generation: 1,
      observedGeneration: 1,
    };
    const status = computeStatus(tcp, deployment);
    const secretName = adminSecretName(name);
    this.writeAdminKubeconfig(namespace, name);
    if (readyReplicas > 0) uploadKubeadmConfig(this.tenant, tcp.spec.kubernetes.version);
    const running = tcp.status?.kubernetesResources?.version?.version;
    this.management.setStatus(TCP, namespace, name, {
      ...tcp.status,
      controlPlaneEndpoint: new URL(this.tenant.url).host,
      kubeconfig: { admin: { secretName } },
      kubernetesResources: {
        version: { status, ...(status === 'Ready' || status === 'Sleeping' ? { version: tcp.spec.kubernetes.version } : running ? { version: running } : {}) },
        // KubernetesDeploymentStatus: the Deployment's status, its name and selector (the Deployment's generation is not in it).
        deployment: {
          replicas: deployment.replicas,
          readyReplicas,
          updatedReplicas: deployment.updatedReplicas,
          unavailableReplicas: deployment.unavailableReplicas,
          observedGeneration: deployment.observedGeneration,
          name,
          namespace,
          selector: `kamaji.clastix.io/name=${name}`,
        },
      },
    });
    return status;
  }

  /**
   * Kamaji's controller on its own, as time passes on `clock` (checked every `everyMs`): each TenantControlPlane of
   * `namespace` is Provisioning when first seen (the CRD's default), then its Deployment rolls out with no ready
   * replica — NotReady, computeStatus's first case (internal/resources/k8s_deployment_resource.go) — for
   * `notReadySeconds`, then with all its replicas ready: Ready. Each phase is written once; a test moves through
   * them by moving its clock, and may still call provisioning() and rollout() itself. Returns the stop function.
   */
  run(
    clock: { now(): number },
    namespace: string,
    timings: { provisioningSeconds: number; notReadySeconds: number } = { provisioningSeconds: 5, notReadySeconds: 20 },
    everyMs = 20,
  ): () => void {
    const firstSeen = new Map<string, number>();
    const written = new Map<string, string>();
    const tick = () => {
      const now = clock.now();
      for (const object of this.management.list(TCP, namespace)) {
        const { name, deletionTimestamp } = object.metadata;
        if (deletionTimestamp) continue;
        const since = firstSeen.get(name) ?? now;
        firstSeen.set(name, since);
        const elapsed = now - since;
        const phase =
          elapsed < timings.provisioningSeconds ? 'Provisioning' : elapsed < timings.provisioningSeconds + timings.notReadySeconds ? 'NotReady' : 'Ready';
        if (written.get(name) === phase) continue;
        written.set(name, phase);
        if (phase === 'Provisioning') this.provisioning(namespace, name);
        else if (phase === 'NotReady') this.rollout(namespace, name, 0);
        else {
          const tcp = object as unknown as StoredTenantControlPlane;
          this.rollout(namespace, name, tcp.spec.controlPlane?.deployment?.replicas ?? 2);
        }
      }
    };
    const timer = setInterval(tick, everyMs);
    return () => clearInterval(timer);
  }

  /**
   * A CA rotation (docs/content/guides/certs-lifecycle.md, CertificateAuthorityRotating): the tenant's API server
   * trusts only the new CA, so the old admin certificate gets 401, and Kamaji rewrites the admin kubeconfig.
   */
  rotateCertificateAuthority(namespace: string, name: string): void {
    this.generations.set(name, this.generations.get(name) === 1 ? 0 : 1);
    this.writeAdminKubeconfig(namespace, name);
  }

  /** The Secret `<name>-admin-kubeconfig` (internal/resources/kubeconfig.go: admin.conf and super-admin.conf). */
  private writeAdminKubeconfig(namespace: string, name: string): void {
    const { ca, cert, key } = KAMAJI_PKI[this.generations.get(name) ?? 0]!;
    this.tenant.clientCas = [ca];
    const kubeconfig = Buffer.from(kamajiAdminConf(this.tenant.url, name, cert, key)).toString('base64');
    this.management.put('v1/secrets', {
      metadata: { name: adminSecretName(name), namespace, labels: { 'kamaji.clastix.io/name': name } },
      type: 'Opaque',
      data: { 'admin.conf': kubeconfig, 'super-admin.conf': kubeconfig },
    });
  }
}

/**
 * The tenant's kube-system/kubeadm-config, which a joining kubeadm reads (KubeadmPhase PhaseUploadConfigKubeadm,
 * internal/resources/kubeadm_phases.go → internal/kubeadm/uploadconfig.go, UploadKubeadmConfig): kubeadm's own
 * uploadconfig phase of the kubeadm Kamaji is built with (go.mod: k8s.io/kubernetes v1.36.3), which marshals the
 * ClusterConfiguration as kubeadm.k8s.io/v1beta4 (kubeadm's storage version since 1.31, kubernetes#125029), its
 * extraArgs a list of name/value pairs. Written once the control plane runs.
 */
export function uploadKubeadmConfig(tenant: KubeApiServer, version: string): void {
  const clusterConfiguration = {
    apiVersion: KAMAJI_KUBEADM_CONFIG_API,
    kind: 'ClusterConfiguration',
    kubernetesVersion: version,
    apiServer: { extraArgs: [{ name: 'authorization-mode', value: 'Node,RBAC' }] },
    networking: { dnsDomain: 'cluster.local' },
  };
  tenant.put('v1/configmaps', {
    metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
    data: { ClusterConfiguration: stringifyYaml(clusterConfiguration) },
  });
}

const pki = (file: string) => readFileSync(new URL(`./kamaji-pki/${file}`, import.meta.url), 'utf8');

/**
 * Two generations of a tenant's client CA, each with the admin's client certificate (CN kubernetes-admin, O
 * kubeadm:cluster-admins, as kubeadm's admin.conf) and its RSA key; the CAs' keys are not kept. A CA rotation
 * moves a tenant from the first to the second.
 */
export const KAMAJI_PKI = [1, 2].map((generation) => ({
  ca: new X509Certificate(pki(`kamaji-ca-${generation}.pem`)),
  cert: pki(`kamaji-admin-${generation}.pem`),
  key: pki(`kamaji-admin-${generation}-key.pem`),
}));

const adminSecretName = (name: string) => `${name}-admin-kubeconfig`;

/**
 * The admin.conf Kamaji writes (internal/resources/kubeconfig.go → internal/kubeadm/kubeconfig.go, kubeadm's
 * CreateKubeConfigFile): the tenant's cluster with its CA, and the user kubernetes-admin with a client
 * certificate and key, no token.
 */
function kamajiAdminConf(server: string, clusterName: string, cert: string, key: string): string {
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  const context = `kubernetes-admin@${clusterName}`;
  return stringifyYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: clusterName, cluster: { 'certificate-authority-data': base64(TEST_CA_PEM), server } }],
    contexts: [{ name: context, context: { cluster: clusterName, user: 'kubernetes-admin' } }],
    'current-context': context,
    preferences: {},
    users: [{ name: 'kubernetes-admin', user: { 'client-certificate-data': base64(cert), 'client-key-data': base64(key) } }],
  });
}
