// The leftovers reconciler at Hetzner (jobs/leftovers.ts), against the stateful fake of Hetzner Cloud's API, with
// the workflows of COMPUTE_PROVIDER=hetzner making the machines and clusters behind what it finds. A file of its own:
// each sweep looks into every cloud credential's project and refreshes every live cluster's firewall there, so the
// machines of the provisioning tests (hetzner-workflows.test.ts) would make each of its sweeps hundreds of requests.
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { leftoversReconciler } from '../src/jobs/leftovers.ts';
import { HetznerCompute, labelValue } from '../src/providers/hetzner/compute.ts';
import { tokenRateLimit } from '../src/providers/hetzner/rate-limit.ts';
import { secretBox } from '../src/services/secrets.ts';
import type { HetznerFake } from './support/hetzner-fake.ts';
import { BYOM_TOKEN, MANAGED_BY, useHetznerWorkflows } from './support/hetzner-workflows.ts';
import { eventually, newUser } from './support.ts';

const hetzner = useHetznerWorkflows();
const { app, settled, machineOnNewCluster, machineWhen } = hetzner;
const { clock } = app;
let fake: HetznerFake;
beforeAll(() => {
  fake = hetzner.fake;
});

/** The driver as the workflows use it, called directly: what it makes has no machine or workflow behind it. */
const directDriver = () =>
  new HetznerCompute({ endpoint: fake.url, token: undefined, managedBy: MANAGED_BY, rateLimit: tokenRateLimit(app.db, 3_600_000), actionPollMs: 10 });
/** The BYOM credential's token, as the driver takes it. */
const byom = { id: 'ccr_direct', token: BYOM_TOKEN };

describe('leftovers at Hetzner', () => {
  it('deletes a server and a snapshot labelled as ours with nothing behind them after the grace period, not before, and not in dry run', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { machine } = await machineOnNewCluster(user, 'hz-leftovers', { byom: true });
    const ready = await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready', 5);
    // A server (and its snapshot) made for a machine that was deleted while the creation was in flight.
    const hetzner = directDriver();
    const lost = await hetzner.createServer({
      name: 'lost-node',
      server_type: 'cx22',
      location: 'fsn1',
      image: 'ubuntu-24.04',
      labels: { workflow: 'wf_lost', machine: 'compute://mch_gone' },
      credential: byom,
    });
    const lostSnapshot = await hetzner.createSnapshot(lost.id, { workflow: 'wf_lost_snap', machine: 'compute://mch_gone' }, byom);
    // The user's own server in their project, labelled workflow and machine as ours are, but not managed by us.
    const users = await hetzner.createServer({
      name: 'users-own-node',
      server_type: 'cx22',
      location: 'fsn1',
      image: 'ubuntu-24.04',
      labels: { workflow: 'wf_users_own', machine: 'compute://mch_gone' },
      credential: byom,
    });
    fake.mutateServer(BYOM_TOKEN, Number(users.id), (server) => {
      delete server.labels['managed-by'];
    });
    const logs: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => logs.push(line) });
    const reconciler = (dryRun: boolean) =>
      leftoversReconciler({
        db: app.db,
        clock,
        logger,
        provider: app.runtime.provider,
        secrets: secretBox(app.secretsKey),
        graceSeconds: 600,
        dryRun,
        everyMs: 60_000,
      });
    const live = reconciler(false);
    const dry = reconciler(true);
    const serverIds = () => fake.servers(BYOM_TOKEN).map((s) => String(s.id));
    const snapshotIds = () => fake.images(BYOM_TOKEN).map((i) => String(i.id));

    await live.sweep();
    await dry.sweep();
    clock.advance(599);
    await live.sweep();
    expect(serverIds()).toContain(lost.id);
    expect(snapshotIds()).toContain(lostSnapshot.id);

    clock.advance(1);
    await dry.sweep();
    expect(serverIds()).toContain(lost.id);
    expect(logs.some((l) => l.includes('not deleted (dry run)') && l.includes(`"id":"${lost.id}"`))).toBe(true);

    await live.sweep();
    expect(serverIds()).not.toContain(lost.id);
    expect(snapshotIds()).not.toContain(lostSnapshot.id);
    expect(logs.some((l) => l.includes('leftover server deleted') && l.includes(`"id":"${lost.id}"`))).toBe(true);
    // The machine that exists keeps its server; the user's own server is never touched.
    expect(serverIds()).toContain(ready.server_id);
    expect(serverIds()).toContain(users.id);
    clock.advance(3600);
    await live.sweep();
    expect(serverIds()).toContain(users.id);
    expect(fake.requests.filter((r) => r.path.startsWith(`/servers/${users.id}`) && r.method !== 'GET')).toEqual([]);
  }, 60_000);

  it('deleting a cluster whose machines are deleted deletes its firewall at once, in the BYOM project', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-fw-gone', { byom: true });
    await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready', 5);
    const firewall = fake.firewalls(BYOM_TOKEN).find((f) => f.labels?.cluster === labelValue(cluster.id))!;
    await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    await eventually(
      async () => {
        await settled();
        clock.advance(2);
        return app.db.selectFrom('machines').select('status').where('provider_id', '=', machine.provider_id).executeTakeFirst();
      },
      (m) => m === undefined,
      'the machine to be deleted',
    );
    expect(fake.firewalls(BYOM_TOKEN).map((f) => f.id)).toContain(firewall.id);
    await api.DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
    // Deleted right after the answer (not awaited by it), not on the leftovers run's next round.
    await eventually(
      () => fake.firewalls(BYOM_TOKEN).map((f) => f.id),
      (ids) => !ids.includes(firewall.id),
      'the firewall to be deleted',
      5_000,
    );
  }, 60_000);

  it('the load balancers a cluster’s cloud controller manager made go with the cluster; one left of a gone cluster is swept; a user’s own is never touched', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-lb-gone', { byom: true });
    const ready = await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready', 5);
    // As hcloud-cloud-controller-manager makes one for a LoadBalancer Service (support/hcloud-ccm.ts): labelled
    // with the Service's uid only, targeting the cluster's servers.
    const made = fake.createLoadBalancer(BYOM_TOKEN, {
      name: 'a0f4c2d9e',
      labels: { 'hcloud-ccm/service-uid': '0f4c2d9e-0000-4000-8000-000000000001' },
      location: 'fsn1',
      serverIds: [Number(ready.server_id)],
    });
    // A load balancer of the user's own in the same project, targeting their own servers only.
    const users = fake.createLoadBalancer(BYOM_TOKEN, {
      name: 'users-own',
      labels: { 'hcloud-ccm/service-uid': '0f4c2d9e-0000-4000-8000-000000000002' },
      location: 'fsn1',
      serverIds: [],
    });
    const balancer = (id: number) => fake.loadBalancers(BYOM_TOKEN).find((b) => b.id === id);
    // The machine's deletion claims it for the cluster while it still targets the machine's server.
    await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    await eventually(
      async () => {
        await settled();
        clock.advance(2);
        return app.db.selectFrom('machines').select('status').where('provider_id', '=', machine.provider_id).executeTakeFirst();
      },
      (m) => m === undefined,
      'the machine to be deleted',
    );
    expect(balancer(made.id)!.labels).toMatchObject({ 'managed-by': MANAGED_BY, cluster: labelValue(cluster.id) });
    expect(balancer(made.id)!.targets).toEqual([]);
    await api.DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
    await eventually(
      () => balancer(made.id),
      (b) => b === undefined,
      'the cluster’s load balancer to be deleted',
      5_000,
    );

    // One claimed for a cluster that is gone (its deletion at the provider failed): swept after the grace period.
    const orphan = fake.createLoadBalancer(BYOM_TOKEN, {
      name: 'a0f4c2d9f',
      labels: { 'hcloud-ccm/service-uid': '0f4c2d9e-0000-4000-8000-000000000003', 'managed-by': MANAGED_BY, cluster: labelValue('cl_gone') },
      location: 'fsn1',
      serverIds: [],
    });
    const sweeper = leftoversReconciler({
      db: app.db,
      clock,
      logger: pino({ level: 'silent' }),
      provider: app.runtime.provider,
      secrets: secretBox(app.secretsKey),
      graceSeconds: 600,
      dryRun: false,
      everyMs: 60_000,
    });
    await sweeper.sweep();
    expect(balancer(orphan.id)).toBeDefined();
    clock.advance(600);
    await sweeper.sweep();
    expect(balancer(orphan.id)).toBeUndefined();
    expect(balancer(users.id)!.labels).toEqual({ 'hcloud-ccm/service-uid': '0f4c2d9e-0000-4000-8000-000000000002' });
  }, 60_000);

  it('a deleted cluster’s firewall is deleted after its servers: refused while a leftover server still has it, gone once that server is', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-firewall', { byom: true });
    const ready = await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready', 5);
    const firewall = fake.firewalls(BYOM_TOKEN).find((f) => f.labels?.cluster === labelValue(cluster.id))!;
    expect(firewall.labels?.['managed-by']).toBe(MANAGED_BY);
    // A server of the cluster whose machine was lost in a crash: it has the firewall too.
    const hetzner = directDriver();
    const lost = await hetzner.createServer({
      name: 'lost-firewalled-node',
      server_type: 'cx22',
      location: 'fsn1',
      image: 'ubuntu-24.04',
      labels: { workflow: 'wf_lost_fw', machine: 'compute://mch_gone_fw' },
      cluster_id: cluster.id,
      credential: byom,
    });
    expect(
      fake
        .servers(BYOM_TOKEN)
        .find((s) => String(s.id) === lost.id)
        ?.public_net.firewalls?.map((f) => f.id),
    ).toEqual([firewall.id]);

    await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    await eventually(
      async () => {
        await settled();
        clock.advance(2);
        return app.db.selectFrom('machines').select('status').where('provider_id', '=', machine.provider_id).executeTakeFirst();
      },
      (m) => m === undefined,
      'the machine to be deleted',
    );
    expect(fake.servers(BYOM_TOKEN).map((s) => String(s.id))).not.toContain(ready.server_id);
    // The deleted node's address left the firewall; the lost server's is still in it.
    const sources = () =>
      new Set(
        fake
          .firewalls(BYOM_TOKEN)
          .find((f) => f.id === firewall.id)
          ?.rules?.flatMap((r) => r.source_ips ?? []),
      );
    const lostAddress = `${fake.servers(BYOM_TOKEN).find((s) => String(s.id) === lost.id)!.public_net.ipv4!.ip}/32`;
    expect(sources().has(lostAddress)).toBe(true);
    expect([...sources()].filter((ip) => ip.endsWith('/32'))).toEqual([lostAddress]);
    await api.DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
    // The deletion tried at once (right after the answer), and Hetzner refused: the lost server still has the firewall.
    const tried = await eventually(
      () => fake.requests.filter((r) => r.method === 'DELETE' && r.path === `/firewalls/${firewall.id}`).map((r) => r.status),
      (statuses) => statuses.length > 0,
      'the firewall deletion to be tried',
      5_000,
    );
    expect(tried).toEqual([422]);

    const logs: string[] = [];
    const sweeper = leftoversReconciler({
      db: app.db,
      clock,
      logger: pino({ level: 'info' }, { write: (line: string) => logs.push(line) }),
      provider: app.runtime.provider,
      secrets: secretBox(app.secretsKey),
      graceSeconds: 600,
      dryRun: false,
      everyMs: 60_000,
    });
    const firewallIds = () => fake.firewalls(BYOM_TOKEN).map((f) => f.id);
    await sweeper.sweep();
    // The lost server is within its grace period and still has the firewall: Hetzner refuses, the sweep goes on.
    expect(firewallIds()).toContain(firewall.id);
    expect(fake.requests.some((r) => r.method === 'DELETE' && r.path === `/firewalls/${firewall.id}` && r.status === 422)).toBe(true);
    expect(logs.some((l) => l.includes('leftover firewall still in use'))).toBe(true);
    clock.advance(600);
    await sweeper.sweep();
    expect(fake.servers(BYOM_TOKEN).map((s) => String(s.id))).not.toContain(lost.id);
    expect(firewallIds()).not.toContain(firewall.id);
    expect(logs.some((l) => l.includes('leftover firewall deleted') && l.includes(`"id":"${firewall.id}"`))).toBe(true);
  }, 60_000);
});
