// The simulated cloud behaves like the real systems where callers can tell: idempotent creation by label,
// servers that take time to boot, and a pod-log API with tail, since, resume and follow.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/schema.ts';
import { SimulatedCloud } from '../src/providers/simulated.ts';
import { TestClock, useTestDatabase } from './support.ts';

const database = useTestDatabase();
let cloud: SimulatedCloud<Database>;
const clock = new TestClock();

beforeAll(async () => {
  cloud = new SimulatedCloud(database.db, clock, { bootSeconds: 10, releaseSeconds: 5, logLinesPerSecond: 2, followPollMs: 10 });
});

describe('ComputeProvider', () => {
  it('boots servers over time and creates one per workflow label', async () => {
    const request = { name: 'n1', server_type: 'cx22', location: 'fsn1', image: 'ubuntu-24.04', labels: { workflow: 'wf_sim_1' } };
    const first = await cloud.createServer(request);
    expect(first.status).toBe('initializing');
    expect(await cloud.createServer(request)).toMatchObject({ id: first.id });
    clock.advance(10);
    expect(await cloud.getServer(first.id)).toMatchObject({ status: 'running', server_type: 'cx22', image: 'ubuntu-24.04' });
    await cloud.deleteServer(first.id);
    expect(await cloud.getServer(first.id)).toBeUndefined();
  });

  it('fails creations at the configured rate', async () => {
    cloud.options.failureRate = 1;
    try {
      await expect(
        cloud.createServer({ name: 'n2', server_type: 'cx22', location: 'fsn1', image: 'ubuntu-24.04', labels: { workflow: 'wf_sim_2' } }),
      ).rejects.toThrow(/resource_unavailable/);
    } finally {
      cloud.options.failureRate = 0;
    }
  });
});

describe('an outage', () => {
  it('fails only the calls made while the database is away, not every later one', async () => {
    // The simulator creates its schema on its first call: that call meets the outage.
    let down = true;
    const flaky = database.db.withPlugin({
      transformQuery: (args) => {
        if (down) throw new Error('the database is away');
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    const sim = new SimulatedCloud(flaky, clock);
    await expect(sim.offerings()).rejects.toThrow('the database is away');
    down = false;
    expect((await sim.offerings()).map((o) => o.name)).toContain('cx22');
  });
});

describe('ClusterDriver', () => {
  it('brings control planes up over time, and a joined node is Ready once its server runs', async () => {
    const sim = new SimulatedCloud(database.db, clock, { controlPlaneSeconds: 10, bootSeconds: 10 });
    expect(await sim.createCluster({ cluster_id: 'cl_cp', kubernetes_release: 'v1.33.2' })).toMatchObject({ status: 'PROVISIONING', endpoint: null });
    expect(await sim.createCluster({ cluster_id: 'cl_cp', kubernetes_release: 'v1.33.2' })).toMatchObject({ status: 'PROVISIONING' });
    clock.advance(10);
    expect(await sim.getCluster('cl_cp')).toMatchObject({ status: 'RUNNING' });
    const join = { cluster_id: 'cl_cp', machine_id: 'mch_cp', node_name: 'node-cp', kubernetes_release: 'v1.33.2' };
    const { user_data } = await sim.joinMachine(join);
    expect(user_data).toMatch(/kubeadm join .* --node-name node-cp/);
    expect((await sim.joinMachine(join)).user_data).toBe(user_data);
    expect(await sim.nodeReady('cl_cp', 'node-cp')).toBe(false);
    // A server of the same name for another machine is not this node.
    await sim.createServer({
      name: 'node-cp',
      server_type: 'cx22',
      location: 'fsn1',
      image: 'ubuntu-24.04',
      labels: { workflow: 'wf_cp_other', machine: 'mch_other' },
    });
    clock.advance(10);
    expect(await sim.nodeReady('cl_cp', 'node-cp')).toBe(false);
    await sim.createServer({ name: 'node-cp', server_type: 'cx22', location: 'fsn1', image: 'ubuntu-24.04', labels: { workflow: 'wf_cp', machine: 'mch_cp' } });
    expect(await sim.nodeReady('cl_cp', 'node-cp')).toBe(false);
    clock.advance(10);
    expect(await sim.nodeReady('cl_cp', 'node-cp')).toBe(true);
    await sim.deleteCluster('cl_cp');
    expect(await sim.getCluster('cl_cp')).toBeUndefined();
  });

  const release = {
    cluster_id: 'cl_sim',
    namespace: 'ins_sim',
    release: 'web-abc123',
    chart: { repo_url: 'https://charts.example.com', target_revision: '1.0.0', chart: 'web' },
    values: {},
    template_id: 'tpl_1',
  };
  const read = async (options: { tail?: number; since_ms?: number; after?: number }) => {
    const [target] = await cloud.listContainers('cl_sim', 'ins_sim');
    const lines = [];
    for await (const entry of cloud.readLog('cl_sim', 'ins_sim', target!, { follow: false, signal: new AbortController().signal, ...options }))
      lines.push(entry);
    return lines;
  };

  it('deploys releases over time, and upgrades to a new template as a new revision', async () => {
    expect(await cloud.upsertRelease(release)).toMatchObject({ status: 'pending-install', revision: 1 });
    expect(await cloud.upsertRelease(release)).toMatchObject({ revision: 1 }); // the same again: no new revision
    clock.advance(5);
    expect(await cloud.getRelease('cl_sim', 'ins_sim', 'web-abc123')).toMatchObject({ status: 'deployed' });
    expect(await cloud.listContainers('cl_sim', 'ins_sim')).toEqual([{ pod: expect.stringMatching(/^web-abc123-/), container: 'web' }]);
  });

  it('reads a container log with tail, since and after', async () => {
    clock.advance(10); // 15 s since the pod started at 2 lines a second: 31 lines
    const all = await read({});
    expect(all).toHaveLength(31);
    expect(all[0]!.line).toMatch(/^Pulling image/);
    expect(all.map((l) => l.position)).toEqual(all.map((_, i) => i));
    expect(await read({ tail: 4 })).toEqual(all.slice(-4));
    expect(await read({ after: 20 })).toEqual(all.slice(21));
    expect((await read({ since_ms: clock.nowMs() - 2000 })).every((l) => l.timestamp_ms >= clock.nowMs() - 2000)).toBe(true);
  });

  it('follows a log until the release is uninstalled', async () => {
    const [target] = await cloud.listContainers('cl_sim', 'ins_sim');
    const controller = new AbortController();
    const followed: number[] = [];
    const ticker = setInterval(() => clock.advance(1), 15);
    try {
      for await (const entry of cloud.readLog('cl_sim', 'ins_sim', target!, { follow: true, tail: 1, signal: controller.signal })) {
        followed.push(entry.position);
        if (followed.length === 6) await cloud.uninstallRelease('cl_sim', 'ins_sim', 'web-abc123');
      }
    } finally {
      clearInterval(ticker);
    }
    // Consecutive lines, and the iteration ended by itself once the pod was gone.
    expect(followed.length).toBeGreaterThanOrEqual(6);
    expect(followed).toEqual(followed.map((_, i) => followed[0]! + i));
    expect(await cloud.listContainers('cl_sim', 'ins_sim')).toEqual([]);
  });
});
