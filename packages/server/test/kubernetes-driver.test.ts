// The Kubernetes cluster driver, built by the providers' factory from configuration, against two test
// Kubernetes API servers (the management cluster with Kamaji and Argo CD, and a tenant cluster) that validate
// every object they receive against its published schema. The driver speaks to them with the real
// @kubernetes/client-node over HTTP; the test plays Kamaji, Argo CD and the kubelet through the servers' helpers.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { createPlatformClient } from '@platform/client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ConfigError, loadConfig } from '../src/config.ts';
import { newId } from '../src/ids.ts';
import { createClusterDriver } from '../src/providers/index.ts';
import { cniApplicationName } from '../src/providers/kubernetes/cni.ts';
import { ARGOCD_FINALIZER, applicationName, KubernetesDriver, k8sName, repositorySecretName } from '../src/providers/kubernetes/driver.ts';
import { POD_CIDR } from '../src/providers/kubernetes/network.ts';
import { SimulatedCloud } from '../src/providers/simulated.ts';
import { type ClusterDriver, chartLocation, type HelmReleaseRequest, type LogEntry, type PodContainer, type ReadLogOptions } from '../src/providers/types.ts';
import { createRuntime } from '../src/runtime.ts';
import { atChartVersion } from './fixtures.ts';
import { ArgoCdController } from './support/argocd-controller.ts';
import { KAMAJI_KUBEADM_CONFIG_API, KAMAJI_PKI, KAMAJI_SUPPORTED_VERSION, KamajiController, uploadKubeadmConfig } from './support/kamaji.ts';
import { KubeApiServer } from './support/kube-api-server.ts';
import { KubeadmWorker, kubeadmConfigRefusal, kubeadmJoinOf } from './support/kubeadm.ts';
import { call, createTestDatabase, newUser, serverLogger, startTestServer, TestClock, type TestDatabase } from './support.ts';

const TCP = 'kamaji.clastix.io/v1alpha1/tenantcontrolplanes';
const APP = 'argoproj.io/v1alpha1/applications';
const KAMAJI_NS = 'kamaji-tenants';
const ARGO_NS = 'argocd';

let management: KubeApiServer;
let tenant: KubeApiServer;
let dir: string;
let kubeconfigPath: string;
let database: TestDatabase;
let driver: ClusterDriver;
const clock = new TestClock();

beforeAll(async () => {
  management = await new KubeApiServer().start();
  tenant = await new KubeApiServer().start();
  dir = await mkdtemp(join(tmpdir(), 'kube-'));
  kubeconfigPath = join(dir, 'management.kubeconfig');
  await writeFile(kubeconfigPath, management.kubeconfig());
  database = await createTestDatabase();
  driver = await createClusterDriver(kubernetesConfig(), { db: database.db, clock });
});

afterAll(async () => {
  await management?.close();
  await tenant?.close();
  await database?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const kubernetesConfig = (env: Record<string, string> = {}) =>
  loadConfig({ CLUSTER_DRIVER: 'kubernetes', MANAGEMENT_KUBECONFIG: kubeconfigPath, ARGOCD_NAMESPACE: ARGO_NS, KAMAJI_NAMESPACE: KAMAJI_NS, ...env });

/**
 * What Kamaji does once the control plane runs: the status, the admin kubeconfig Secret (of the tenant), and the
 * tenant's kubeadm-config.
 */
function kamajiReady(clusterId: string, status = 'Ready', release = 'v1.31.13') {
  const name = k8sName(clusterId);
  management.put('v1/secrets', {
    metadata: { name: `${name}-admin-kubeconfig`, namespace: KAMAJI_NS },
    type: 'Opaque',
    data: { 'admin.conf': Buffer.from(tenant.kubeconfig()).toString('base64') },
  });
  management.setStatus(TCP, KAMAJI_NS, name, {
    controlPlaneEndpoint: new URL(tenant.url).host,
    kubernetesResources: { version: { status, version: release } },
    kubeconfig: { admin: { secretName: `${name}-admin-kubeconfig` } },
  });
  uploadKubeadmConfig(tenant, release);
}

async function runningCluster(): Promise<string> {
  const clusterId = newId('cl');
  await driver.createCluster({ cluster_id: clusterId, kubernetes_release: 'v1.31.13' });
  kamajiReady(clusterId);
  return clusterId;
}

async function collect(iterable: AsyncIterable<LogEntry>): Promise<LogEntry[]> {
  const entries: LogEntry[] = [];
  for await (const entry of iterable) entries.push(entry);
  return entries;
}

describe('configuration', () => {
  it('defaults to the simulation and refuses a kubernetes driver it cannot use, with one line', async () => {
    expect(loadConfig({}).clusterDriver).toEqual({ kind: 'simulated' });
    expect(await createClusterDriver(loadConfig({}), { db: database.db, clock })).toBeInstanceOf(SimulatedCloud);
    expect(() => loadConfig({ CLUSTER_DRIVER: 'nomad' })).toThrow(/CLUSTER_DRIVER must be simulated or kubernetes/);
    expect(() => loadConfig({ CLUSTER_DRIVER: 'kubernetes' })).toThrow(ConfigError);
    expect(() => loadConfig({ CLUSTER_DRIVER: 'kubernetes', MANAGEMENT_KUBECONFIG: join(dir, 'missing') })).toThrow(/MANAGEMENT_KUBECONFIG: cannot read/);
    expect(() => kubernetesConfig({ ARGOCD_NAMESPACE: 'Argo_CD' })).toThrow(/ARGOCD_NAMESPACE/);
    const broken = join(dir, 'broken.kubeconfig');
    await writeFile(broken, 'clusters: [this is not');
    const config = loadConfig({ CLUSTER_DRIVER: 'kubernetes', MANAGEMENT_KUBECONFIG: broken });
    await expect(createClusterDriver(config, { db: database.db, clock })).rejects.toThrow(ConfigError);
    expect(driver).toBeInstanceOf(KubernetesDriver);
    expect(kubernetesConfig().clusterDriver).toEqual({ kind: 'kubernetes', kubeconfigPath, argocdNamespace: ARGO_NS, kamajiNamespace: KAMAJI_NS });
  });
});

describe('start-up', () => {
  const start = (env: Record<string, string>) =>
    promisify(execFile)(process.execPath, [join(import.meta.dirname, '..', 'src', 'main.ts')], {
      env: { ...process.env, DATABASE_URL: database.url, PORT: '0', ...env },
    }).catch((e: { code: number; stderr: string }) => e);

  it('refuses to start with one line when the management kubeconfig is missing or is not a kubeconfig', async () => {
    const missing = await start({ CLUSTER_DRIVER: 'kubernetes', MANAGEMENT_KUBECONFIG: join(dir, 'nowhere') });
    expect(missing).toMatchObject({ code: 1 });
    expect((missing as { stderr: string }).stderr.trim()).toBe(`Cannot start: MANAGEMENT_KUBECONFIG: cannot read "${join(dir, 'nowhere')}"`);
    const notKubeconfig = join(dir, 'not.kubeconfig');
    await writeFile(notKubeconfig, 'just: text\n');
    const broken = await start({ CLUSTER_DRIVER: 'kubernetes', MANAGEMENT_KUBECONFIG: notKubeconfig });
    expect(broken).toMatchObject({ code: 1 });
    expect((broken as { stderr: string }).stderr.trim()).toMatch(
      /^Cannot start: MANAGEMENT_KUBECONFIG: "[^"]+" (is not a kubeconfig \(.*\)|has no current context with a cluster)$/,
    );
  });
});

describe('control planes (Kamaji)', () => {
  it('creates a TenantControlPlane, follows its status to RUNNING, and deletes it', async () => {
    const clusterId = newId('cl');
    const created = await driver.createCluster({ cluster_id: clusterId, kubernetes_release: 'v1.31.13' });
    expect(created).toEqual({ cluster_id: clusterId, status: 'PROVISIONING', message: null, endpoint: null });
    const tcp = management.get(TCP, KAMAJI_NS, k8sName(clusterId))!;
    expect(tcp.spec).toMatchObject({ kubernetes: { version: 'v1.31.13' }, controlPlane: { service: { serviceType: 'LoadBalancer' } } });
    expect(tcp.metadata.labels).toEqual({ 'platform-api/cluster': clusterId });
    // A re-run after a crash finds it: one TenantControlPlane.
    await driver.createCluster({ cluster_id: clusterId, kubernetes_release: 'v1.31.13' });
    expect(management.list(TCP, KAMAJI_NS).filter((o) => o.metadata.name === k8sName(clusterId))).toHaveLength(1);

    management.setStatus(TCP, KAMAJI_NS, k8sName(clusterId), { kubernetesResources: { version: { status: 'Provisioning' } } });
    expect((await driver.getCluster(clusterId))?.status).toBe('PROVISIONING');
    management.setStatus(TCP, KAMAJI_NS, k8sName(clusterId), { kubernetesResources: { version: { status: 'NotReady' } } });
    // NotReady: the control plane's Deployment has no ready replica yet, as in every first rollout.
    expect(await driver.getCluster(clusterId)).toMatchObject({ status: 'PROVISIONING', message: null });
    kamajiReady(clusterId);
    expect(await driver.getCluster(clusterId)).toEqual({ cluster_id: clusterId, status: 'RUNNING', message: null, endpoint: new URL(tenant.url).host });

    // Kamaji keeps a finalizer until the control plane's resources are gone: DELETING meanwhile.
    management.put(TCP, {
      ...management.get(TCP, KAMAJI_NS, k8sName(clusterId))!,
      metadata: { ...management.get(TCP, KAMAJI_NS, k8sName(clusterId))!.metadata, finalizers: ['finalizer.kamaji.clastix.io'] },
    });
    await driver.deleteCluster(clusterId);
    expect((await driver.getCluster(clusterId))?.status).toBe('DELETING');
    management.finalize(TCP, KAMAJI_NS, k8sName(clusterId), 'finalizer.kamaji.clastix.io');
    expect(await driver.getCluster(clusterId)).toBeUndefined();
    await driver.deleteCluster(clusterId); // gone already: succeeds
    expect(management.refused).toEqual([]);
  });

  it('mints a kubeconfig of the tenant with a TokenRequest token of a cluster-admin ServiceAccount, expiring as asked', async () => {
    const clusterId = newId('cl');
    await driver.createCluster({ cluster_id: clusterId, kubernetes_release: 'v1.31.13' });
    kamajiReady(clusterId);
    const first = await driver.kubeconfig(clusterId, 900);
    const config = parseYaml(first.kubeconfig);
    expect(config.clusters[0].cluster.server).toBe(tenant.url);
    expect(config.clusters[0].cluster['certificate-authority-data']).toEqual(expect.any(String));
    const token: string = config.users[0].user.token;
    expect(tenant.tokens.at(-1)).toEqual({ token, serviceAccount: 'kube-system/platform-admin', expirationSeconds: 900 });
    expect(Math.abs(first.expires_at - (Math.floor(Date.now() / 1000) + 900))).toBeLessThanOrEqual(5);
    const binding = tenant.get('rbac.authorization.k8s.io/v1/clusterrolebindings', undefined, 'platform-admin')!;
    expect(binding).toMatchObject({
      roleRef: { kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'platform-admin', namespace: 'kube-system' }],
    });
    // Again: the ServiceAccount and its binding exist already; a new token each time.
    const second = await driver.kubeconfig(clusterId, 3600);
    expect(parseYaml(second.kubeconfig).users[0].user.token).not.toBe(token);
    expect(tenant.refused).toEqual([]);
    await driver.deleteCluster(clusterId);
  });

  it('goes through the cluster workflow: the cluster is RUNNING once Kamaji reports Ready', async () => {
    const runtime = createRuntime({
      db: database.db,
      connectionString: database.url,
      clock,
      logger: serverLogger(),
      config: kubernetesConfig({ PROVIDER_RATE_LIMIT: '1000' }),
      driver,
      tickMs: 20,
    });
    await runtime.engine.run({ work: true });
    try {
      const user = await newUser(database.db, clock, 'pro');
      const workspace = await database.db.selectFrom('workspaces').select('id').where('owner_id', '=', user.userId).executeTakeFirstOrThrow();
      const clusterId = newId('cl');
      await database.db.transaction().execute(async (trx) => {
        await runtime.engine.start(trx, 'createCluster', clusterId);
        await trx
          .insertInto('clusters')
          .values({
            id: clusterId,
            workspace_id: workspace.id,
            name: 'kamaji',
            region_id: 'fsn1',
            kaas_version: 'v1.31',
            kaas_release: 'v1.31.13',
            status: 'PROVISIONING',
            status_message: null,
            created_at: clock.now(),
          })
          .execute();
      });
      const status = () => database.db.selectFrom('clusters').select('status').where('id', '=', clusterId).executeTakeFirstOrThrow();
      await until(async () => management.get(TCP, KAMAJI_NS, k8sName(clusterId)) !== undefined);
      expect((await status()).status).toBe('PROVISIONING');
      kamajiReady(clusterId);
      // The workflow looks again every 2 s of the injected clock: move it on while waiting, whenever it looked last.
      await until(async () => {
        clock.advance(2);
        return (await status()).status === 'RUNNING';
      });
    } finally {
      await runtime.engine.stop();
    }
  });
});

async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('machines joining', () => {
  it('mints one bootstrap token per machine and returns user_data with kubeadm join; Ready means the Node is Ready', async () => {
    const clusterId = await runningCluster();
    const machine = { cluster_id: clusterId, machine_id: newId('mch'), node_name: 'worker-1', kubernetes_release: 'v1.31.13' };
    const { user_data } = await driver.joinMachine(machine);
    const join = kubeadmJoinOf(user_data);
    const token = /^([a-z0-9]{6})\.([a-z0-9]{16})$/.exec(join.flags.token!);
    expect(join.endpoint).toBe(new URL(tenant.url).host);
    expect(join.flags['node-name']).toBe('worker-1');
    // The hash kubeadm's documentation computes for the test CA (openssl x509 -pubkey | openssl pkey -pubin
    // -outform der | openssl dgst -sha256), so the driver hashes the public key as kubeadm does.
    expect(join.flags['discovery-token-ca-cert-hash']).toBe('sha256:a09c31efb98a9d16d73883e2c2f81d34885888fec145def06472e4ef9d9308c7');
    const secret = tenant.get('v1/secrets', 'kube-system', `bootstrap-token-${token![1]}`) as unknown as { type: string; data: Record<string, string> };
    const data = Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    expect(secret.type).toBe('bootstrap.kubernetes.io/token');
    expect(data).toMatchObject({
      'token-id': token![1],
      'token-secret': token![2],
      'usage-bootstrap-authentication': 'true',
      'usage-bootstrap-signing': 'true',
    });
    expect(Date.parse(data.expiration!)).toBeGreaterThan(Date.now());
    // A re-run gets the same token; another machine another one.
    expect((await driver.joinMachine(machine)).user_data).toBe(user_data);
    const other = await driver.joinMachine({ ...machine, machine_id: newId('mch'), node_name: 'worker-2' });
    expect(kubeadmJoinOf(other.user_data).flags.token).not.toBe(join.flags.token);
    expect(tenant.list('v1/secrets', 'kube-system').filter((s) => s.metadata.name.startsWith('bootstrap-token-'))).toHaveLength(2);

    expect(await driver.nodeReady(clusterId, 'worker-1')).toBe(false);
    const node = (ready: string) => ({
      metadata: { name: 'worker-1' },
      status: { conditions: [{ type: 'Ready', status: ready, lastHeartbeatTime: new Date().toISOString(), reason: 'KubeletReady' }] },
    });
    tenant.put('v1/nodes', node('False'));
    expect(await driver.nodeReady(clusterId, 'worker-1')).toBe(false);
    tenant.put('v1/nodes', node('True'));
    expect(await driver.nodeReady(clusterId, 'worker-1')).toBe(true);
    expect(tenant.refused).toEqual([]);
  });
});

const CLOUD_INIT = '/usr/bin/cloud-init';

describe("a worker's cloud-config", () => {
  it("is one Debian's cloud-init accepts, and prepares Ubuntu 24.04 as kubeadm's install guides say before it joins", async () => {
    if (!existsSync(CLOUD_INIT)) throw new Error(`${CLOUD_INIT} is missing: install it with \`apt-get update && apt-get install -y cloud-init\`.`);
    const clusterId = await runningCluster();
    const { user_data } = await driver.joinMachine({ cluster_id: clusterId, machine_id: newId('mch'), node_name: 'worker-9', kubernetes_release: 'v1.31.13' });
    const file = join(dir, 'user-data.yaml');
    await writeFile(file, user_data);
    const { stdout } = await promisify(execFile)(CLOUD_INIT, ['schema', '--config-file', file]);
    expect(stdout).toContain('Valid cloud-config');
    const config = parseYaml(user_data) as { write_files: { path: string; content: string }[]; packages: string[]; runcmd: (string | string[])[] };
    const files = Object.fromEntries(config.write_files.map((f) => [f.path, f.content]));
    expect(files['/etc/modules-load.d/k8s.conf']).toBe('overlay\nbr_netfilter\n');
    expect(files['/etc/sysctl.d/k8s.conf']).toContain('net.ipv4.ip_forward = 1');
    expect(files['/etc/sysctl.d/k8s.conf']).toContain('net.bridge.bridge-nf-call-iptables = 1');
    expect(config.packages).toContain('containerd');
    const script = config.runcmd.filter((c) => typeof c === 'string').join('\n');
    expect(script).toMatch(/^set -eu$/m);
    expect(script).toContain('swapoff -a');
    expect(script).toContain("sed -i 's/SystemdCgroup = false/SystemdCgroup = true/' /etc/containerd/config.toml");
    // The cluster's minor release, not the latest.
    expect(script).toContain('https://pkgs.k8s.io/core:/stable:/v1.31/deb/Release.key');
    expect(script).toContain('https://pkgs.k8s.io/core:/stable:/v1.31/deb/ /');
    // The control plane's own patch release, as kubeadm's upgrade guide pins it, not the repository's newest.
    expect(script).toContain("apt-get install -y kubelet='1.31.13-*' kubeadm='1.31.13-*' kubernetes-cni");
    expect(kubeadmJoinOf(user_data).flags['node-name']).toBe('worker-9');
  });

  it('joins with the token and CA hash the driver minted, and kubeadm refuses any other', async () => {
    const clusterId = await runningCluster();
    const kubeadm = new KubeadmWorker(tenant, () => false);
    const { user_data } = await driver.joinMachine({ cluster_id: clusterId, machine_id: newId('mch'), node_name: 'worker-7', kubernetes_release: 'v1.31.13' });
    const { token, 'discovery-token-ca-cert-hash': hash } = kubeadmJoinOf(user_data).flags;
    const [id, secret] = token!.split('.');
    expect(() => kubeadm.boot(user_data.replace(`${id}.${secret}`, `${id}.${'x'.repeat(16)}`))).toThrow(/could not find a JWS signature/);
    expect(() => kubeadm.boot(user_data.replace(hash!, `sha256:${'0'.repeat(64)}`))).toThrow(/are pinned/);
    expect(() => kubeadm.boot(user_data.replace(new URL(tenant.url).host, '10.0.0.1:6443'))).toThrow(/identity of the API Server/);
    expect(tenant.get('v1/nodes', undefined, 'worker-7')).toBeUndefined();
    expect(kubeadm.boot(user_data)).toBe('worker-7');
    // Joined, but NotReady until the cluster has a pod network.
    expect(await driver.nodeReady(clusterId, 'worker-7')).toBe(false);
    expect(tenant.refused).toEqual([]);
  });

  it("installs the kubelet and kubeadm of the control plane's patch release, not the newest its repository has since", async () => {
    const clusterId = await runningCluster();
    const kubeadm = new KubeadmWorker(tenant, () => false);
    // A patch published after the cluster was made: an unpinned install would take it.
    kubeadm.repository.publish('v1.31.14');
    const { user_data } = await driver.joinMachine({
      cluster_id: clusterId,
      machine_id: newId('mch'),
      node_name: 'worker-pin',
      kubernetes_release: 'v1.31.13',
    });
    expect(kubeadm.boot(user_data)).toBe('worker-pin');
    const node = tenant.get('v1/nodes', undefined, 'worker-pin') as unknown as { status: { nodeInfo: { kubeletVersion: string } } };
    expect(node.status.nodeInfo.kubeletVersion).toBe('v1.31.13');
    // A release the repository does not have is apt's error, not some other version.
    const missing = await driver.joinMachine({ cluster_id: clusterId, machine_id: newId('mch'), node_name: 'worker-none', kubernetes_release: 'v1.31.99' });
    expect(() => kubeadm.boot(missing.user_data)).toThrow("E: Version '1.31.99-*' for 'kubelet' was not found");
  });

  it("joins with a kubeadm that reads Kamaji's v1beta4 kubeadm-config (v1.29 and later), and is refused as kubeadm refuses an older one", async () => {
    const clusterId = newId('cl');
    await driver.createCluster({ cluster_id: clusterId, kubernetes_release: 'v1.30.14' });
    kamajiReady(clusterId, 'Ready', 'v1.30.14');
    const kubeadm = new KubeadmWorker(tenant, () => false);
    const join = (release: string, node: string) =>
      driver.joinMachine({ cluster_id: clusterId, machine_id: newId('mch'), node_name: node, kubernetes_release: release }).then((j) => j.user_data);
    expect(kubeadm.boot(await join('v1.30.14', 'worker-130'))).toBe('worker-130');
    // kubeadm 1.28 has v1beta4 in its scheme, with extraArgs still a map; 1.27 has no v1beta4 at all.
    const old = await join('v1.28.15', 'worker-128');
    expect(() => kubeadm.boot(old)).toThrow(
      'unable to fetch the kubeadm-config ConfigMap: failed to decode cluster configuration data: json: cannot unmarshal array into Go struct field APIServer.apiServer.extraArgs of type map[string]string',
    );
    const older = await join('v1.27.16', 'worker-127');
    expect(() => kubeadm.boot(older)).toThrow('no kind "ClusterConfiguration" is registered for version "kubeadm.k8s.io/v1beta4"');
    expect(tenant.get('v1/nodes', undefined, 'worker-128')).toBeUndefined();
    // Every version the platform offers installs a kubeadm that reads what Kamaji writes.
    for (const { release } of await database.db.selectFrom('kaas_versions').select('release').where('available_for_new_clusters', '=', true).execute())
      expect(kubeadmConfigRefusal(release.slice(1), KAMAJI_KUBEADM_CONFIG_API), release).toBeUndefined();
  });
});

describe("a cluster's pod network", () => {
  it("is an Argo CD Application of the pinned Flannel chart with the control plane's pod CIDR, created once and deleted with the cluster", async () => {
    const clusterId = await runningCluster();
    await driver.ensureNetwork(clusterId);
    await driver.ensureNetwork(clusterId); // a re-run finds it
    const cni = management.get(APP, ARGO_NS, cniApplicationName(k8sName(clusterId))) as unknown as {
      spec: { source: Record<string, unknown>; destination: unknown; syncPolicy: { managedNamespaceMetadata: unknown } };
    };
    expect(cni.spec.source).toEqual({
      repoURL: 'https://flannel-io.github.io/flannel/',
      chart: 'flannel',
      targetRevision: 'v0.28.9',
      helm: { releaseName: 'flannel', valuesObject: { podCidr: POD_CIDR } },
    });
    expect(cni.spec.destination).toEqual({ name: k8sName(clusterId), namespace: 'kube-flannel' });
    expect(cni.spec.syncPolicy.managedNamespaceMetadata).toEqual({ labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } });
    // The tenant is registered with Argo CD as the Application's destination.
    expect(management.get('v1/secrets', ARGO_NS, `cluster-${k8sName(clusterId)}`)).toBeDefined();
    await driver.deleteCluster(clusterId);
    expect(management.get(APP, ARGO_NS, cniApplicationName(k8sName(clusterId)))).toBeUndefined();
    expect(management.refused).toEqual([]);
  });

  it('moves an existing Application whose spec the platform has since changed (chart bump, pod CIDR) by a merge patch, keeping its status', async () => {
    const clusterId = await runningCluster();
    await driver.ensureNetwork(clusterId);
    const name = cniApplicationName(k8sName(clusterId));
    const path = `/apis/argoproj.io/v1alpha1/namespaces/${ARGO_NS}/applications/${name}`;
    type Cni = { spec: { source: { targetRevision: string; helm: { valuesObject: unknown } } }; status?: { health?: unknown } };
    // As an older platform left it: the previous chart release and another pod CIDR; Argo CD has synced it.
    const old = management.get(APP, ARGO_NS, name) as unknown as Cni & Parameters<typeof management.put>[1];
    management.put(APP, {
      ...old,
      spec: {
        ...old.spec,
        source: { ...old.spec.source, targetRevision: 'v0.27.0', helm: { releaseName: 'flannel', valuesObject: { podCidr: '10.42.0.0/16' } } },
      },
      status: { sync: { status: 'Synced' }, health: { status: 'Healthy' } },
    } as Parameters<typeof management.put>[1]);
    const before = management.requests.length;
    await driver.ensureNetwork(clusterId);
    const writes = management.requests.slice(before).filter((r) => /^(POST|PUT|PATCH) /.test(r) && r.includes('/applications'));
    expect(writes).toEqual([`PATCH ${path}`]);
    const cni = management.get(APP, ARGO_NS, name) as unknown as Cni;
    expect(cni.spec.source.targetRevision).toBe('v0.28.9');
    expect(cni.spec.source.helm.valuesObject).toEqual({ podCidr: POD_CIDR });
    expect(cni.status?.health).toEqual({ status: 'Healthy' }); // Argo CD's status is left as it wrote it
    // Already as wanted: nothing is written.
    const after = management.requests.length;
    await driver.ensureNetwork(clusterId);
    expect(management.requests.slice(after).filter((r) => /^(POST|PUT|PATCH) /.test(r) && r.includes('/applications'))).toEqual([]);
    expect(management.refused).toEqual([]);
  });

  it('makes joined nodes Ready once Argo CD reports it Healthy, not before', async () => {
    const clusterId = await runningCluster();
    const cni = () => management.get(APP, ARGO_NS, cniApplicationName(k8sName(clusterId)));
    const kubeadm = new KubeadmWorker(tenant, () => (cni()?.status as { health?: { status?: string } } | undefined)?.health?.status === 'Healthy');
    const { user_data } = await driver.joinMachine({
      cluster_id: clusterId,
      machine_id: newId('mch'),
      node_name: 'worker-net',
      kubernetes_release: 'v1.31.13',
    });
    kubeadm.boot(user_data);
    expect(await driver.nodeReady(clusterId, 'worker-net')).toBe(false);
    await driver.ensureNetwork(clusterId);
    kubeadm.heartbeat();
    expect(await driver.nodeReady(clusterId, 'worker-net')).toBe(false); // created, not yet synced
    management.setStatus(APP, ARGO_NS, cni()!.metadata.name, { sync: { status: 'Synced' }, health: { status: 'Healthy' } });
    kubeadm.heartbeat();
    expect(await driver.nodeReady(clusterId, 'worker-net')).toBe(true);
    expect(tenant.refused).toEqual([]);
    expect(management.refused).toEqual([]);
  });
});

describe('clusters through the API', () => {
  it('creates the control plane, runs once Kamaji reports Ready, and deletes it with the cluster', async () => {
    const runtime = createRuntime({
      db: database.db,
      connectionString: database.url,
      clock,
      logger: serverLogger(),
      config: kubernetesConfig({ PROVIDER_RATE_LIMIT: '1000' }),
      driver,
      tickMs: 20,
    });
    await runtime.engine.run({ work: true });
    const server = await startTestServer(database.db, clock, {}, { workflows: runtime.engine, provider: runtime.provider, driver: runtime.driver });
    try {
      const api = createPlatformClient({ baseUrl: server.baseUrl, token: (await newUser(database.db, clock, 'pro')).token, retry: false });
      const cluster = await api.POST('/v1/clusters', { body: { name: 'short-lived', region_id: 'fsn1', kaas_version: 'v1.32' } });
      await until(async () => management.get(TCP, KAMAJI_NS, k8sName(cluster.id)) !== undefined);
      expect(management.get(TCP, KAMAJI_NS, k8sName(cluster.id))!.spec).toMatchObject({ kubernetes: { version: 'v1.32.9' } });
      kamajiReady(cluster.id);
      // The workflow looks again every 2 s of the injected clock: move it on while waiting, whenever it looked last.
      await until(async () => {
        clock.advance(2);
        return (await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).kaas.status === 'RUNNING';
      });
      await api.DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
      expect(management.get(TCP, KAMAJI_NS, k8sName(cluster.id))).toBeUndefined();
      expect(management.refused).toEqual([]);
    } finally {
      await server.close();
      await runtime.engine.stop();
    }
  });
});

describe('machines through the provision workflow', () => {
  it('creates the server with the join script of the tenant cluster, and is ready once its Node is Ready', async () => {
    const runtime = createRuntime({
      db: database.db,
      connectionString: database.url,
      clock,
      logger: serverLogger(),
      config: kubernetesConfig({ PROVIDER_RATE_LIMIT: '1000', SIM_BOOT_SECONDS: '1' }),
      driver,
      tickMs: 20,
    });
    await runtime.engine.run({ work: true });
    const server = await startTestServer(database.db, clock, {}, { workflows: runtime.engine, provider: runtime.provider, driver: runtime.driver });
    try {
      const user = await newUser(database.db, clock, 'pro');
      const api = createPlatformClient({ baseUrl: server.baseUrl, token: user.token, retry: false });
      const cluster = await api.POST('/v1/clusters', { body: { name: 'joined', region_id: 'fsn1' } });
      await until(async () => management.get(TCP, KAMAJI_NS, k8sName(cluster.id)) !== undefined);
      kamajiReady(cluster.id);
      // The workflow looks again every 2 s of the injected clock: move it on while waiting, whenever it looked last.
      await until(async () => {
        clock.advance(2);
        return (await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).kaas.status === 'RUNNING';
      });
      const config = await api.POST('/v1/compute/configs', {
        body: {
          name: 'plain',
          provider: 'hcloud',
          provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
        },
      });
      const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      const machines = () => api.GET('/v1/compute/machines', { params: { query: { cluster_id: cluster.id } } });
      // The server boots; the workflow then asks the tenant cluster for the node, which has not joined yet.
      const asked = () => tenant.requests.some((r) => r.startsWith(`GET /api/v1/nodes/${machine.node_name}`));
      await until(async () => {
        clock.advance(1);
        return asked();
      });
      const token = tenant.list('v1/secrets', 'kube-system').filter((s) => s.metadata.labels?.['platform-api/cluster'] === cluster.id);
      expect(token).toHaveLength(1);
      expect((await machines())[0]?.status).toBe('provisioning');
      tenant.put('v1/nodes', { metadata: { name: machine.node_name }, status: { conditions: [{ type: 'Ready', status: 'True' }] } });
      await until(async () => {
        clock.advance(2);
        return (await machines())[0]?.status === 'ready';
      });
      expect(management.refused).toEqual([]);
      expect(tenant.refused).toEqual([]);
    } finally {
      await server.close();
      await runtime.engine.stop();
    }
  });
});

describe('installs (Argo CD Applications)', () => {
  it('take a chart repository when the chart is named, else the Git folder; empty fields are not used', () => {
    const at = { repo_url: 'https://charts.example.com/stable', target_revision: '1.2.3' };
    expect(chartLocation({ ...at, chart: 'web', path: 'charts/web' })).toEqual({ chart: 'web' });
    expect(chartLocation({ ...at, chart: '', path: 'charts/web' })).toEqual({ path: 'charts/web' });
    expect(chartLocation({ ...at, chart: 'web', path: '' })).toEqual({ chart: 'web' });
    expect(chartLocation({ ...at, chart: '', path: '' })).toBeUndefined();
    expect(chartLocation(at)).toBeUndefined();
  });

  it('creates an Application for the tenant cluster, follows sync and health, upgrades on a new template, and uninstalls through the finalizer', async () => {
    const clusterId = await runningCluster();
    const installId = newId('ins');
    const request: HelmReleaseRequest = {
      cluster_id: clusterId,
      namespace: installId,
      release: 'web-abc123',
      chart: { repo_url: 'https://charts.example.com/stable', target_revision: '1.2.3', chart: 'web' },
      values: { replicas: 2, image: { tag: 'v1' } },
      template_id: 'tpl_one',
      pull_secrets: [{ server: 'registry.example.com', username: 'robot', password: 'hunter2' }],
    };
    expect(await driver.upsertRelease(request)).toEqual({
      namespace: installId,
      release: 'web-abc123',
      status: 'pending-install',
      revision: 1,
      template_id: 'tpl_one',
      message: null,
    });
    const name = applicationName(installId, 'web-abc123');
    const app = management.get(APP, ARGO_NS, name) as unknown as { metadata: { finalizers: string[] }; spec: Record<string, any> };
    expect(app.metadata.finalizers).toEqual([ARGOCD_FINALIZER]);
    expect(app.spec.destination).toEqual({ name: k8sName(clusterId), namespace: k8sName(installId) });
    expect(app.spec.source).toEqual({
      repoURL: 'https://charts.example.com/stable',
      targetRevision: '1.2.3',
      chart: 'web',
      helm: {
        releaseName: 'web-abc123',
        valuesObject: {
          replicas: 2,
          image: { tag: 'v1' },
          imagePullSecrets: [{ name: 'web-abc123-registry' }],
          global: { imagePullSecrets: [{ name: 'web-abc123-registry' }] },
        },
      },
    });
    // The tenant cluster is registered with Argo CD under the destination's name.
    const registration = management.get('v1/secrets', ARGO_NS, `cluster-${k8sName(clusterId)}`) as unknown as {
      metadata: { labels: Record<string, string> };
      data: Record<string, string>;
    };
    expect(registration.metadata.labels['argocd.argoproj.io/secret-type']).toBe('cluster');
    expect(Buffer.from(registration.data.name!, 'base64').toString()).toBe(k8sName(clusterId));
    expect(Buffer.from(registration.data.server!, 'base64').toString()).toBe(tenant.url);
    expect(JSON.parse(Buffer.from(registration.data.config!, 'base64').toString())).toMatchObject({ bearerToken: tenant.token });
    // The registry credentials, as the pull secret the values name, in the install's namespace of the tenant.
    const pull = tenant.get('v1/secrets', k8sName(installId), 'web-abc123-registry') as unknown as { type: string; data: Record<string, string> };
    expect(pull.type).toBe('kubernetes.io/dockerconfigjson');
    expect(JSON.parse(Buffer.from(pull.data['.dockerconfigjson']!, 'base64').toString())).toEqual({
      auths: { 'registry.example.com': { username: 'robot', password: 'hunter2', auth: Buffer.from('robot:hunter2').toString('base64') } },
    });

    const argo = (sync: string, health: string, source: unknown = management.get(APP, ARGO_NS, name)!.spec, message?: string) =>
      management.setStatus(APP, ARGO_NS, name, {
        sync: { status: sync, comparedTo: { source: (source as { source: unknown }).source, destination: app.spec.destination } },
        health: { status: health, ...(message ? { message } : {}) },
      });
    const status = async () => (await driver.getRelease(clusterId, installId, 'web-abc123'))?.status;
    argo('OutOfSync', 'Missing');
    expect(await status()).toBe('pending-install');
    argo('Synced', 'Progressing');
    expect(await status()).toBe('pending-install');
    argo('Synced', 'Healthy');
    expect(await status()).toBe('deployed');
    argo('Synced', 'Degraded', undefined, 'Deployment web exceeded its progress deadline');
    expect(await driver.getRelease(clusterId, installId, 'web-abc123')).toMatchObject({
      status: 'failed',
      message: 'Deployment web exceeded its progress deadline',
    });
    argo('Synced', 'Healthy');

    // The same template again (a re-run) is the same revision; a new template is an upgrade.
    expect(await driver.upsertRelease(request)).toMatchObject({ status: 'deployed', revision: 1 });
    const previous = structuredClone(management.get(APP, ARGO_NS, name)!.spec);
    const upgraded = await driver.upsertRelease({ ...request, template_id: 'tpl_two', values: { replicas: 3, image: { tag: 'v2' } } });
    expect(upgraded).toMatchObject({ status: 'pending-upgrade', revision: 2, template_id: 'tpl_two' });
    expect((management.get(APP, ARGO_NS, name)!.spec as { source: { helm: { valuesObject: unknown } } }).source.helm.valuesObject).toMatchObject({
      replicas: 3,
      image: { tag: 'v2' },
    });
    argo('Synced', 'Healthy', previous); // Argo CD has not compared the new source yet
    expect(await status()).toBe('pending-upgrade');
    argo('Synced', 'Healthy');
    expect(await status()).toBe('deployed');

    // Uninstall: Argo CD deletes what it deployed, then drops its finalizer and the Application goes.
    await driver.uninstallRelease(clusterId, installId, 'web-abc123');
    expect(management.get(APP, ARGO_NS, name)?.metadata.deletionTimestamp).toBeDefined();
    expect(await driver.getRelease(clusterId, installId, 'web-abc123')).toBeDefined();
    management.finalize(APP, ARGO_NS, name, ARGOCD_FINALIZER);
    expect(await driver.getRelease(clusterId, installId, 'web-abc123')).toBeUndefined();
    await driver.uninstallRelease(clusterId, installId, 'web-abc123'); // gone already: succeeds
    expect(management.refused).toEqual([]);
    expect(tenant.refused).toEqual([]);
  });
});

describe('installs through the API', () => {
  it('installs as an Application, runs once Argo CD reports it Synced and Healthy, streams pod logs with resumable ids, and upgrades on a product update', async () => {
    const runtime = createRuntime({
      db: database.db,
      connectionString: database.url,
      clock,
      logger: serverLogger(),
      config: kubernetesConfig({ PROVIDER_RATE_LIMIT: '1000' }),
      driver,
      tickMs: 20,
    });
    await runtime.engine.run({ work: true });
    const server = await startTestServer(
      database.db,
      clock,
      { LOG_POLL_MS: '20' },
      { workflows: runtime.engine, provider: runtime.provider, driver: runtime.driver },
    );
    try {
      const user = await newUser(database.db, clock, 'pro');
      const api = createPlatformClient({ baseUrl: server.baseUrl, token: user.token, retry: false });
      const cluster = await api.POST('/v1/clusters', { body: { name: 'apps', region_id: 'fsn1' } });
      await until(async () => management.get(TCP, KAMAJI_NS, k8sName(cluster.id)) !== undefined);
      kamajiReady(cluster.id);
      await until(async () => {
        clock.advance(2);
        return (await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).kaas.status === 'RUNNING';
      });
      const product = await api.POST('/v1/products', {
        body: {
          name: 'Shop',
          cluster_ids: [cluster.id],
          sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' }, values: { replicaCount: 1 } }],
        },
      });
      const install = await api.POST('/v1/installs', {
        body: { product_id: product.id, region_id: 'fsn1', overrides: [{ template_helm_source_id: product.sources[0]!.id, values: { replicaCount: 2 } }] },
      });
      const application = () =>
        management.list(APP, ARGO_NS).find((a) => a.metadata.labels?.['platform-api/install'] === install.id) as
          | {
              metadata: { name: string; annotations: Record<string, string> };
              spec: { source: { targetRevision: string; helm: { valuesObject: unknown } }; destination: unknown };
            }
          | undefined;
      await until(async () => application() !== undefined);
      expect(application()!.spec.source).toMatchObject({
        repoURL: 'https://charts.bitnami.com/bitnami',
        targetRevision: '19.6.1',
        chart: 'wordpress',
        helm: { valuesObject: { replicaCount: 2 } },
      });
      const getInstall = () => api.GET('/v1/installs/{id}', { params: { path: { id: install.id } } });
      clock.advance(2);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await getInstall()).status).toBe('installing');
      const argoDone = () =>
        management.setStatus(APP, ARGO_NS, application()!.metadata.name, {
          sync: { status: 'Synced', comparedTo: { source: application()!.spec.source, destination: application()!.spec.destination } },
          health: { status: 'Healthy' },
        });
      argoDone();
      await until(async () => {
        clock.advance(2);
        return (await getInstall()).status === 'running';
      });

      // The pod Argo CD deployed writes lines (several in one second); the stream's ids resume exactly.
      const namespace = k8sName(install.id);
      tenant.put('v1/pods', {
        metadata: { name: 'wordpress-5f7d-abcde', namespace },
        spec: { containers: [{ name: 'wordpress', image: 'bitnami/wordpress:6' }] },
        status: { phase: 'Running' },
      });
      tenant.appendLog(
        namespace,
        'wordpress-5f7d-abcde',
        'wordpress',
        Array.from({ length: 12 }, (_, i) => ({ time: `2026-11-23T12:00:0${Math.floor(i / 4)}.${String(i % 4).padStart(9, '0')}Z`, line: `line ${i}` })),
      );
      const read = async (query: string, headers: Record<string, string> = {}) => {
        const reply = await call(server.baseUrl, 'GET', `/v1/installs/${install.id}/logs?follow=false${query}`, {
          token: user.token,
          headers: { accept: 'text/event-stream', ...headers },
        });
        expect(reply.status).toBe(200);
        return String(reply.body)
          .split('\n\n')
          .filter((e) => e.includes('event: log'))
          .map((e) => ({ id: /^id: (.+)$/m.exec(e)![1]!, data: JSON.parse(/^data: (.+)$/m.exec(e)![1]!) as { timestamp: string; line: string } }));
      };
      const all = await read('');
      expect(all.map((e) => e.data.line)).toEqual(Array.from({ length: 12 }, (_, i) => `line ${i}`));
      for (const from of [0, 4, 5, 10]) {
        expect((await read('', { 'last-event-id': all[from]!.id })).map((e) => e.data)).toEqual(all.slice(from + 1).map((e) => e.data));
      }
      expect((await read('&tail=3')).map((e) => e.data.line)).toEqual(['line 9', 'line 10', 'line 11']);

      // A product update: the Application moves to the new chart version, and runs once Argo CD has it.
      await api.PATCH('/v1/products/{id}', {
        params: { path: { id: product.id } },
        body: atChartVersion(product, '19.7.0'),
      });
      await until(async () => {
        clock.advance(2);
        return application()?.spec.source.targetRevision === '19.7.0';
      });
      expect(application()!.metadata.annotations['platform-api/revision']).toBe('2');
      argoDone();
      await until(async () => {
        clock.advance(2);
        return (await api.GET('/v1/products/{id}', { params: { path: { id: product.id } } })).regeneration_status === 'succeeded';
      });
      expect(management.refused).toEqual([]);
      expect(tenant.refused).toEqual([]);
    } finally {
      await server.close();
      await runtime.engine.stop();
    }
  });
});

describe('validation', () => {
  it('refuses objects that break their published schema with a Status 422', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(management.kubeconfig());
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => undefined,
        (error: unknown) => (error instanceof ApiException ? error.code : error),
      );
    const before = management.refused.length;
    // Kamaji's CRD requires spec.kubernetes (version, kubelet) and a known service type.
    const tcp = {
      apiVersion: 'kamaji.clastix.io/v1alpha1',
      kind: 'TenantControlPlane',
      metadata: { name: 'broken' },
      spec: { controlPlane: { service: { serviceType: 'LoadBalancer' } } },
    };
    expect(
      await refusal(
        custom.createNamespacedCustomObject({
          group: 'kamaji.clastix.io',
          version: 'v1alpha1',
          plural: 'tenantcontrolplanes',
          namespace: KAMAJI_NS,
          body: tcp,
        }),
      ),
    ).toBe(422);
    const wrongType = { ...tcp, spec: { controlPlane: { service: { serviceType: 'Magic' } }, kubernetes: { version: 'v1.33.2', kubelet: {} } } };
    expect(
      await refusal(
        custom.createNamespacedCustomObject({
          group: 'kamaji.clastix.io',
          version: 'v1alpha1',
          plural: 'tenantcontrolplanes',
          namespace: KAMAJI_NS,
          body: wrongType,
        }),
      ),
    ).toBe(422);
    const valid = { ...tcp, spec: { ...wrongType.spec, controlPlane: { service: { serviceType: 'ClusterIP' } } } };
    expect(
      await refusal(
        custom.createNamespacedCustomObject({
          group: 'kamaji.clastix.io',
          version: 'v1alpha1',
          plural: 'tenantcontrolplanes',
          namespace: KAMAJI_NS,
          body: valid,
        }),
      ),
    ).toBeUndefined();
    // Argo CD's Application: the destination is an object and the source needs repoURL.
    const application = {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'broken' },
      spec: { project: 'default', source: { targetRevision: '1.0.0' }, destination: 'tenant' },
    };
    expect(
      await refusal(
        custom.createNamespacedCustomObject({ group: 'argoproj.io', version: 'v1alpha1', plural: 'applications', namespace: ARGO_NS, body: application }),
      ),
    ).toBe(422);
    // A Secret whose data is not base64, and an object whose name is not a DNS name.
    expect(
      await refusal(
        core.createNamespacedSecret({
          namespace: ARGO_NS,
          body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'broken' }, data: { key: 'not base64!' } },
        }),
      ),
    ).toBe(422);
    expect(
      await refusal(core.createNamespacedSecret({ namespace: ARGO_NS, body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'Not_A_Name' } } })),
    ).toBe(422);
    expect(management.refused.length - before).toBe(5);
    expect(management.get(TCP, KAMAJI_NS, 'broken')).toBeDefined();
    expect(management.get(APP, ARGO_NS, 'broken')).toBeUndefined();

    // The driver itself checks an Application against Argo CD's schema before sending it.
    const clusterId = await runningCluster();
    const invalid = driver.upsertRelease({
      cluster_id: clusterId,
      namespace: newId('ins'),
      release: 'web-1',
      chart: { repo_url: 'https://charts.example.com', target_revision: 42 as unknown as string, chart: 'web' },
      values: {},
      template_id: 't',
    });
    await expect(invalid).rejects.toThrow(/targetRevision/);
    expect(management.refused.length - before).toBe(5);
  });
});

describe('pod logs', () => {
  const container: PodContainer = { pod: 'web-7d9f-x2x', container: 'web' };
  let clusterId: string;
  let installId: string;
  const lines = [
    { time: '2026-11-23T12:00:00.000000000Z', line: 'starting' },
    { time: '2026-11-23T12:00:00.250000000Z', line: 'config loaded' },
    { time: '2026-11-23T12:00:01.123456789Z', line: 'listening on :8080' },
    // Two lines in the same nanosecond, then one in the same microsecond: distinct positions all the same.
    { time: '2026-11-23T12:00:01.123456789Z', line: 'GET /healthz 200' },
    { time: '2026-11-23T12:00:01.123456999Z', line: 'GET /healthz 200' },
    { time: '2026-11-23T12:00:02.5Z', line: 'GET /api 201' },
  ];
  const read = (options: Partial<ReadLogOptions>) =>
    collect(driver.readLog(clusterId, installId, container, { follow: false, signal: new AbortController().signal, ...options }));

  beforeAll(async () => {
    clusterId = await runningCluster();
    installId = newId('ins');
    const namespace = k8sName(installId);
    const pod = (name: string, phase: string) => ({
      metadata: { name, namespace },
      spec: { containers: [{ name: 'web', image: 'web:1' }, ...(name === container.pod ? [{ name: 'sidecar', image: 'proxy:1' }] : [])] },
      status: { phase },
    });
    tenant.put('v1/pods', pod(container.pod, 'Running'));
    tenant.put('v1/pods', pod('web-7d9f-pending', 'Pending'));
    tenant.appendLog(namespace, container.pod, 'web', lines);
  });

  it('lists the containers of the running pods, and reads a log with positions from the timestamps', async () => {
    expect(await driver.listContainers(clusterId, installId)).toEqual([{ pod: container.pod, container: 'sidecar' }, container]);
    const all = await read({});
    expect(all.map((e) => e.line)).toEqual(lines.map((l) => l.line));
    expect(all.map((e) => e.timestamp_ms)).toEqual(
      lines.map((l) => Math.floor(Date.parse(l.time.replace(/\.\d+Z$/, 'Z')) + Number(`0.${l.time.split('.')[1]!.replace('Z', '')}`) * 1000)),
    );
    for (let i = 1; i < all.length; i++) expect(all[i]!.position).toBeGreaterThan(all[i - 1]!.position);
    expect(all[0]!.position).toBe(Date.parse('2026-11-23T12:00:00Z') * 1000);
    expect(all.every((e) => e.pod === container.pod && e.container === 'web')).toBe(true);
    // A container still being created has nothing to read yet (the API answers 400, not an error for us).
    expect(
      await collect(
        driver.readLog(clusterId, installId, { pod: 'web-7d9f-pending', container: 'web' }, { follow: false, signal: new AbortController().signal }),
      ),
    ).toEqual([]);
    expect(tenant.requests.some((r) => r.startsWith(`GET /api/v1/namespaces/${k8sName(installId)}/pods/web-7d9f-pending/log`))).toBe(true);
  });

  it('reads the tail and since a moment, with the same positions', async () => {
    const all = await read({});
    expect(await read({ tail: 2 })).toEqual(all.slice(-2));
    expect(await read({ since_ms: Date.parse('2026-11-23T12:00:01.2Z') })).toEqual(all.slice(-1));
    expect(await read({ since_ms: Date.parse('2026-11-23T12:00:00.1Z') })).toEqual(all.slice(1));
    expect(tenant.requests.some((r) => r.includes('sinceTime=2026-11-23T12%3A00%3A00Z'))).toBe(true);
  });

  it('resumes after any line without a duplicate or a gap', async () => {
    const all = await read({});
    for (let i = 0; i < all.length; i++) {
      expect(await read({ after: all[i]!.position })).toEqual(all.slice(i + 1));
    }
  });

  it('follows new lines until the reader stops or the pod goes away', async () => {
    const all = await read({});
    const stop = new AbortController();
    const followed: LogEntry[] = [];
    const reading = (async () => {
      for await (const entry of driver.readLog(clusterId, installId, container, { follow: true, signal: stop.signal, after: all.at(-1)!.position })) {
        followed.push(entry);
        if (followed.length === 2) stop.abort();
      }
    })();
    await until(async () => tenant.requests.some((r) => r.includes('follow=true')));
    tenant.appendLog(k8sName(installId), container.pod, 'web', [
      { time: '2026-11-23T12:00:03.000000001Z', line: 'GET /a 200' },
      { time: '2026-11-23T12:00:03.000000002Z', line: 'GET /b 200' },
    ]);
    await reading;
    expect(followed.map((e) => e.line)).toEqual(['GET /a 200', 'GET /b 200']);
    expect(followed[0]!.position).toBeGreaterThan(all.at(-1)!.position);
    expect(followed[1]!.position).toBeGreaterThan(followed[0]!.position);

    // Followed to the end: deleting the pod ends the stream.
    const tail = collect(driver.readLog(clusterId, installId, container, { follow: true, signal: new AbortController().signal, after: followed[1]!.position }));
    const follows = tenant.requests.filter((r) => r.includes('follow=true')).length;
    await until(async () => tenant.requests.filter((r) => r.includes('follow=true')).length > follows);
    tenant.deletePod(k8sName(installId), container.pod);
    expect(await tail).toEqual([]);
    expect(await read({})).toEqual([]); // the pod is gone: nothing to read
  });
});

describe('Argo CD as it reports (the controller double of test/support/argocd-controller.ts)', () => {
  const CHARTS = 'https://charts.example.com/stable';
  const argocd = () => new ArgoCdController(management, ARGO_NS).addRepository({ url: CHARTS, charts: { web: ['1.2.3', '1.3.0'] } });
  const requestFor = (clusterId: string, chart: Partial<HelmReleaseRequest['chart']> = {}): HelmReleaseRequest => ({
    cluster_id: clusterId,
    namespace: newId('ins'),
    release: 'web-abc123',
    chart: { repo_url: CHARTS, target_revision: '1.2.3', chart: 'web', ...chart },
    values: { replicas: 2 },
    template_id: 'tpl_one',
  });
  let refused = 0;
  beforeEach(() => {
    refused = management.refused.length;
  });
  const get = (request: HelmReleaseRequest) => driver.getRelease(request.cluster_id, request.namespace, request.release);
  /** Reconciles until the release leaves `pending-…` (or a few passes went by). */
  async function settle(controller: ArgoCdController, request: HelmReleaseRequest) {
    for (let i = 0; i < 6; i++) {
      controller.reconcile();
      const release = await get(request);
      if (!release?.status.startsWith('pending') || release.condition) return release;
    }
    return get(request);
  }

  it('reports an unknown chart or repository as the ComparisonError Argo CD sets, and an unknown destination as its InvalidSpecError', async () => {
    const controller = argocd();
    const clusterId = await runningCluster();
    const unknownChart = requestFor(clusterId, { chart: 'nope' });
    await driver.upsertRelease(unknownChart);
    expect(await settle(controller, unknownChart)).toMatchObject({
      status: 'pending-install',
      condition:
        "ComparisonError: Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = chart 'nope' not found in index",
    });
    const unknownRepository = requestFor(clusterId, { repo_url: 'https://charts.example.com/missing' });
    await driver.upsertRelease(unknownRepository);
    expect((await settle(controller, unknownRepository))?.condition).toMatch(/failed to get index: 404 Not Found$/);
    // Argo CD no longer knows the cluster (its Secret is gone): InvalidSpecError.
    const known = requestFor(clusterId);
    await driver.upsertRelease(known);
    expect(await settle(controller, known)).toMatchObject({ status: 'deployed' });
    const { metadata } = management.get(APP, ARGO_NS, applicationName(known.namespace, known.release))!;
    management.put(APP, {
      ...management.get(APP, ARGO_NS, metadata.name)!,
      spec: { ...(management.get(APP, ARGO_NS, metadata.name)!.spec as object), destination: { name: 'elsewhere', namespace: 'x' } },
    } as never);
    controller.reconcile();
    expect((await get(known))?.condition).toBe('InvalidSpecError: Unable to get cluster: there are no clusters with this name: elsewhere');
    expect(management.refused.slice(refused)).toEqual([]);
  });

  it('trusts a failed operation only when it synced the current source: a stale failure does not fail the next update', async () => {
    const controller = argocd();
    const request = requestFor(await runningCluster());
    await driver.upsertRelease(request);
    controller.failNextSync(
      applicationName(request.namespace, request.release),
      'one or more objects failed to apply, reason: Deployment.apps "web" is invalid',
    );
    expect(await settle(controller, request)).toMatchObject({
      status: 'failed',
      message: 'one or more objects failed to apply, reason: Deployment.apps "web" is invalid',
    });
    // The update: Argo CD still shows the failed operation of the previous source until it syncs the new one.
    expect(await driver.upsertRelease({ ...request, template_id: 'tpl_two', chart: { ...request.chart, target_revision: '1.3.0' } })).toMatchObject({
      status: 'pending-upgrade',
      revision: 2,
    });
    expect(await get(request)).toMatchObject({ status: 'pending-upgrade' });
    expect(await settle(controller, request)).toMatchObject({ status: 'deployed', revision: 2 });
  });

  it('updates the Application with a merge patch of its spec, keeping the status Argo CD wrote', async () => {
    const controller = argocd();
    const request = { ...requestFor(await runningCluster()), values: { replicas: 2, debug: true } };
    await driver.upsertRelease(request);
    await settle(controller, request);
    const name = applicationName(request.namespace, request.release);
    const path = `/apis/argoproj.io/v1alpha1/namespaces/${ARGO_NS}/applications/${name}`;
    const before = management.requests.length;
    await driver.upsertRelease({ ...request, template_id: 'tpl_two', values: { replicas: 3 } });
    const writes = management.requests.slice(before).filter((r) => r.startsWith('PUT') || r.startsWith('PATCH'));
    expect(writes.filter((r) => r.includes('/applications/'))).toEqual([`PATCH ${path}`]);
    const application = management.get(APP, ARGO_NS, name) as unknown as {
      metadata: { annotations: Record<string, string> };
      spec: { source: { helm: { valuesObject: unknown } } };
      status: { operationState: { phase: string } };
    };
    expect(application.spec.source.helm.valuesObject).toEqual({ replicas: 3 }); // `debug` removed, not merged in
    expect(application.metadata.annotations).toMatchObject({ 'platform-api/template': 'tpl_two', 'platform-api/revision': '2' });
    expect(application.status.operationState.phase).toBe('Succeeded');
    expect(management.refused.slice(refused)).toEqual([]);
  });

  it('sends an oci:// chart repository in Argo CD native OCI form, with an oci repository Secret from the registry credential of its host', async () => {
    const controller = new ArgoCdController(management, ARGO_NS).addRepository({
      url: 'oci://ghcr.io/acme/charts',
      charts: { web: ['1.2.3'] },
      credentials: { username: 'robot', password: 'hunter2' },
    });
    const clusterId = await runningCluster();
    const request = {
      ...requestFor(clusterId, { repo_url: 'oci://ghcr.io/acme/charts', chart: 'web' }),
      pull_secrets: [
        { server: 'registry.example.com', username: 'other', password: 'x' },
        { server: 'https://ghcr.io', username: 'robot', password: 'hunter2' },
      ],
    };
    await driver.upsertRelease(request);
    const name = applicationName(request.namespace, request.release);
    const source = (management.get(APP, ARGO_NS, name)!.spec as { source: Record<string, unknown> }).source;
    expect(source).toMatchObject({ repoURL: 'oci://ghcr.io/acme/charts/web', path: '.', targetRevision: '1.2.3' });
    expect(source.chart).toBeUndefined();
    const secret = management.get('v1/secrets', ARGO_NS, repositorySecretName(name)) as unknown as {
      metadata: { labels: Record<string, string> };
      data: Record<string, string>;
    };
    expect(secret.metadata.labels['argocd.argoproj.io/secret-type']).toBe('repository');
    const data = Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    expect(data).toMatchObject({ url: 'oci://ghcr.io/acme/charts/web', type: 'oci', username: 'robot', password: 'hunter2' });
    expect(await settle(controller, request)).toMatchObject({ status: 'deployed' });
    // Without the credential the registry refuses Argo CD, which reports it.
    controller.addRepository({ url: 'oci://ghcr.io/acme/private', charts: { web: ['1.2.3'] }, credentials: { username: 'robot', password: 'hunter2' } });
    const anonymous = requestFor(clusterId, { repo_url: 'oci://ghcr.io/acme/private', chart: 'web' });
    await driver.upsertRelease(anonymous);
    expect(management.get('v1/secrets', ARGO_NS, repositorySecretName(applicationName(anonymous.namespace, anonymous.release)))).toBeUndefined();
    expect((await settle(controller, anonymous))?.condition).toMatch(/^ComparisonError: .*401: unauthorized/);
    await driver.uninstallRelease(clusterId, request.namespace, request.release);
    expect(management.get('v1/secrets', ARGO_NS, repositorySecretName(name))).toBeUndefined();
  });

  it("scopes a repository Secret to the cluster's AppProject: another workspace's Application of the same chart is not served with it", async () => {
    const url = 'https://charts.acme.example/shared';
    const controller = new ArgoCdController(management, ARGO_NS).addRepository({
      url,
      charts: { web: ['1.2.3'] },
      credentials: { username: 'robot', password: 'hunter2' },
    });
    const owner = {
      ...requestFor(await runningCluster(), { repo_url: url }),
      pull_secrets: [{ server: 'charts.acme.example', username: 'robot', password: 'hunter2' }],
    };
    const other = requestFor(await runningCluster(), { repo_url: url });
    await driver.upsertRelease(owner);
    await driver.upsertRelease(other);
    const project = management.get('argoproj.io/v1alpha1/appprojects', ARGO_NS, k8sName(owner.cluster_id)) as unknown as { spec: { destinations: unknown } };
    expect(project.spec.destinations).toEqual([{ name: k8sName(owner.cluster_id), namespace: '*' }]);
    expect((management.get(APP, ARGO_NS, applicationName(owner.namespace, owner.release))!.spec as { project: string }).project).toBe(
      k8sName(owner.cluster_id),
    );
    const secret = management.get('v1/secrets', ARGO_NS, repositorySecretName(applicationName(owner.namespace, owner.release))) as unknown as {
      data: Record<string, string>;
    };
    expect(Buffer.from(secret.data.project!, 'base64').toString()).toBe(k8sName(owner.cluster_id));
    expect(await settle(controller, owner)).toMatchObject({ status: 'deployed' });
    expect((await settle(controller, other))?.condition).toMatch(/failed to get index: 401 Unauthorized$/);
    // The cluster's deletion takes its project with it.
    await driver.deleteCluster(other.cluster_id);
    expect(management.get('argoproj.io/v1alpha1/appprojects', ARGO_NS, k8sName(other.cluster_id))).toBeUndefined();
  });

  it('gives a Helm repository that needs credentials a repository Secret of type helm for its URL', async () => {
    const controller = new ArgoCdController(management, ARGO_NS).addRepository({
      url: 'https://charts.acme.example/private',
      charts: { web: ['1.2.3'] },
      credentials: { username: 'robot', password: 'hunter2' },
    });
    const request = {
      ...requestFor(await runningCluster(), { repo_url: 'https://charts.acme.example/private' }),
      pull_secrets: [{ server: 'charts.acme.example', username: 'robot', password: 'hunter2' }],
    };
    await driver.upsertRelease(request);
    const secret = management.get('v1/secrets', ARGO_NS, repositorySecretName(applicationName(request.namespace, request.release))) as unknown as {
      data: Record<string, string>;
    };
    expect(Buffer.from(secret.data.type!, 'base64').toString()).toBe('helm');
    expect(Buffer.from(secret.data.url!, 'base64').toString()).toBe('https://charts.acme.example/private');
    expect(await settle(controller, request)).toMatchObject({ status: 'deployed' });
  });
});

describe('install deadlines (INSTALL_SYNC_TIMEOUT_SECONDS)', () => {
  async function withApi(run: (api: ReturnType<typeof createPlatformClient>, clusterId: string) => Promise<void>) {
    const runtime = createRuntime({
      db: database.db,
      connectionString: database.url,
      clock,
      logger: serverLogger(),
      config: kubernetesConfig({ PROVIDER_RATE_LIMIT: '1000', INSTALL_SYNC_TIMEOUT_SECONDS: '120' }),
      driver,
      tickMs: 20,
    });
    await runtime.engine.run({ work: true });
    const server = await startTestServer(database.db, clock, {}, { workflows: runtime.engine, provider: runtime.provider, driver: runtime.driver });
    try {
      const user = await newUser(database.db, clock, 'pro');
      const api = createPlatformClient({ baseUrl: server.baseUrl, token: user.token, retry: false });
      const cluster = await api.POST('/v1/clusters', { body: { name: 'apps', region_id: 'fsn1' } });
      await until(async () => management.get(TCP, KAMAJI_NS, k8sName(cluster.id)) !== undefined);
      kamajiReady(cluster.id);
      await until(async () => {
        clock.advance(2);
        return (await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).kaas.status === 'RUNNING';
      });
      await run(api, cluster.id);
    } finally {
      await server.close();
      await runtime.engine.stop();
    }
  }

  async function install(api: ReturnType<typeof createPlatformClient>, clusterId: string, chart: string) {
    const product = await api.POST('/v1/products', {
      body: {
        name: `Shop ${chart}`,
        cluster_ids: [clusterId],
        sources: [{ chart: { repo_url: 'https://charts.example.com/stable', target_revision: '1.2.3', chart } }],
      },
    });
    return installOf(api, product.id);
  }

  /** An install of the product, once its Application exists (its name, and the install's record to read). */
  async function installOf(api: ReturnType<typeof createPlatformClient>, productId: string) {
    const created = await api.POST('/v1/installs', { body: { product_id: productId, region_id: 'fsn1' } });
    await until(async () => applicationOf(created.id) !== undefined);
    return {
      id: created.id,
      name: applicationOf(created.id)!.metadata.name,
      get: () => api.GET('/v1/installs/{id}', { params: { path: { id: created.id } } }),
    };
  }

  /** The install's Application (the one of `chart`'s source, when it has several). */
  const applicationOf = (installId: string, chart?: string) =>
    management
      .list(APP, ARGO_NS)
      .find((a) => a.metadata.labels?.['platform-api/install'] === installId && (chart === undefined || a.metadata.name.includes(`-${chart}-`)));

  /**
   * What Argo CD's controller writes once it has synced an Application's current source and its resources are
   * healthy: `status.sync.status` Synced with `comparedTo` the spec's source and destination, `status.health.status`
   * Healthy (argo-cd pkg/apis/application/v1alpha1/types.go, SyncStatus and HealthStatus).
   */
  const synced = (name: string) => {
    const spec = management.get(APP, ARGO_NS, name)!.spec as { source: unknown; destination: unknown };
    management.setStatus(APP, ARGO_NS, name, {
      sync: { status: 'Synced', comparedTo: { source: spec.source, destination: spec.destination } },
      health: { status: 'Healthy' },
    });
  };

  /** Two running installs of one product of the chart `web`, their Applications synced and healthy. */
  async function twoRunningInstalls(api: ReturnType<typeof createPlatformClient>, clusterId: string) {
    const first = await install(api, clusterId, 'web');
    const productId = (await first.get()).product_id;
    const second = await installOf(api, productId);
    synced(first.name);
    synced(second.name);
    await until(async () => {
      clock.advance(2);
      return (await first.get()).status === 'running' && (await second.get()).status === 'running';
    });
    return { first, second, productId };
  }

  it('is 600 s unless set, and a bad value stops start-up naming it', () => {
    expect(loadConfig({}).deadlines.installSyncSeconds).toBe(600);
    expect(loadConfig({ INSTALL_SYNC_TIMEOUT_SECONDS: '900' }).deadlines.installSyncSeconds).toBe(900);
    expect(() => loadConfig({ INSTALL_SYNC_TIMEOUT_SECONDS: '5' })).toThrow('INSTALL_SYNC_TIMEOUT_SECONDS must be an integer from 10 to 86400, got "5"');
    expect(() => loadConfig({ INSTALL_SYNC_TIMEOUT_SECONDS: 'ten minutes' })).toThrow(ConfigError);
    // A regeneration waits with this driver, not in the simulation, unless REGENERATION_WAITS says otherwise.
    expect(kubernetesConfig().deadlines.regenerationWaits).toBe(true);
    expect(loadConfig({}).deadlines.regenerationWaits).toBe(false);
    expect(loadConfig({ REGENERATION_WAITS: 'true' }).deadlines.regenerationWaits).toBe(true);
    expect(() => loadConfig({ REGENERATION_WAITS: 'yes' })).toThrow('REGENERATION_WAITS must be true or false, got "yes"');
  });

  it("fails an install with Argo CD's ComparisonError once it has lasted its grace period, not before", async () => {
    const controller = new ArgoCdController(management, ARGO_NS).addRepository({ url: 'https://charts.example.com/stable', charts: { web: ['1.2.3'] } });
    await withApi(async (api, clusterId) => {
      const unknown = await install(api, clusterId, 'wordpres');
      controller.reconcile(); // the first repository error is passed over (Argo CD's own grace)
      controller.reconcile();
      const condition = management.get(APP, ARGO_NS, unknown.name)!.status as { conditions: { type: string }[] };
      expect(condition.conditions[0]!.type).toBe('ComparisonError');
      // Seen, but within the grace period: still installing.
      await until(async () => (await unknown.get()).status === 'installing');
      clock.advance(10);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await unknown.get()).status).toBe('installing');
      await until(async () => {
        clock.advance(5);
        return (await unknown.get()).status === 'failed';
      });
      // Argo CD's own words: the release, the condition's type and message.
      expect((await unknown.get()).status_message).toMatch(
        /^Release wordpres-[a-z0-9]{6}: ComparisonError: Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = chart 'wordpres' not found in index$/,
      );
    });
  });

  it("fails an install that Argo CD never makes healthy at the deadline, with Argo CD's health message", async () => {
    await withApi(async (api, clusterId) => {
      const stuck = await install(api, clusterId, 'web');
      const spec = management.get(APP, ARGO_NS, stuck.name)!.spec as { source: unknown; destination: unknown };
      // Synced, but the Deployment never becomes available (gitops-engine's health message for a Deployment).
      const message = 'Waiting for rollout to finish: 0 of 2 updated replicas are available...';
      management.setStatus(APP, ARGO_NS, stuck.name, {
        sync: { status: 'Synced', comparedTo: { source: spec.source, destination: spec.destination } },
        health: { status: 'Progressing', message },
      });
      const started = clock.now();
      await until(async () => {
        clock.advance(10);
        return (await stuck.get()).status !== 'installing';
      });
      const failed = await stuck.get();
      expect(failed.status).toBe('failed');
      expect(failed.status_message).toMatch(
        /^Release web-[a-z0-9]{6} was not deployed within \d+ s: Waiting for rollout to finish: 0 of 2 updated replicas are available\.\.\.$/,
      );
      // The message says how long it waited: at least the deadline, and no more than the test's clock moved (it
      // moves 10 s a look, so how far past 120 s the worker acted depends on the machine's speed).
      const waited = Number(/within (\d+) s/.exec(failed.status_message!)![1]);
      expect(waited).toBeGreaterThanOrEqual(120);
      expect(waited).toBeLessThanOrEqual(clock.now() - started);
    });
  });

  it("makes a product's regeneration wait for each install's Applications, failing only the install Argo CD reports an error for, with its words", async () => {
    await withApi(async (api, clusterId) => {
      const { first, second, productId } = await twoRunningInstalls(api, clusterId);
      const product = await api.GET('/v1/products/{id}', { params: { path: { id: productId } } });
      await api.PATCH('/v1/products/{id}', {
        params: { path: { id: productId } },
        body: atChartVersion(product, '1.3.0'),
      });
      const moved = (name: string) => (management.get(APP, ARGO_NS, name)!.spec as { source: { targetRevision: string } }).source.targetRevision === '1.3.0';
      await until(async () => moved(first.name) && moved(second.name));
      // Sent, not yet synced: the regeneration waits.
      clock.advance(4);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await api.GET('/v1/products/{id}', { params: { path: { id: productId } } })).regeneration_status).toBe('running');
      // Argo CD takes the first; the second's new chart version is not in the repository.
      synced(first.name);
      const message =
        "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = chart 'web' version '1.3.0' not found";
      management.setStatus(APP, ARGO_NS, second.name, {
        sync: { status: 'Unknown' },
        health: { status: 'Healthy' },
        conditions: [{ type: 'ComparisonError', message }],
      });
      await until(async () => {
        clock.advance(5);
        return (await api.GET('/v1/products/{id}', { params: { path: { id: productId } } })).regeneration_status !== 'running';
      });
      expect((await api.GET('/v1/products/{id}', { params: { path: { id: productId } } })).regeneration_status).toBe('failed');
      expect(await first.get()).toMatchObject({ status: 'running' });
      const failed = await second.get();
      expect(failed.status).toBe('failed');
      expect(failed.status_message).toBe(`Release ${/web-[a-z0-9]{6}$/.exec(second.name)![0]}: ComparisonError: ${message}`);
      const revisions = await api.GET('/v1/installs/{id}/revisions', { params: { path: { id: first.id } } });
      expect(revisions.data.map((r) => r.status)).toEqual(['deployed', 'deployed']);
    });
  });

  it("makes a regeneration that replaces a source wait for the old source's Application to go, failing the install it is not removed from by the deadline", async () => {
    await withApi(async (api, clusterId) => {
      const { first, second, productId } = await twoRunningInstalls(api, clusterId);
      // The only source replaced by one of another chart (no id: a new source).
      const product = await api.GET('/v1/products/{id}', { params: { path: { id: productId } } });
      await api.PATCH('/v1/products/{id}', {
        params: { path: { id: productId } },
        body: {
          name: product.name,
          cluster_ids: product.cluster_ids,
          sources: [{ chart: { repo_url: 'https://charts.example.com/stable', target_revision: '1.0.0', chart: 'shop' } }],
        },
      });
      // The new Applications are sent and the old ones deleted; Argo CD holds those until it removed what they deployed.
      await until(async () => applicationOf(first.id, 'shop') !== undefined && applicationOf(second.id, 'shop') !== undefined);
      await until(async () => management.get(APP, ARGO_NS, first.name)?.metadata.deletionTimestamp !== undefined);
      await until(async () => management.get(APP, ARGO_NS, second.name)?.metadata.deletionTimestamp !== undefined);
      synced(applicationOf(first.id, 'shop')!.metadata.name);
      synced(applicationOf(second.id, 'shop')!.metadata.name);
      // The new ones are deployed, the old ones not gone: the regeneration waits.
      clock.advance(4);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await api.GET('/v1/products/{id}', { params: { path: { id: productId } } })).regeneration_status).toBe('running');
      // Argo CD removes the first install's; the second's resources cannot be deleted, and its finalizer stays.
      management.finalize(APP, ARGO_NS, first.name, ARGOCD_FINALIZER);
      const message = 'error deleting resources: the server could not find the requested resource';
      management.setStatus(APP, ARGO_NS, second.name, {
        ...management.get(APP, ARGO_NS, second.name)!.status,
        conditions: [{ type: 'DeletionError', message }],
      });
      await until(async () => {
        clock.advance(10);
        return (await api.GET('/v1/products/{id}', { params: { path: { id: productId } } })).regeneration_status !== 'running';
      });
      expect((await api.GET('/v1/products/{id}', { params: { path: { id: productId } } })).regeneration_status).toBe('failed');
      expect(await first.get()).toMatchObject({ status: 'running' });
      const revisions = await api.GET('/v1/installs/{id}/revisions', { params: { path: { id: first.id } } });
      expect(revisions.data.map((r) => r.status)).toEqual(['deployed', 'deployed']);
      const failed = await second.get();
      expect(failed.status).toBe('failed');
      expect(failed.status_message).toMatch(
        /^Release web-[a-z0-9]{6} was not removed within \d+ s: DeletionError: error deleting resources: the server could not find the requested resource$/,
      );
      expect(Number(/within (\d+) s/.exec(failed.status_message!)![1])).toBeGreaterThanOrEqual(120);
    });
  });

  it("fails an uninstall whose Application Argo CD does not remove by the deadline, with Argo CD's DeletionError", async () => {
    await withApi(async (api, clusterId) => {
      const stuck = await install(api, clusterId, 'web');
      const spec = () => management.get(APP, ARGO_NS, stuck.name)!.spec as { source: unknown; destination: unknown };
      management.setStatus(APP, ARGO_NS, stuck.name, {
        sync: { status: 'Synced', comparedTo: { source: spec().source, destination: spec().destination } },
        health: { status: 'Healthy' },
      });
      await until(async () => {
        clock.advance(2);
        return (await stuck.get()).status === 'running';
      });
      await api.DELETE('/v1/installs/{id}', { params: { path: { id: stuck.id } } });
      await until(async () => management.get(APP, ARGO_NS, stuck.name)?.metadata.deletionTimestamp !== undefined);
      // controller/appcontroller.go finalizeApplicationDeletion: the resources cannot be deleted; the finalizer stays.
      const message = 'error deleting resources: the server could not find the requested resource';
      management.setStatus(APP, ARGO_NS, stuck.name, { ...management.get(APP, ARGO_NS, stuck.name)!.status, conditions: [{ type: 'DeletionError', message }] });
      const started = clock.now();
      await until(async () => {
        clock.advance(10);
        return (await stuck.get()).status !== 'uninstalling';
      });
      const failed = await stuck.get();
      expect(failed.status).toBe('failed');
      expect(failed.status_message).toMatch(
        /^Uninstall failed: Release web-[a-z0-9]{6} was not removed within \d+ s: DeletionError: error deleting resources: the server could not find the requested resource$/,
      );
      // At least the deadline (the wait began before the condition was set), no more than the test's clock moved.
      const waited = Number(/within (\d+) s/.exec(failed.status_message!)![1]);
      expect(waited).toBeGreaterThanOrEqual(120);
      expect(clock.now() - started).toBeGreaterThanOrEqual(110);
    });
  });
});

describe('Kamaji: what it admits and what it reports', () => {
  /** A create straight to the management API server: undefined, or the refusal's code and Status. */
  async function createTenantControlPlane(name: string, version: string): Promise<{ code: number; status: { reason: string; message: string } } | undefined> {
    const kc = new KubeConfig();
    kc.loadFromString(management.kubeconfig());
    const body = {
      apiVersion: 'kamaji.clastix.io/v1alpha1',
      kind: 'TenantControlPlane',
      metadata: { name },
      spec: { controlPlane: { service: { serviceType: 'LoadBalancer' } }, kubernetes: { version, kubelet: {} } },
    };
    try {
      await kc
        .makeApiClient(CustomObjectsApi)
        .createNamespacedCustomObject({ group: 'kamaji.clastix.io', version: 'v1alpha1', plural: 'tenantcontrolplanes', namespace: KAMAJI_NS, body });
      return undefined;
    } catch (error) {
      if (!(error instanceof ApiException)) throw error;
      return { code: error.code, status: typeof error.body === 'string' ? JSON.parse(error.body) : error.body };
    }
  }

  it("refuses, as Kamaji's webhook does, a version without a patch or above the supported minor", async () => {
    const denied = (name: string, reason: string) => ({
      code: 403,
      status: {
        reason: 'Forbidden',
        message: `tenantcontrolplanes.kamaji.clastix.io "${name}" is forbidden: admission webhook "vtenantcontrolplane.kb.io" denied the request: ${reason}`,
      },
    });
    expect(await createTenantControlPlane('no-patch', 'v1.31')).toMatchObject(
      denied('no-patch', 'unable to parse the desired Kubernetes version: No Major.Minor.Patch elements found'),
    );
    expect(await createTenantControlPlane('too-new', 'v1.37.0')).toMatchObject(
      denied('too-new', 'unable to create a TenantControlPlane with a Kubernetes version greater than the supported one, actually v1.36'),
    );
    // The patch is not compared: any patch of the supported minor is admitted.
    expect(await createTenantControlPlane('newest', 'v1.36.7')).toBeUndefined();
  });

  it("enables the Konnectivity addon and sets the network profile to the CNI's addresses", async () => {
    const clusterId = newId('cl');
    await driver.createCluster({ cluster_id: clusterId, kubernetes_release: 'v1.31.13' });
    expect(management.get(TCP, KAMAJI_NS, k8sName(clusterId))?.spec).toMatchObject({
      addons: { konnectivity: { server: { port: 8132 } } },
      networkProfile: { podCidrs: ['10.244.0.0/16'], serviceCidrs: ['10.96.0.0/12'], dnsServiceIPs: ['10.96.0.10'] },
    });
    await driver.deleteCluster(clusterId);
  });

  it('creates each Kubernetes version of the platform at its release, which Kamaji admits', async () => {
    const before = management.refused.length;
    const versions = await database.db.selectFrom('kaas_versions').select('release').execute();
    expect(versions.length).toBeGreaterThan(0);
    for (const { release } of versions) {
      const clusterId = newId('cl');
      await driver.createCluster({ cluster_id: clusterId, kubernetes_release: release });
      expect(management.get(TCP, KAMAJI_NS, k8sName(clusterId))?.spec).toMatchObject({ kubernetes: { version: release } });
      await driver.deleteCluster(clusterId);
    }
    expect(management.refused.slice(before)).toEqual([]);
  });

  /** Runs the workflows with the driver (and `env`) while `use` plays Kamaji; the cluster row is made as the API would. */
  async function withClusterWorkflow(
    env: Record<string, string>,
    use: (clusterId: string, status: () => Promise<{ status: string; status_message: string | null }>) => Promise<void>,
  ) {
    const runtime = createRuntime({
      db: database.db,
      connectionString: database.url,
      clock,
      logger: serverLogger(),
      config: kubernetesConfig({ PROVIDER_RATE_LIMIT: '1000', ...env }),
      driver,
      tickMs: 20,
    });
    await runtime.engine.run({ work: true });
    try {
      const user = await newUser(database.db, clock, 'pro');
      const workspace = await database.db.selectFrom('workspaces').select('id').where('owner_id', '=', user.userId).executeTakeFirstOrThrow();
      const clusterId = newId('cl');
      await database.db.transaction().execute(async (trx) => {
        await runtime.engine.start(trx, 'createCluster', clusterId);
        await trx
          .insertInto('clusters')
          .values({
            id: clusterId,
            workspace_id: workspace.id,
            name: 'kamaji',
            region_id: 'fsn1',
            kaas_version: 'v1.32',
            kaas_release: 'v1.32.9',
            status: 'PROVISIONING',
            status_message: null,
            created_at: clock.now(),
          })
          .execute();
      });
      await use(clusterId, () => database.db.selectFrom('clusters').select(['status', 'status_message']).where('id', '=', clusterId).executeTakeFirstOrThrow());
    } finally {
      await runtime.engine.stop();
    }
  }

  /** The workflow's polls done since `from` (its GETs of the TenantControlPlane). */
  const pollsOf = (clusterId: string) =>
    management.requests.filter((r) => r === `GET /apis/kamaji.clastix.io/v1alpha1/namespaces/${KAMAJI_NS}/tenantcontrolplanes/${k8sName(clusterId)}`).length;

  it('keeps a cluster PROVISIONING through Provisioning and a NotReady rollout, and RUNNING once Kamaji says Ready', async () => {
    const kamaji = new KamajiController(management, tenant);
    const refusedBefore = management.refused.length;
    await withClusterWorkflow({}, async (clusterId, status) => {
      const name = k8sName(clusterId);
      await until(async () => management.get(TCP, KAMAJI_NS, name) !== undefined);
      kamaji.provisioning(KAMAJI_NS, name);
      expect(kamaji.rollout(KAMAJI_NS, name, 0)).toBe('NotReady');
      // Several polls of the NotReady control plane (2 s of the workflow's clock apart): not an error.
      const from = pollsOf(clusterId);
      await until(async () => {
        clock.advance(2);
        return pollsOf(clusterId) >= from + 3;
      });
      expect(await status()).toEqual({ status: 'PROVISIONING', status_message: null });
      expect(kamaji.rollout(KAMAJI_NS, name, 1)).toBe('Provisioning'); // one of two replicas: still rolling out
      expect(kamaji.rollout(KAMAJI_NS, name, 2)).toBe('Ready');
      await until(async () => {
        clock.advance(2);
        return (await status()).status === 'RUNNING';
      });
    });
    expect(management.refused.slice(refusedBefore)).toEqual([]);
  });

  it('follows a Kamaji that progresses by itself: Provisioning, NotReady for a while, then Ready, as the clock moves', async () => {
    const kamaji = new KamajiController(management, tenant);
    const stop = kamaji.run(clock, KAMAJI_NS, { provisioningSeconds: 4, notReadySeconds: 30 });
    const refusedBefore = management.refused.length;
    try {
      await withClusterWorkflow({}, async (clusterId, status) => {
        const name = k8sName(clusterId);
        const versionStatus = () =>
          (management.get(TCP, KAMAJI_NS, name)?.status as { kubernetesResources?: { version?: { status?: string } } } | undefined)?.kubernetesResources
            ?.version?.status;
        await until(async () => versionStatus() === 'Provisioning');
        clock.advance(4);
        await until(async () => versionStatus() === 'NotReady');
        // NotReady for a while: the cluster stays PROVISIONING while the workflow polls it.
        for (let i = 0; i < 5; i++) {
          clock.advance(5);
          await new Promise((resolve) => setTimeout(resolve, 60));
          expect(versionStatus()).toBe('NotReady');
        }
        expect(await status()).toEqual({ status: 'PROVISIONING', status_message: null });
        clock.advance(6);
        await until(async () => versionStatus() === 'Ready');
        await until(async () => {
          clock.advance(2);
          return (await status()).status === 'RUNNING';
        });
      });
    } finally {
      stop();
    }
    expect(management.refused.slice(refusedBefore)).toEqual([]);
  });

  it('makes a cluster whose control plane is not Ready within CLUSTER_READY_TIMEOUT_SECONDS ERROR, saying what to do', async () => {
    const kamaji = new KamajiController(management, tenant);
    await withClusterWorkflow({ CLUSTER_READY_TIMEOUT_SECONDS: '120' }, async (clusterId, status) => {
      await until(async () => management.get(TCP, KAMAJI_NS, k8sName(clusterId)) !== undefined);
      expect(kamaji.rollout(KAMAJI_NS, k8sName(clusterId), 0)).toBe('NotReady');
      // Not before the deadline: 100 s of polls.
      const start = clock.now();
      await until(async () => {
        clock.advance(2);
        return clock.now() - start >= 100;
      });
      expect((await status()).status).toBe('PROVISIONING');
      await until(async () => {
        clock.advance(2);
        return (await status()).status === 'ERROR';
      });
      expect(clock.now() - start).toBeGreaterThanOrEqual(120);
      expect((await status()).status_message).toBe(
        "The control plane did not become ready within 2 minutes. Delete the cluster and create it again; if that fails too, the platform's operators can see why in its management cluster.",
      );
    });
  });

  it("shows a refused control plane's reason, in Kamaji's words, as the cluster's message", async () => {
    management.kamajiSupportedVersion = 'v1.31.0'; // an older Kamaji: the cluster's v1.32 is beyond it
    try {
      await withClusterWorkflow({}, async (clusterId, status) => {
        await until(async () => {
          clock.advance(2);
          return (await status()).status === 'ERROR';
        });
        expect((await status()).status_message).toBe(
          `The management cluster refused the control plane: tenantcontrolplanes.kamaji.clastix.io "${k8sName(clusterId)}" is forbidden: ` +
            'admission webhook "vtenantcontrolplane.kb.io" denied the request: unable to create a TenantControlPlane with a Kubernetes version greater than the supported one, actually v1.31',
        );
      });
    } finally {
      management.kamajiSupportedVersion = KAMAJI_SUPPORTED_VERSION;
    }
  });

  it('reads the admin kubeconfig (client certificates, as Kamaji writes it) again after a CA rotation, for its calls and for Argo CD', async () => {
    const kamaji = new KamajiController(management, tenant);
    const clusterId = newId('cl');
    const name = k8sName(clusterId);
    await driver.createCluster({ cluster_id: clusterId, kubernetes_release: 'v1.31.13' });
    expect(kamaji.rollout(KAMAJI_NS, name, 2)).toBe('Ready');
    const install = {
      cluster_id: clusterId,
      namespace: newId('ins'),
      release: 'web-1',
      chart: { repo_url: 'https://charts.example.com', target_revision: '1.0.0', chart: 'web' },
      values: {},
      template_id: 't',
    };
    const argoClusterCertificate = () => {
      const secret = management.get('v1/secrets', ARGO_NS, `cluster-${name}`) as { data: Record<string, string> } | undefined;
      const config = JSON.parse(Buffer.from(secret!.data.config!, 'base64').toString('utf8'));
      return Buffer.from(config.tlsClientConfig.certData, 'base64').toString('utf8');
    };
    expect((await driver.kubeconfig(clusterId, 900)).kubeconfig).toContain(tenant.url);
    await driver.upsertRelease(install);
    expect(argoClusterCertificate()).toBe(KAMAJI_PKI[0]!.cert);

    // Kamaji rotates the tenant's CA: the old admin certificate is refused, and admin.conf is rewritten.
    kamaji.rotateCertificateAuthority(KAMAJI_NS, name);
    const before = tenant.requests.length;
    expect((await driver.kubeconfig(clusterId, 900)).kubeconfig).toContain(tenant.url);
    expect(tenant.requests.length).toBeGreaterThan(before);
    await driver.upsertRelease(install);
    expect(argoClusterCertificate()).toBe(KAMAJI_PKI[1]!.cert);
    await driver.deleteCluster(clusterId);
  });

  it('runs a control plane that became Ready while no worker looked until past the deadline', async () => {
    const kamaji = new KamajiController(management, tenant);
    await withClusterWorkflow({ CLUSTER_READY_TIMEOUT_SECONDS: '120' }, async (clusterId, status) => {
      // The workflow has looked once and waits.
      await until(async () => {
        const workflow = await database.db.selectFrom('workflows').select(['step', 'run_after']).where('subject_id', '=', clusterId).executeTakeFirst();
        return workflow?.step === 'await' && workflow.run_after !== null;
      });
      expect(kamaji.rollout(KAMAJI_NS, k8sName(clusterId), 2)).toBe('Ready');
      clock.advance(600); // the next look is long past the deadline
      await until(async () => (await status()).status !== 'PROVISIONING');
      expect(await status()).toEqual({ status: 'RUNNING', status_message: null });
    });
  });

  it('refuses a CLUSTER_READY_TIMEOUT_SECONDS that is no whole number of seconds from 60 to 86400, naming it', () => {
    expect(loadConfig({}).deadlines.clusterReadySeconds).toBe(900);
    expect(kubernetesConfig({ CLUSTER_READY_TIMEOUT_SECONDS: '1800' }).deadlines.clusterReadySeconds).toBe(1800);
    for (const value of ['10', '15m', '100000'])
      expect(() => kubernetesConfig({ CLUSTER_READY_TIMEOUT_SECONDS: value })).toThrow(
        new ConfigError(`CLUSTER_READY_TIMEOUT_SECONDS must be an integer from 60 to 86400, got "${value}"`),
      );
  });
});
