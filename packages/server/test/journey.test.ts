// The whole journey with both real drivers, through the API: COMPUTE_PROVIDER=hetzner against the stateful fake
// of Hetzner Cloud (answers validated against the committed extract) and CLUSTER_DRIVER=kubernetes against two
// test Kubernetes API servers (the management cluster with Kamaji and Argo CD, and the tenant cluster) that
// validate every object against its published schema. The test plays Kamaji, Argo CD and the kubelet.
import { createPlatformClient } from '@platform/client';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { labelValue } from '../src/providers/hetzner/compute.ts';
import { CCM_CHART, ccmApplicationName } from '../src/providers/kubernetes/ccm.ts';
import { CNI_CHART, cniApplicationName } from '../src/providers/kubernetes/cni.ts';
import { k8sName, pullSecretName } from '../src/providers/kubernetes/driver.ts';
import { setKaasVersionAvailability } from '../src/resources/kaas-versions.ts';
import { atChartVersion } from './fixtures.ts';
import { ArgoCdController } from './support/argocd-controller.ts';
import { HcloudCloudControllerManager } from './support/hcloud-ccm.ts';
import { KamajiController } from './support/kamaji.ts';
import { KubeadmWorker, kubeadmJoinOf } from './support/kubeadm.ts';
import { ARGO_NS, KAMAJI_NS, useRealDriverWorld } from './support/real-drivers.ts';
import { call, eventually, newUser, useTestServer } from './support.ts';

const TCP = 'kamaji.clastix.io/v1alpha1/tenantcontrolplanes';
const APP = 'argoproj.io/v1alpha1/applications';
const PLATFORM = 'platform-token-journey-5e1a';
const BYOM_TOKEN = 'byom-token-journey-90d3';
// Registered first: the fake and the API servers are up when the runtime is configured, and outlive it.
const world = useRealDriverWorld({ tokens: [PLATFORM, BYOM_TOKEN], fake: { actionMs: 30, startingMs: 30 } });

const app = useTestServer({
  // The fake's Actions take 30 ms: read them every 20 ms, not every second.
  env: () => ({ ...world.env(), HCLOUD_POLL_INTERVAL_MS: '20' }),
  // Every host resolves to a public address: the SSRF checks pass for the registry and the chart repository.
  resolveHost: async () => ['93.184.216.34'],
  runtime: { tickMs: 20 },
});
const { clock } = app;

afterEach(() => {
  expect(world.fake.violations).toEqual([]);
  expect(world.management.refused).toEqual([]);
  expect(world.tenant.refused).toEqual([]);
});

/** Waits for `check`, moving the workflows' clock on meanwhile (their waits are in clock seconds). */
async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    clock.advance(2);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** What the kubelet reports of the worker's node. */
const nodeStatus = (name: string, ready: boolean) =>
  world.tenant.put('v1/nodes', { metadata: { name }, status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', reason: 'KubeletReady' }] } });

type Application = {
  metadata: { name: string; annotations: Record<string, string>; labels: Record<string, string> };
  spec: { source: { targetRevision: string; helm: { releaseName: string; valuesObject: Record<string, unknown> } }; destination: unknown };
};
const releaseOf = (application: Application) => application.spec.source.helm.releaseName;

/** Kamaji brings the cluster's control plane up: Provisioning, then a rollout whose replicas are ready. */
function controlPlaneReady(clusterId: string): void {
  const kamaji = new KamajiController(world.management, world.tenant);
  kamaji.provisioning(KAMAJI_NS, k8sName(clusterId));
  kamaji.rollout(KAMAJI_NS, k8sName(clusterId), 2);
}

describe('server types', () => {
  it('are the ones Hetzner Cloud offers, read from its API, not a list of ours', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const post = (path: string, body: unknown) => call(app.baseUrl, 'POST', path, { token: user.token, body });
    const hcloud = (filter: string) => ({
      name: `cfg-${filter}`,
      provider: 'hcloud',
      provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: filter },
    });
    // The fake offers cx22, cpx31, cax41 and ccx1xx (cx11 is deprecated): no cpx1*, though the simulator has cpx11.
    const none = await post('/v1/compute/configs', hcloud('cpx1*'));
    expect(none.status).toBe(422);
    expect(none.body).toMatchObject({ error: { code: 'validation_error', param: 'provider_config.machine_type_filter' } });
    expect(none.body.error.suggestion).toContain('cx22');
    expect((await post('/v1/compute/configs', hcloud('cx1*'))).status).toBe(422);
    const config = await post('/v1/compute/configs', hcloud('cx*'));
    expect(config.status).toBe(201);
    const cluster = await post('/v1/clusters', { name: 'types', region_id: 'fsn1' });
    // cx32 matches the filter and the simulator has it; Hetzner (here) does not offer it.
    const refused = await post('/v1/compute/machines', { cluster_id: cluster.body.id, compute_config_id: config.body.id, server_type: 'cx32' });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ error: { param: 'server_type', suggestion: 'Choose one of: cx22.' } });
    const machine = await post('/v1/compute/machines', { cluster_id: cluster.body.id, compute_config_id: config.body.id });
    expect(machine.status).toBe(202);
    expect(machine.body).toMatchObject({ server_type: 'cx22', cpu: 2, memory_bytes: 4 * 1024 ** 3 });
    // Read once and cached: one listing of the server types for all of the above.
    expect(world.fake.requests.filter((r) => r.path === '/server_types').length).toBeLessThanOrEqual(2); // two pages
  });
});

describe('the journey on Hetzner Cloud, Kamaji and Argo CD', () => {
  it('cluster, BYOM machine, product and install, logs, product update, suspend and resume', { timeout: 120_000 }, async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });

    // A cluster: a TenantControlPlane of a version Kamaji admits, PROVISIONING through Kamaji's Provisioning and
    // its NotReady rollout, RUNNING once Kamaji reports it Ready.
    const cluster = await api.POST('/v1/clusters', { body: { name: 'journey', region_id: 'fsn1' } });
    const getCluster = () => api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
    await until('the TenantControlPlane', () => world.management.get(TCP, KAMAJI_NS, k8sName(cluster.id)) !== undefined);
    const kamaji = new KamajiController(world.management, world.tenant);
    kamaji.provisioning(KAMAJI_NS, k8sName(cluster.id));
    expect((await getCluster()).kaas.status).toBe('PROVISIONING');
    expect(kamaji.rollout(KAMAJI_NS, k8sName(cluster.id), 0)).toBe('NotReady');
    const polls = () => world.management.requests.filter((r) => r.endsWith(`/tenantcontrolplanes/${k8sName(cluster.id)}`)).length;
    const pollsBefore = polls();
    await until('polls of the NotReady control plane', () => polls() >= pollsBefore + 3);
    expect((await getCluster()).kaas.status).toBe('PROVISIONING');
    expect(kamaji.rollout(KAMAJI_NS, k8sName(cluster.id), 2)).toBe('Ready');
    await until('the cluster to run', async () => (await getCluster()).kaas.status === 'RUNNING');
    // Its pod network: an Argo CD Application of the CNI chart, made with the control plane; Argo CD deploys it.
    const cni = () => world.management.get(APP, ARGO_NS, cniApplicationName(k8sName(cluster.id)));
    expect(cni()).toBeDefined();
    const kubeadm = new KubeadmWorker(world.tenant, () => (cni()?.status as { health?: { status?: string } } | undefined)?.health?.status === 'Healthy');

    // A BYOM machine: the server is created in the credential's project with the kubeadm join script, and the
    // machine is ready only once its node is Ready in the tenant cluster.
    const credential = await api.POST('/v1/compute/cloud_credentials', { body: { name: 'own', provider: 'hcloud', secret: BYOM_TOKEN } });
    const config = await api.POST('/v1/compute/configs', {
      body: {
        name: 'workers',
        provider: 'hcloud',
        cloud_credential_id: credential.id,
        provider_config: { provider: 'hcloud', region: 'nbg1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
      },
    });
    const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    const machineStatus = async () => (await api.GET('/v1/compute/machines', { params: { query: { cluster_id: cluster.id } } }))[0]?.status;
    const label = labelValue(machine.provider_id);
    const liveServers = () => world.fake.servers(BYOM_TOKEN).filter((s) => s.labels.machine === label);
    await until('the server to run', () => liveServers()[0]?.status === 'running');
    await until('the node to be asked for', () => world.tenant.requests.some((r) => r.startsWith(`GET /api/v1/nodes/${machine.node_name}`)));
    expect(await machineStatus()).toBe('provisioning');
    const creation = world.fake.requests.find((r) => r.method === 'POST' && r.path === '/servers' && r.status === 201)!;
    expect(creation.authorization).toBe(`Bearer ${BYOM_TOKEN}`);
    const userData = (creation.body as { user_data: string }).user_data;
    const join = kubeadmJoinOf(userData);
    expect(join.endpoint).toBe(new URL(world.tenant.url).host);
    expect(join.flags['node-name']).toBe(machine.node_name);
    expect(world.tenant.get('v1/secrets', 'kube-system', `bootstrap-token-${join.flags.token!.split('.')[0]}`)).toBeDefined();
    expect(world.fake.servers(PLATFORM)).toEqual([]);
    // The server boots from its user_data: kubeadm joins, and the node stays NotReady until the CNI is Healthy.
    expect(kubeadm.boot(userData)).toBe(machine.node_name);
    await until('the node to be asked for again', () => world.tenant.requests.filter((r) => r.startsWith(`GET /api/v1/nodes/${machine.node_name}`)).length > 1);
    expect(await machineStatus()).toBe('provisioning');
    world.management.setStatus(APP, ARGO_NS, cni()!.metadata.name, { sync: { status: 'Synced' }, health: { status: 'Healthy' } });
    kubeadm.heartbeat();
    // Ready, but tainted until the cluster's cloud controller manager has set the node up: its Application and its
    // token Secret (the machine's project's: the BYOM credential's) came with the machine.
    await until(
      'the node to be asked for once Ready',
      () => world.tenant.requests.filter((r) => r.startsWith(`GET /api/v1/nodes/${machine.node_name}`)).length > 2,
    );
    expect(await machineStatus()).toBe('provisioning');
    const ccmApp = world.management.get(APP, ARGO_NS, ccmApplicationName(k8sName(cluster.id)))!;
    expect((ccmApp.spec as { source: Record<string, unknown> }).source).toMatchObject({ ...CCM_CHART });
    const hcloudSecret = world.tenant.get('v1/secrets', 'kube-system', 'hcloud') as unknown as { data: Record<string, string> };
    expect(Buffer.from(hcloudSecret.data.token!, 'base64').toString()).toBe(BYOM_TOKEN);
    world.management.setStatus(APP, ARGO_NS, ccmApp.metadata.name, { sync: { status: 'Synced' }, health: { status: 'Healthy' } });
    expect(
      new HcloudCloudControllerManager({ management: world.management, tenant: world.tenant, fake: world.fake, argocdNamespace: ARGO_NS }).reconcile(),
    ).toBe(true);
    await until('the machine to be ready', async () => (await machineStatus()) === 'ready');
    const serverId = String(liveServers()[0]!.id);
    expect(world.tenant.get('v1/nodes', undefined, machine.node_name)?.spec).toMatchObject({ providerID: `hcloud://${serverId}` });
    // The drift check reads the server in the credential's project (the platform's token would find nothing).
    const drift = () => api.GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: machine.provider_id } } });
    expect(await drift()).toMatchObject({ drifted: false, differences: [] });
    const driftReads = world.fake.requests.filter((r) => r.method === 'GET' && r.path === `/servers/${serverId}`);
    expect(driftReads.at(-1)?.authorization).toBe(`Bearer ${BYOM_TOKEN}`);

    // The workspace's active registry credentials become the install's pull secret; an inactive one does not.
    await api.POST('/v1/registry/credentials', { body: { name: 'ghcr', registry_url: 'ghcr.io', username: 'robot', password: 'pull-secret-1' } });
    await api.POST('/v1/registry/credentials', {
      body: { name: 'old', registry_url: 'registry.example.com', username: 'old', password: 'retired-2', is_active: false },
    });

    // A product and an install: an Argo CD Application, running once Argo CD reports it Synced and Healthy.
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
      world.management.list(APP, ARGO_NS).find((a) => a.metadata.labels?.['platform-api/install'] === install.id) as Application | undefined;
    await until('the Application', () => application() !== undefined);
    expect(application()!.spec.source).toMatchObject({ targetRevision: '19.6.1', helm: { valuesObject: { replicaCount: 2 } } });
    const namespace = k8sName(install.id);
    const pullSecret = pullSecretName(releaseOf(application()!));
    expect(application()!.spec.source.helm.valuesObject.imagePullSecrets).toEqual([{ name: pullSecret }]);
    const secret = world.tenant.get('v1/secrets', namespace, pullSecret) as unknown as { type: string; data: Record<string, string> } | undefined;
    expect(secret?.type).toBe('kubernetes.io/dockerconfigjson');
    expect(JSON.parse(Buffer.from(secret!.data['.dockerconfigjson']!, 'base64').toString())).toEqual({
      auths: { 'ghcr.io': { username: 'robot', password: 'pull-secret-1', auth: Buffer.from('robot:pull-secret-1').toString('base64') } },
    });
    const getInstall = () => api.GET('/v1/installs/{id}', { params: { path: { id: install.id } } });
    expect((await getInstall()).status).toBe('installing');
    const argoDone = () =>
      world.management.setStatus(APP, ARGO_NS, application()!.metadata.name, {
        sync: { status: 'Synced', comparedTo: { source: application()!.spec.source, destination: application()!.spec.destination } },
        health: { status: 'Healthy' },
      });
    argoDone();
    await until('the install to run', async () => (await getInstall()).status === 'running');

    // Its logs, from the pod-log API of the tenant cluster.
    world.tenant.put('v1/pods', {
      metadata: { name: 'wordpress-6c9f-x1y2z', namespace },
      spec: { containers: [{ name: 'wordpress', image: 'bitnami/wordpress:6' }] },
      status: { phase: 'Running' },
    });
    world.tenant.appendLog(namespace, 'wordpress-6c9f-x1y2z', 'wordpress', [
      { time: '2026-11-23T12:00:00.000000001Z', line: 'starting' },
      { time: '2026-11-23T12:00:00.000000002Z', line: 'ready' },
    ]);
    const logs = await call(app.baseUrl, 'GET', `/v1/installs/${install.id}/logs?follow=false`, {
      token: user.token,
      headers: { accept: 'text/event-stream' },
    });
    expect(logs.status).toBe(200);
    const lines = String(logs.body)
      .split('\n\n')
      .filter((e) => e.includes('event: log'))
      .map((e) => (JSON.parse(/^data: (.+)$/m.exec(e)![1]!) as { line: string }).line);
    expect(lines).toEqual(['starting', 'ready']);
    expect(world.tenant.requests.some((r) => r.startsWith(`GET /api/v1/namespaces/${namespace}/pods/wordpress-6c9f-x1y2z/log`))).toBe(true);

    // A product update: the Application is upgraded to the new template.
    await api.PATCH('/v1/products/{id}', {
      params: { path: { id: product.id } },
      body: atChartVersion(product, '19.7.0'),
    });
    await until('the Application to be upgraded', () => application()?.spec.source.targetRevision === '19.7.0');
    expect(application()!.metadata.annotations['platform-api/revision']).toBe('2');
    expect(application()!.spec.source.helm.valuesObject.imagePullSecrets).toEqual([{ name: pullSecret }]);
    argoDone();
    const getProduct = () => api.GET('/v1/products/{id}', { params: { path: { id: product.id } } });
    await until('the regeneration', async () => (await getProduct()).regeneration_status === 'succeeded');

    // Suspend: shut down, snapshot, delete the server (the kubelet stops with it).
    const suspension = await api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } });
    const getSuspension = () => api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } });
    await until('suspended', async () => (await getSuspension()).status === 'suspended');
    const { snapshot_id } = await getSuspension();
    expect(world.fake.images(BYOM_TOKEN).find((i) => String(i.id) === snapshot_id)).toMatchObject({ type: 'snapshot', created_from: { id: Number(serverId) } });
    expect(liveServers()).toEqual([]);
    expect(await machineStatus()).toBe('suspended');
    nodeStatus(machine.node_name, false);

    // Resume: a server from the snapshot, in the machine's location, in the credential's project.
    await api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: suspension.id } } });
    await until('the resumed server to run', () => liveServers()[0]?.status === 'running');
    expect(liveServers()[0]).toMatchObject({ image: { id: Number(snapshot_id), type: 'snapshot' }, location: { name: 'nbg1' } });
    // Running is not enough: the machine is ready again once its node is Ready again.
    const nodeReads = world.tenant.requests.filter((r) => r.startsWith(`GET /api/v1/nodes/${machine.node_name}`)).length;
    await until(
      'the node to be asked for again',
      () => world.tenant.requests.filter((r) => r.startsWith(`GET /api/v1/nodes/${machine.node_name}`)).length > nodeReads + 1,
    );
    expect((await getSuspension()).status).toBe('resuming');
    expect(await machineStatus()).toBe('suspended');
    nodeStatus(machine.node_name, true);
    await until('resumed', async () => (await getSuspension()).status === 'resumed');
    expect(await machineStatus()).toBe('ready');
    expect(world.fake.images(BYOM_TOKEN).some((i) => String(i.id) === snapshot_id)).toBe(false);
    // A server restored from a snapshot runs the snapshot's image, made from the desired one: no drift.
    expect(await drift()).toMatchObject({ drifted: false, differences: [] });
    const machineServers = world.fake.requests.filter((r) => r.path.startsWith('/servers/') || (r.path === '/servers' && r.method === 'POST'));
    expect(new Set(machineServers.map((r) => r.authorization))).toEqual(new Set([`Bearer ${BYOM_TOKEN}`]));

    // Uninstall: the Application is deleted with Argo CD's resources finalizer; the install reads `uninstalling`
    // until Argo CD has removed what it deployed and dropped the finalizer, then it is gone.
    const appName = application()!.metadata.name;
    const deleted = await call(app.baseUrl, 'DELETE', `/v1/installs/${install.id}`, { token: user.token });
    expect(deleted.status).toBe(202);
    expect(deleted.body.status).toBe('uninstalling');
    await until('the Application to be deleted', () => world.management.get(APP, ARGO_NS, appName)?.metadata.deletionTimestamp !== undefined);
    expect((await call(app.baseUrl, 'GET', `/v1/installs/${install.id}`, { token: user.token })).body.status).toBe('uninstalling');
    world.management.finalize(APP, ARGO_NS, appName, 'resources-finalizer.argocd.argoproj.io');
    await until('the install to be gone', async () => (await call(app.baseUrl, 'GET', `/v1/installs/${install.id}`, { token: user.token })).status === 404);
    expect(world.management.get(APP, ARGO_NS, appName)).toBeUndefined();
    expect(world.management.refused).toEqual([]);
    expect(world.tenant.refused).toEqual([]);
  });
});

describe('an install Argo CD cannot render', () => {
  it("fails on an unknown chart within its deadline, with Argo CD's ComparisonError", { timeout: 60_000 }, async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
    const cluster = await api.POST('/v1/clusters', { body: { name: 'typo', region_id: 'fsn1' } });
    await until('the TenantControlPlane', () => world.management.get(TCP, KAMAJI_NS, k8sName(cluster.id)) !== undefined);
    controlPlaneReady(cluster.id);
    await until(
      'the cluster to run',
      async () => (await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).kaas.status === 'RUNNING',
    );
    // The repository has wordpress; the product names "wordpres".
    const argocd = new ArgoCdController(world.management, ARGO_NS)
      .addRepository({ url: 'https://charts.bitnami.com/bitnami', charts: { wordpress: ['19.6.1'] } })
      .start(20);
    try {
      const product = await api.POST('/v1/products', {
        body: {
          name: 'Typo',
          cluster_ids: [cluster.id],
          sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpres' } }],
        },
      });
      const install = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
      const getInstall = () => api.GET('/v1/installs/{id}', { params: { path: { id: install.id } } });
      const started = clock.now();
      // Argo CD's controller runs on the wall clock and `until` moves the workflows' clock 80 s a second: the error
      // is awaited first, so that a loaded machine cannot let the deadline (900 s of that clock) come before it.
      await eventually(
        () => world.management.list(APP, ARGO_NS),
        (applications) =>
          applications.some(
            (a) =>
              a.metadata.labels?.['platform-api/install'] === install.id &&
              ((a.status as { conditions?: { type: string }[] } | undefined)?.conditions ?? []).some((c) => c.type === 'ComparisonError'),
          ),
        'Argo CD to report the ComparisonError',
      );
      await until('the install to fail', async () => (await getInstall()).status === 'failed');
      expect((await getInstall()).status_message).toMatch(/^Release wordpres-[a-z0-9]{6}: ComparisonError: .*chart 'wordpres' not found in index$/);
      expect(clock.now() - started).toBeLessThan(loadConfig({}).deadlines.installSyncSeconds);
    } finally {
      argocd.stop();
    }
  });
});

describe('a Hetzner project out of quota', () => {
  it('fails the machine at once with a notification naming the project’s own limit, not the token', { timeout: 60_000 }, async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
    const cluster = await api.POST('/v1/clusters', { body: { name: 'quota', region_id: 'fsn1' } });
    await until('the TenantControlPlane', () => world.management.get(TCP, KAMAJI_NS, k8sName(cluster.id)) !== undefined);
    controlPlaneReady(cluster.id);
    await until(
      'the cluster to run',
      async () => (await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).kaas.status === 'RUNNING',
    );
    const credential = await api.POST('/v1/compute/cloud_credentials', { body: { name: 'full', provider: 'hcloud', secret: BYOM_TOKEN } });
    const config = await api.POST('/v1/compute/configs', {
      body: {
        name: 'full-workers',
        provider: 'hcloud',
        cloud_credential_id: credential.id,
        provider_config: { provider: 'hcloud', region: 'nbg1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
      },
    });
    // Hetzner answers 403 resource_limit_exceeded when the project has as many servers as its limit allows.
    world.fake.refuseNext('post /servers', 'resource_limit_exceeded', 'server limit exceeded');
    const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    const status = async () =>
      (await api.GET('/v1/compute/machines', { params: { query: { cluster_id: cluster.id } } })).find((m) => m.provider_id === machine.provider_id)?.status;
    await until('the machine to fail', async () => (await status()) === 'failed');
    const notices = (await api.GET('/v1/notifications')).data;
    const notice = notices.find((n) => n.type === 'machine.failed' && n.resource_id === machine.provider_id);
    expect(notice?.body).toContain(`The Hetzner Cloud project of cloud credential ${credential.id} has reached one of its own resource limits`);
    expect(notice?.body).not.toContain('replace the token');
    expect(notices.map((n) => n.type)).not.toContain('machine.provision_failed');
  });
});

describe('a Kubernetes version retired while its clusters run', () => {
  it('keeps its cluster working (a machine joins at its release, an install runs) and refuses new clusters on it', { timeout: 90_000 }, async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
    const cluster = await api.POST('/v1/clusters', { body: { name: 'aging', region_id: 'fsn1', kaas_version: 'v1.30' } });
    await until('the TenantControlPlane', () => world.management.get(TCP, KAMAJI_NS, k8sName(cluster.id)) !== undefined);
    expect(world.management.get(TCP, KAMAJI_NS, k8sName(cluster.id))!.spec).toMatchObject({ kubernetes: { version: 'v1.30.14' } });
    controlPlaneReady(cluster.id);
    const getCluster = () => api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
    await until('the cluster to run', async () => (await getCluster()).kaas.status === 'RUNNING');

    // The operator retires v1.30 (what `pnpm admin retire-kaas-version --version v1.30` does).
    await setKaasVersionAvailability(app.db, 'v1.30', false);
    try {
      const refused = await call(app.baseUrl, 'POST', '/v1/clusters', {
        token: user.token,
        body: { name: 'too-late', region_id: 'fsn1', kaas_version: 'v1.30' },
      });
      expect(refused.status).toBe(422);
      expect(refused.body.error).toMatchObject({ code: 'validation_error', param: 'kaas_version' });
      expect(refused.body.error.suggestion).toContain('v1.36');
      expect(refused.body.error.suggestion).not.toContain('v1.30');
      expect((await api.GET('/v1/kaas/versions')).data.find((v) => v.id === 'v1.30')).toMatchObject({ available_for_new_clusters: false });

      // Its cluster keeps running: a machine joins, with the kubelet and kubeadm of its control plane's release.
      expect((await getCluster()).kaas).toMatchObject({ version: 'v1.30', status: 'RUNNING' });
      const cni = () => world.management.get(APP, ARGO_NS, cniApplicationName(k8sName(cluster.id)));
      await until('the pod network Application', () => cni() !== undefined);
      world.management.setStatus(APP, ARGO_NS, cni()!.metadata.name, { sync: { status: 'Synced' }, health: { status: 'Healthy' } });
      const kubeadm = new KubeadmWorker(world.tenant, () => true);
      const config = await api.POST('/v1/compute/configs', {
        body: {
          name: 'aging-workers',
          provider: 'hcloud',
          provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
        },
      });
      const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      const label = labelValue(machine.provider_id);
      const server = () => world.fake.servers(PLATFORM).find((s) => s.labels.machine === label);
      await until('the server to run', () => server()?.status === 'running');
      const creation = world.fake.requests.find(
        (r) => r.method === 'POST' && r.path === '/servers' && r.status === 201 && (r.body as { labels?: Record<string, string> }).labels?.machine === label,
      )!;
      expect(kubeadm.boot((creation.body as { user_data: string }).user_data)).toBe(machine.node_name);
      const node = world.tenant.get('v1/nodes', undefined, machine.node_name) as unknown as { status: { nodeInfo: { kubeletVersion: string } } };
      expect(node.status.nodeInfo.kubeletVersion).toBe('v1.30.14');
      // The cloud controller manager the machine brought sets the node up (it is tainted until then).
      const ccmApp = () => world.management.get(APP, ARGO_NS, ccmApplicationName(k8sName(cluster.id)));
      await until('the cloud controller manager', () => ccmApp() !== undefined);
      world.management.setStatus(APP, ARGO_NS, ccmApp()!.metadata.name, { sync: { status: 'Synced' }, health: { status: 'Healthy' } });
      new HcloudCloudControllerManager({ management: world.management, tenant: world.tenant, fake: world.fake, argocdNamespace: ARGO_NS }).reconcile();
      const machineStatus = async () => (await api.GET('/v1/compute/machines', { params: { query: { cluster_id: cluster.id } } }))[0]?.status;
      await until('the machine to be ready', async () => (await machineStatus()) === 'ready');

      // And an install runs on it.
      const product = await api.POST('/v1/products', {
        body: {
          name: 'Aging',
          cluster_ids: [cluster.id],
          sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' } }],
        },
      });
      const install = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
      const application = () =>
        world.management.list(APP, ARGO_NS).find((a) => a.metadata.labels?.['platform-api/install'] === install.id) as Application | undefined;
      await until('the Application', () => application() !== undefined);
      world.management.setStatus(APP, ARGO_NS, application()!.metadata.name, {
        sync: { status: 'Synced', comparedTo: { source: application()!.spec.source, destination: application()!.spec.destination } },
        health: { status: 'Healthy' },
      });
      await until('the install to run', async () => (await api.GET('/v1/installs/{id}', { params: { path: { id: install.id } } })).status === 'running');
      // Its machine goes, and its Node with it (the tenant's API server stands for every cluster's here).
      await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
      await until('the machine to be gone', async () => (await machineStatus()) === undefined);
    } finally {
      await setKaasVersionAvailability(app.db, 'v1.30', true);
    }
  });
});

describe("a cluster's life on the real systems", () => {
  it('goes through a control-plane roll, runs a product whose LoadBalancer Service gets a Hetzner load balancer, and loses the Node of a deleted machine', {
    timeout: 120_000,
  }, async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
    const cluster = await api.POST('/v1/clusters', { body: { name: 'life', region_id: 'fsn1' } });
    const name = k8sName(cluster.id);
    const getCluster = () => api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
    await until('the TenantControlPlane', () => world.management.get(TCP, KAMAJI_NS, name) !== undefined);
    const kamaji = new KamajiController(world.management, world.tenant);
    kamaji.provisioning(KAMAJI_NS, name);
    kamaji.rollout(KAMAJI_NS, name, 2);
    await until('the cluster to run', async () => (await getCluster()).kaas.status === 'RUNNING');

    // The rest of the world runs by itself: Argo CD (its repositories: the CNI's, the cloud controller manager's and
    // a chart whose Service is a load balancer), the kubelets booting the running servers, the cloud controller manager.
    const argocd = new ArgoCdController(world.management, ARGO_NS, world.tenant)
      .addRepository({ url: CNI_CHART.repoURL, charts: { [CNI_CHART.chart]: [CNI_CHART.targetRevision] } })
      .addRepository({ url: CCM_CHART.repoURL, charts: { [CCM_CHART.chart]: [CCM_CHART.targetRevision] } })
      .addRepository({ url: 'https://charts.example.com/web', charts: { web: ['1.0.0'] }, services: { web: [{ name: 'web', type: 'LoadBalancer' }] } })
      .start(20);
    const cni = () => world.management.get(APP, ARGO_NS, cniApplicationName(name));
    const kubelet = new KubeadmWorker(world.tenant, () => (cni()?.status as { health?: { status?: string } } | undefined)?.health?.status === 'Healthy');
    const ccm = new HcloudCloudControllerManager({ management: world.management, tenant: world.tenant, fake: world.fake, argocdNamespace: ARGO_NS });
    let ccmRuns = true;
    const booted = new Set<string>();
    const timer = setInterval(() => {
      for (const server of world.fake.servers(PLATFORM)) {
        if (server.status !== 'running' || booted.has(server.name)) continue;
        const creation = world.fake.requests.find((r) => r.method === 'POST' && r.path === '/servers' && (r.body as { name?: string }).name === server.name);
        booted.add(server.name);
        kubelet.boot((creation!.body as { user_data: string }).user_data);
      }
      kubelet.heartbeat();
      if (ccmRuns) ccm.reconcile();
    }, 30);
    try {
      // A machine of the platform's project: the cloud controller manager gets the platform's token.
      const config = await api.POST('/v1/compute/configs', {
        body: { name: 'life', provider: 'hcloud', provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' } },
      });
      const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      const machineStatus = async () =>
        (await api.GET('/v1/compute/machines', { params: { query: { cluster_id: cluster.id } } })).find((m) => m.provider_id === machine.provider_id)?.status;
      await until('the machine to be ready', async () => (await machineStatus()) === 'ready');
      const hcloudSecret = world.tenant.get('v1/secrets', 'kube-system', 'hcloud') as unknown as { data: Record<string, string> };
      expect(Buffer.from(hcloudSecret.data.token!, 'base64').toString()).toBe(PLATFORM);
      const server = world.fake.servers(PLATFORM).find((s) => s.name === machine.node_name)!;
      const node = () =>
        world.tenant.get('v1/nodes', undefined, machine.node_name) as unknown as { spec: { providerID?: string; taints?: unknown[] } } | undefined;
      expect(node()?.spec).toMatchObject({ providerID: `hcloud://${server.id}`, taints: [] });

      // Kamaji rolls the control plane (a management node drained): the cluster runs on, says so, and serves.
      expect(kamaji.roll(KAMAJI_NS, name)).toBe('Unknown');
      await app.runtime.controlPlanes.sweep();
      expect((await getCluster()).kaas).toMatchObject({
        status: 'RUNNING',
        status_message: 'The control plane is rolling out new replicas (Kamaji: Unknown); it keeps serving meanwhile.',
      });
      const kubeconfig = await call(app.baseUrl, 'GET', `/v1/clusters/${cluster.id}/kubeconfig`, { token: user.token });
      expect(kubeconfig.status).toBe(200);

      // A product whose chart has a LoadBalancer Service: Argo CD keeps it Progressing until the Service has an
      // address, which the cloud controller manager gives it from a Hetzner load balancer.
      ccmRuns = false;
      const product = await api.POST('/v1/products', {
        body: {
          name: 'Web',
          cluster_ids: [cluster.id],
          sources: [{ chart: { repo_url: 'https://charts.example.com/web', target_revision: '1.0.0', chart: 'web' } }],
        },
      });
      const install = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
      const getInstall = () => api.GET('/v1/installs/{id}', { params: { path: { id: install.id } } });
      const application = () => world.management.list(APP, ARGO_NS).find((a) => a.metadata.labels?.['platform-api/install'] === install.id);
      const service = () => world.tenant.get('v1/services', k8sName(install.id), 'web');
      await until(
        'the Service to be applied',
        () => service() !== undefined && (application()?.status as { sync?: { status?: string } })?.sync?.status === 'Synced',
      );
      await new Promise((resolve) => setTimeout(resolve, 200)); // several passes of Argo CD
      expect((application()!.status as { health: { status: string } }).health.status).toBe('Progressing');
      expect((await getInstall()).status).toBe('installing');
      ccmRuns = true;
      await until('the install to run', async () => (await getInstall()).status === 'running');
      const [balancer] = world.fake.loadBalancers(PLATFORM);
      expect(balancer).toMatchObject({ labels: { 'hcloud-ccm/service-uid': service()!.metadata.uid }, location: { name: 'fsn1' } });
      expect(balancer!.targets.map((t) => t.server?.id)).toEqual([server.id]);
      expect((service()!.status as { loadBalancer: { ingress: { ip: string }[] } }).loadBalancer.ingress[0]!.ip).toBe(balancer!.public_net.ipv4.ip);

      // The control plane is Ready again: the message goes.
      expect(kamaji.rollout(KAMAJI_NS, name, 2)).toBe('Ready');
      await app.runtime.controlPlanes.sweep();
      expect((await getCluster()).kaas.status_message).toBeNull();

      // The machine is deleted: its server goes, and its Node with it.
      ccmRuns = false; // the platform removes the Node itself, not waiting for the cloud controller manager
      await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
      await until('the machine to be gone', async () => (await machineStatus()) === undefined);
      expect(world.fake.servers(PLATFORM).filter((s) => s.name === machine.node_name)).toEqual([]);
      expect(node()).toBeUndefined();
      // Its load balancer was claimed for the cluster while it still targeted the server: it goes with the cluster.
      expect(world.fake.loadBalancers(PLATFORM).find((b) => b.id === balancer!.id)?.labels).toMatchObject({ cluster: labelValue(cluster.id) });

      // Asleep, the control plane serves nothing: the message says so, and a kubeconfig is refused with it.
      expect(kamaji.sleep(KAMAJI_NS, name)).toBe('Sleeping');
      await app.runtime.controlPlanes.sweep();
      const asleep = 'The control plane is asleep (Kamaji: Sleeping, no replicas): nothing reaches the cluster until it is woken.';
      expect((await getCluster()).kaas).toMatchObject({ status: 'RUNNING', status_message: asleep });
      const refused = await call(app.baseUrl, 'GET', `/v1/clusters/${cluster.id}/kubeconfig`, { token: user.token });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({ code: 'conflict', message: asleep });
    } finally {
      clearInterval(timer);
      argocd.stop();
    }
  });
});
