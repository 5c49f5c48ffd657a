// `pnpm smoke` (scripts/smoke.ts) against a platform with both real drivers — COMPUTE_PROVIDER=hetzner and
// CLUSTER_DRIVER=kubernetes — pointed at the doubles, each progressing by itself on the wall clock: the Hetzner
// fake, Kamaji (KamajiController.run), Argo CD's controller with the smoke's chart in its repository, a kubelet
// that boots every running server from its user_data with kubeadm and runs the installs' pods, and the cloud
// controller manager the platform installs.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../src/clock.ts';
import { CCM_CHART } from '../src/providers/kubernetes/ccm.ts';
import { CNI_CHART, cniApplicationName } from '../src/providers/kubernetes/cni.ts';
import { ArgoCdController } from './support/argocd-controller.ts';
import { HcloudCloudControllerManager } from './support/hcloud-ccm.ts';
import { KamajiController } from './support/kamaji.ts';
import { KubeadmWorker } from './support/kubeadm.ts';
import { ARGO_NS, KAMAJI_NS, useRealDriverWorld } from './support/real-drivers.ts';
import { newUser, useTestServer } from './support.ts';

const APP = 'argoproj.io/v1alpha1/applications';
const PLATFORM = 'platform-token-smoke-7c41';
const SMOKE = join(import.meta.dirname, '../../../scripts/smoke.ts');
const STEPS = ['cluster', 'machine', 'product', 'install', 'logs', 'uninstall', 'cleanup'];

const world = useRealDriverWorld({ tokens: [PLATFORM] });

const app = useTestServer({
  clock: systemClock,
  env: () => world.env(),
  resolveHost: async () => ['93.184.216.34'],
  runtime: { tickMs: 20 },
});

/**
 * The rest of the world, every `everyMs`: Argo CD removes a deleted Application's resources and then its finalizer
 * (controller/appcontroller.go, finalizeApplicationDeletion); a running server boots from its user_data (cloud-init
 * runs `kubeadm join`), its kubelet reports every few moments; a synced install's Deployment runs a pod that logs.
 */
const bootErrors: string[] = [];
function worldRuns(everyMs = 50): () => void {
  const cniHealthy = () =>
    world.management
      .list(APP, ARGO_NS)
      .some(
        (a) => a.metadata.name.startsWith(cniApplicationName('')) && (a.status as { health?: { status?: string } } | undefined)?.health?.status === 'Healthy',
      );
  const kubelet = new KubeadmWorker(world.tenant, cniHealthy);
  const ccm = new HcloudCloudControllerManager({ management: world.management, tenant: world.tenant, fake: world.fake, argocdNamespace: ARGO_NS });
  const booted = new Set<string>();
  const podsOf = new Set<string>();
  const timer = setInterval(() => {
    for (const application of world.management.list(APP, ARGO_NS)) {
      const { name, deletionTimestamp, labels } = application.metadata;
      if (deletionTimestamp) world.management.finalize(APP, ARGO_NS, name, 'resources-finalizer.argocd.argoproj.io');
      const healthy = (application.status as { health?: { status?: string } } | undefined)?.health?.status === 'Healthy';
      const namespace = (application.spec as { destination?: { namespace?: string } }).destination?.namespace;
      if (healthy && labels?.['platform-api/install'] && namespace && !podsOf.has(name)) {
        podsOf.add(name);
        const pod = `${name}-5d8f-abcde`.slice(0, 63);
        world.tenant.put('v1/pods', {
          metadata: { name: pod, namespace },
          spec: { containers: [{ name: 'podinfo', image: 'ghcr.io/stefanprodan/podinfo:6.7.1' }] },
          status: { phase: 'Running' },
        });
        world.tenant.appendLog(namespace, pod, 'podinfo', [{ time: new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z'), line: 'Starting podinfo' }]);
      }
    }
    for (const server of world.fake.servers(PLATFORM)) {
      if (server.status !== 'running' || booted.has(server.name)) continue;
      const creation = world.fake.requests.find((r) => r.method === 'POST' && r.path === '/servers' && (r.body as { name?: string }).name === server.name);
      const userData = (creation?.body as { user_data?: string } | undefined)?.user_data;
      if (!userData) continue;
      booted.add(server.name);
      try {
        kubelet.boot(userData);
      } catch (error) {
        bootErrors.push(`${server.name}: ${(error as Error).message}`);
      }
    }
    kubelet.heartbeat();
    ccm.reconcile();
  }, everyMs);
  return () => clearInterval(timer);
}

describe('pnpm smoke against both real drivers pointed at the doubles', () => {
  it('passes every step, printing its time, and leaves nothing behind', { timeout: 180_000 }, async () => {
    const user = await newUser(app.db, systemClock, 'pro');
    const stopKamaji = new KamajiController(world.management, world.tenant).run(systemClock, KAMAJI_NS, { provisioningSeconds: 1, notReadySeconds: 2 });
    const argocd = new ArgoCdController(world.management, ARGO_NS)
      .addRepository({ url: 'https://stefanprodan.github.io/podinfo', charts: { podinfo: ['6.7.1'] } })
      .addRepository({ url: CNI_CHART.repoURL, charts: { [CNI_CHART.chart]: [CNI_CHART.targetRevision] } })
      .addRepository({ url: CCM_CHART.repoURL, charts: { [CCM_CHART.chart]: [CCM_CHART.targetRevision] } })
      .start(50);
    const stopWorld = worldRuns();
    try {
      const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          [SMOKE, '--cluster-timeout', '60', '--machine-timeout', '60', '--install-timeout', '60', '--step-timeout', '60'],
          {
            env: { ...process.env, PLATFORM_API_URL: app.baseUrl, PLATFORM_TOKEN: user.token, PLATFORM_WORKSPACE_ID: user.workspaceId, SMOKE_POLL_MS: '200' },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
        });
        child.stderr.on('data', (chunk: Buffer) => {
          out += chunk.toString();
        });
        child.once('close', (exit) => resolve({ code: exit, out }));
      });
      process.stdout.write(out);
      for (const step of STEPS) {
        expect(
          out.split('\n').find((line) => line.startsWith(step.padEnd(12)) && line.trim() !== step),
          out,
        ).toMatch(/ ok +\d+\.\d s/);
      }
      expect(out).toContain('smoke: all steps passed');
      expect(code).toBe(0);
      // What it made is gone from the doubles too.
      expect(world.fake.servers(PLATFORM)).toEqual([]);
      expect(world.management.list('kamaji.clastix.io/v1alpha1/tenantcontrolplanes', KAMAJI_NS)).toEqual([]);
      expect(world.management.list(APP, ARGO_NS)).toEqual([]);
      expect(bootErrors).toEqual([]);
      expect(world.fake.violations).toEqual([]);
      expect(world.management.refused).toEqual([]);
      expect(world.tenant.refused).toEqual([]);
    } finally {
      stopWorld();
      argocd.stop();
      stopKamaji();
    }
  });
});
