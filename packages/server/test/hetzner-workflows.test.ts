// The provision workflow with COMPUTE_PROVIDER=hetzner, end to end through the API, against the stateful
// fake of Hetzner Cloud's API (validated against the committed extract). Clusters stay simulated. What is left
// behind at Hetzner and swept is hetzner-leftovers.test.ts's.
import { createPlatformClient } from '@platform/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedSampleResources } from '../src/db/seed.ts';
import { labelValue } from '../src/providers/hetzner/compute.ts';
import type { HetznerFake } from './support/hetzner-fake.ts';
import { BYOM_TOKEN, PLATFORM, useHetznerWorkflows } from './support/hetzner-workflows.ts';
import { apiError, eventually, newUser } from './support.ts';

const hetzner = useHetznerWorkflows();
const { app, settled, machineOnNewCluster, machineRow, machineWhen } = hetzner;
const { clock } = app;
let fake: HetznerFake;
beforeAll(() => {
  fake = hetzner.fake;
});

describe('provisioning on Hetzner Cloud', () => {
  it('creates a server labelled with the workflow, reaches ready, and the drift check reads the live server', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine } = await machineOnNewCluster(user, 'hz-ready');
    const ready = await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready');
    const servers = fake.servers(PLATFORM).filter((s) => s.labels.machine === labelValue(machine.provider_id));
    expect(servers).toHaveLength(1);
    expect(String(servers[0]!.id)).toBe(ready.server_id);
    expect(servers[0]).toMatchObject({ status: 'running', location: { name: 'nbg1' }, server_type: { name: ready.server_type } });
    // Behind its cluster's firewall from the first boot, which admits the cluster's nodes (this one).
    const firewall = fake.firewalls(PLATFORM).find((f) => f.labels?.cluster === labelValue(ready.cluster_id));
    expect(servers[0]!.public_net.firewalls).toEqual([{ id: firewall!.id, status: 'applied' }]);
    expect(firewall!.rules?.filter((r) => r.protocol === 'tcp' && r.port === '1-65535').map((r) => r.source_ips)).toEqual([
      [`${servers[0]!.public_net.ipv4!.ip}/32`],
    ]);
    const workflow = await app.db
      .selectFrom('workflows')
      .select('id')
      .where('subject_id', '=', machine.provider_id)
      .where('kind', '=', 'requestMachine')
      .executeTakeFirstOrThrow();
    expect(servers[0]!.labels.workflow).toBe(workflow.id);

    const drift = () => api.GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: machine.provider_id } } });
    expect((await drift()).drifted).toBe(false);
    const other = (await import('./support/hetzner-fake.ts')).SERVER_TYPES.find((t) => t.name === 'cpx31')!;
    fake.mutateServer(PLATFORM, servers[0]!.id, (s) => {
      s.server_type = other;
    });
    const drifted = await drift();
    expect(drifted.drifted).toBe(true);
    expect(drifted.differences).toEqual([{ field: 'server_type', desired: 'cx2*', actual: 'cpx31' }]);
  });

  it('a cluster name as long as the contract allows gives its servers names Hetzner takes (RFC 1123 hostnames)', async () => {
    const user = await newUser(app.db, clock, 'pro');
    // 63 characters, a dash where the name is cut to make room for the machine's suffix.
    const name = `${'a'.repeat(48)}-${'b'.repeat(14)}`;
    expect(name).toHaveLength(63);
    const { machine } = await machineOnNewCluster(user, name);
    const ready = await machineWhen(machine.provider_id, (m) => m.status === 'ready' || m.status === 'failed', 'the machine to be ready');
    expect(ready.status).toBe('ready');
    const [server] = fake.servers(PLATFORM).filter((s) => s.labels.machine === labelValue(machine.provider_id));
    expect(server!.name).toBe(ready.node_name);
    expect(server!.name).toMatch(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
    expect(server!.name).toBe(`${'a'.repeat(48)}-worker-${machine.provider_id.slice(-6)}`);
  });

  it('keeps a cluster’s machines in one Hetzner project: a machine of another project’s compute config is 422 naming compute_config_id', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, cluster, machine, credential } = await machineOnNewCluster(user, 'hz-one-project', { byom: true });
    const platformConfig = await api.POST('/v1/compute/configs', {
      body: {
        name: 'cfg-platform-account',
        provider: 'hcloud',
        provider_config: { provider: 'hcloud', region: 'nbg1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
      },
    });
    const refused = await apiError(api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: platformConfig.id } }));
    expect(refused).toMatchObject({ status: 422, code: 'validation_error', param: 'compute_config_id' });
    expect(refused.message).toContain(`cloud credential ${credential!.id}`);
    expect(refused.message).toContain(machine.provider_id);
    // Another machine of the BYOM project is taken.
    const byomConfig = await app.db.selectFrom('machines').select('compute_config_id').where('provider_id', '=', machine.provider_id).executeTakeFirstOrThrow();
    const second = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: byomConfig.compute_config_id } });
    expect(second.cluster_id).toBe(cluster.id);
  });

  it('a spent rate limit (429) makes provisioning wait, not fail', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-429');
    fake.exhaust(PLATFORM);
    await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready');
    const platform = fake.requests.filter((r) => r.authorization === `Bearer ${PLATFORM}`);
    const spent = platform.findIndex((r) => r.status === 429);
    expect(spent).toBeGreaterThanOrEqual(0);
    // Waited for the bucket's next request (100 ms at 36 000 an hour, less the clocks' rounding), not tried at once.
    expect(platform[spent + 1]!.at - platform[spent]!.at).toBeGreaterThanOrEqual(90);
    const notifications = await api.GET('/v1/notifications');
    expect(notifications.data.map((n) => n.type)).not.toContain('machine.provision_failed');
    expect((await api.GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId: cluster.id } } })).autoscaling.backoff_until).toBeNull();
  });

  it('a refused platform token fails the machine at once, with a notification naming the credential', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine } = await machineOnNewCluster(user, 'hz-401');
    fake.revoke(PLATFORM);
    const failed = await machineWhen(machine.provider_id, (m) => m.status === 'failed', 'the machine to fail');
    expect(failed.server_id).toBeNull();
    const notifications = await api.GET('/v1/notifications');
    const notice = notifications.data.find((n) => n.type === 'machine.failed');
    expect(notice?.body).toContain('the platform token (HCLOUD_TOKEN)');
    expect(notice?.body).not.toContain(PLATFORM);
    expect(notifications.data.map((n) => n.type)).not.toContain('machine.provision_failed');
    // Refused once, not retried.
    expect(fake.requests.filter((r) => r.status === 401)).toHaveLength(1);
  });

  it('a quota 403 (resource_limit_exceeded) fails the BYOM machine at once, naming the project’s limit, not the token', async () => {
    const user = await newUser(app.db, clock, 'pro');
    fake.refuseNext('post /servers', 'resource_limit_exceeded', 'server_limit_exceeded: project limit of 10 servers reached');
    const { api, machine, credential } = await machineOnNewCluster(user, 'hz-quota', { byom: true });
    const failed = await machineWhen(machine.provider_id, (m) => m.status === 'failed', 'the machine to fail');
    expect(failed.server_id).toBeNull();
    const notifications = (await api.GET('/v1/notifications')).data;
    const notice = notifications.find((n) => n.type === 'machine.failed');
    expect(notice?.body).toContain(`The Hetzner Cloud project of cloud credential ${credential!.id} has reached one of its own resource limits`);
    expect(notice?.body).toContain('not a problem with the token');
    expect(notice?.body).toContain('project limit of 10 servers reached');
    expect(notice?.body).not.toContain('replace the token');
    expect(notifications.map((n) => n.type)).not.toContain('machine.provision_failed');
    expect(
      fake.requests.filter((r) => r.method === 'POST' && r.path === '/servers' && r.authorization === `Bearer ${BYOM_TOKEN}` && r.status === 403),
    ).toHaveLength(1);
  });

  it('invalid_input (a type the location does not offer) fails the machine at once with Hetzner’s message, no backoff', async () => {
    const user = await newUser(app.db, clock, 'pro');
    fake.refuseNext('post /servers', 'invalid_input', 'unsupported location for server type');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-invalid', { byom: true });
    await eventually(
      async () => {
        await settled();
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'failed',
      'the machine to fail',
    );
    const notifications = (await api.GET('/v1/notifications')).data;
    expect(notifications.find((n) => n.type === 'machine.failed')?.body).toContain('invalid_input: unsupported location for server type');
    expect(notifications.map((n) => n.type)).not.toContain('machine.provision_failed');
    expect((await api.GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId: cluster.id } } })).autoscaling.backoff_until).toBeNull();
  });

  it('protected (a code no retry fixes) fails the machine at once, its status message carrying Hetzner’s code and words', async () => {
    const user = await newUser(app.db, clock, 'pro');
    fake.refuseNext('post /servers', 'protected', 'the resource is protected');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-protected', { byom: true });
    await eventually(
      async () => {
        await settled();
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'failed',
      'the machine to fail',
    );
    const notifications = (await api.GET('/v1/notifications')).data;
    expect(notifications.find((n) => n.type === 'machine.failed')?.body).toContain('protected: the resource is protected');
    expect(notifications.map((n) => n.type)).not.toContain('machine.provision_failed');
    expect((await api.GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId: cluster.id } } })).autoscaling.backoff_until).toBeNull();
    expect(fake.requests.filter((r) => r.method === 'POST' && r.path === '/servers' && r.status === 423)).toHaveLength(1);
  });

  it('offers, chooses and checks server types by what Hetzner sells in the config’s region', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
    const { clusterId } = await seedSampleResources(app.db, clock, user, 'hz-per-region');
    const config = (region: string, machine_type_filter: string) =>
      api.POST('/v1/compute/configs', {
        body: {
          name: `cfg-${region}-${machine_type_filter}`,
          provider: 'hcloud',
          provider_config: { provider: 'hcloud', region, image: 'ubuntu-24.04', machine_type_filter },
        },
      });
    // Hetzner lists cax41 in fsn1 and hel1 only, and has none in hel1 now.
    const arm = await apiError(config('nbg1', 'cax*'));
    expect(arm).toMatchObject({
      status: 422,
      param: 'provider_config.machine_type_filter',
      message: 'No server type matching cax* is on sale in region nbg1.',
    });
    expect((await apiError(config('hel1', 'cax*'))).message).toBe('No server type matching cax* is on sale in region hel1.');
    expect((await config('fsn1', 'cax*')).provider_config.region).toBe('fsn1');
    // cpx31 is deprecated in nbg1: a new machine there is not given it.
    const nuremberg = await config('nbg1', 'c*');
    const deprecated = await apiError(
      api.POST('/v1/compute/machines', { body: { cluster_id: clusterId, compute_config_id: nuremberg.id, server_type: 'cpx31' } }),
    );
    expect(deprecated).toMatchObject({
      status: 422,
      param: 'server_type',
      message: 'Server type cpx31 is not on sale in region nbg1 (unavailable or deprecated there).',
    });
  });

  it('a BYOM machine is created, suspended to a snapshot and resumed from it with the credential’s token, in its own project', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine, credential } = await machineOnNewCluster(user, 'hz-byom', { byom: true });
    const until = (status: string) => machineWhen(machine.provider_id, (m) => m.status === status, `the machine to be ${status}`, 5);
    const ready = await until('ready');
    const label = labelValue(machine.provider_id);
    expect(
      fake
        .servers(BYOM_TOKEN)
        .filter((s) => s.labels.machine === label)
        .map((s) => String(s.id)),
    ).toEqual([ready.server_id]);
    expect(fake.servers(PLATFORM).filter((s) => s.labels.machine === label)).toEqual([]);
    // Every request about this machine's server went with the BYOM token.
    const aboutServer = fake.requests.filter((r) => r.path.startsWith(`/servers/${ready.server_id}`));
    expect(aboutServer.length).toBeGreaterThan(0);
    expect(new Set(aboutServer.map((r) => r.authorization))).toEqual(new Set([`Bearer ${BYOM_TOKEN}`]));

    const suspension = await api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } });
    const read = () => api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } });
    const suspended = await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return read();
      },
      (s) => s.status === 'suspended',
      'suspended',
    );
    expect(suspended.snapshot_id).toMatch(/^[0-9]+$/);
    const snapshot = fake.images(BYOM_TOKEN).find((i) => String(i.id) === suspended.snapshot_id);
    expect(snapshot).toMatchObject({ type: 'snapshot', status: 'available', created_from: { id: Number(ready.server_id) } });
    expect(fake.servers(BYOM_TOKEN).filter((s) => s.labels.machine === label)).toEqual([]);

    await api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: suspension.id } } });
    await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return read();
      },
      (s) => s.status === 'resumed',
      'resumed',
    );
    const resumed = await machineRow(machine.provider_id);
    const live = fake.servers(BYOM_TOKEN).filter((s) => s.labels.machine === label);
    expect(live.map((s) => String(s.id))).toEqual([resumed.server_id]);
    // Restored from the snapshot, in the machine's location; the snapshot is gone.
    expect(live[0]).toMatchObject({ image: { id: Number(suspended.snapshot_id), type: 'snapshot' }, location: { name: 'nbg1' }, status: 'running' });
    expect(fake.images(BYOM_TOKEN).some((i) => String(i.id) === suspended.snapshot_id)).toBe(false);
    expect(fake.requests.filter((r) => r.authorization === `Bearer ${PLATFORM}` && r.path.includes(String(resumed.server_id)))).toEqual([]);
    const used = await app.db.selectFrom('cloud_credentials').select('last_used_at').where('id', '=', credential!.id).executeTakeFirstOrThrow();
    expect(used.last_used_at).not.toBeNull();
  });

  it('a snapshot that ends unavailable fails the suspension, deletes the snapshot, and powers the kept server on again: the machine is ready', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine } = await machineOnNewCluster(user, 'hz-snapfail', { byom: true });
    const ready = await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready', 5);
    fake.failNextAction('create_image', 'image_failed');
    const suspension = await api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } });
    const failed = await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } });
      },
      (s) => s.status === 'failed',
      'the suspension to fail',
    );
    const notice = (await api.GET('/v1/notifications')).data.find((n) => n.type === 'suspension.failed' && n.resource_id === suspension.id);
    expect(notice?.body).toContain(`could not make snapshot ${failed.snapshot_id} (its status is unavailable)`);
    expect(notice?.body).toContain(`Its server ${ready.server_id} was powered on again`);
    expect(fake.images(BYOM_TOKEN).filter((i) => i.labels.machine === labelValue(machine.provider_id))).toEqual([]);
    expect(fake.servers(BYOM_TOKEN).map((s) => String(s.id))).toContain(ready.server_id);
    // It was shut down for the snapshot; `ready` means it runs again.
    const server = () => fake.servers(BYOM_TOKEN).find((s) => String(s.id) === ready.server_id);
    expect(fake.requests.some((r) => r.method === 'POST' && r.path === `/servers/${ready.server_id}/actions/poweron`)).toBe(true);
    expect(server()?.status).not.toBe('off');
    await expect
      .poll(async () => (await app.runtime.provider.getServer(ready.server_id!, { id: 'direct', token: BYOM_TOKEN }))?.status, { timeout: 3000 })
      .toBe('running');
    const row = await machineRow(machine.provider_id);
    expect(row).toMatchObject({ server_id: ready.server_id, status: 'ready' });
  });

  it('a failed suspension whose server cannot be powered on again leaves the machine failed, saying why', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine } = await machineOnNewCluster(user, 'hz-poweronfail', { byom: true });
    const ready = await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready', 5);
    fake.failNextAction('create_image', 'image_failed');
    fake.refuseNext('post /servers/{id}/actions/poweron', 'server_error', 'cannot power on now');
    const suspension = await api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } });
    await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } });
      },
      (s) => s.status === 'failed',
      'the suspension to fail',
    );
    const notice = (await api.GET('/v1/notifications')).data.find((n) => n.type === 'suspension.failed' && n.resource_id === suspension.id);
    expect(notice?.severity).toBe('critical');
    expect(notice?.body).toContain(`Its server ${ready.server_id} could not be powered on again`);
    expect(notice?.body).toContain('cannot power on now');
    expect(fake.servers(BYOM_TOKEN).find((s) => String(s.id) === ready.server_id)?.status).toBe('off');
    expect((await machineRow(machine.provider_id)).status).toBe('failed');
  });

  it('a delete meeting 423 locked is retried until the server is gone; past the bound the machine stays deleting, with a notification', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const untilReady = async (machine: { provider_id: string }) => machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready', 5);
    const { api, machine } = await machineOnNewCluster(user, 'hz-locked', { byom: true });
    const ready = await untilReady(machine);
    // Another Action holds the server for 100 s of the test clock, which the deletion's retries wait on: meanwhile
    // Hetzner answers the delete with 423 (at 0, 2, 6, 14, 30, 60 and 90 s), then it is free.
    const release = fake.occupy(BYOM_TOKEN, Number(ready.server_id), 60_000);
    await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    const deleted = clock.now();
    const row = () => app.db.selectFrom('machines').select('status').where('provider_id', '=', machine.provider_id).executeTakeFirst();
    await eventually(
      async () => {
        await settled();
        if (clock.now() - deleted >= 100) release();
        clock.advance(2);
        return row();
      },
      (m) => m === undefined,
      'the machine to be deleted',
      20_000,
    );
    const deletes = fake.requests.filter((r) => r.method === 'DELETE' && r.path === `/servers/${ready.server_id}`).map((r) => r.status);
    expect(deletes.filter((status) => status === 423).length).toBeGreaterThanOrEqual(5); // more than the default five tries
    expect(deletes.at(-1)).toBe(200);
    expect(fake.servers(BYOM_TOKEN).map((s) => String(s.id))).not.toContain(ready.server_id);

    // Locked for longer than the bound: the deletion gives up, says so, and the machine stays deleting.
    const { machine: stuck } = await machineOnNewCluster(user, 'hz-stuck', { byom: true });
    const stuckReady = await untilReady(stuck);
    fake.occupy(BYOM_TOKEN, Number(stuckReady.server_id), 60_000);
    await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: stuck.provider_id } } });
    const notice = await eventually(
      async () => {
        await settled();
        // Minutes at a time: the bound is 15 minutes of the clock, however many tries fit in them.
        clock.advance(120);
        return (await api.GET('/v1/notifications')).data.find((n) => n.type === 'machine.failed' && n.resource_id === stuck.provider_id);
      },
      (n) => n !== undefined,
      'the deletion to give up',
      20_000,
    );
    expect(notice?.title).toBe(`Deleting ${stuckReady.node_name} failed`);
    expect(notice?.body).toContain('locked');
    expect(notice?.body).toContain('still locked 15 minutes later');
    expect((await machineRow(stuck.provider_id)).status).toBe('deleting');
  }, 60_000);

  it('a delete-protected server (protected) fails the deletion at once with Hetzner’s words; the machine stays deleting', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine } = await machineOnNewCluster(user, 'hz-protect-del', { byom: true });
    const ready = await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready', 5);
    fake.mutateServer(BYOM_TOKEN, Number(ready.server_id), (server) => {
      server.protection.delete = true;
    });
    await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    const notice = await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return (await api.GET('/v1/notifications')).data.find((n) => n.type === 'machine.failed' && n.resource_id === machine.provider_id);
      },
      (n) => n !== undefined,
      'the deletion to fail',
    );
    expect(notice?.body).toContain(`protected: server ${ready.server_id} has delete protection enabled`);
    // Refused once, not retried.
    expect(fake.requests.filter((r) => r.method === 'DELETE' && r.path === `/servers/${ready.server_id}`).map((r) => r.status)).toEqual([423]);
    expect((await machineRow(machine.provider_id)).status).toBe('deleting');
  });

  it('a failed creation backs the cluster off and tells the workspace; after the backoff the machine is created anew', async () => {
    const user = await newUser(app.db, clock, 'pro');
    // An Action failing with a code that is no refusal (not resource_unavailable: that one is final) is retried.
    fake.failNextAction('create_server', 'action_failed');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-backoff', { byom: true });
    const status = () => api.GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId: cluster.id } } });
    const backoff = await eventually(
      async () => {
        await settled();
        return status();
      },
      (s) => s.autoscaling.state === 'backoff',
      'a backoff',
    );
    expect(backoff.autoscaling.backoff_until).toBeGreaterThan(clock.now());
    const notice = (await api.GET('/v1/notifications')).data.find((n) => n.type === 'machine.provision_failed');
    expect(notice?.body).toContain('action_failed');
    expect((await machineRow(machine.provider_id)).status).toBe('queued');
    clock.advance(backoff.autoscaling.backoff_until! - clock.now() + 1);
    const ready = await machineWhen(machine.provider_id, (m) => m.status === 'ready', 'the machine to be ready');
    const label = labelValue(machine.provider_id);
    expect(
      fake
        .servers(BYOM_TOKEN)
        .filter((s) => s.labels.machine === label)
        .map((s) => String(s.id)),
    ).toEqual([ready.server_id]);
    expect((await status()).autoscaling.backoff_until).toBeNull();
  });

  it('never has more than the plan’s provisioning limit at once on Hetzner, and creates each server once', async () => {
    const user = await newUser(app.db, clock, 'free');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-slots', { byom: true });
    const config = await app.db.selectFrom('machines').select('compute_config_id').where('provider_id', '=', machine.provider_id).executeTakeFirstOrThrow();
    const more = [];
    for (let i = 0; i < 2; i++)
      more.push(await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.compute_config_id } }));
    const ids = [machine.provider_id, ...more.map((m) => m.provider_id)];
    const labels = new Set(ids.map(labelValue));
    // A free cluster provisions one machine at a time: each creation finds the earlier machines' servers running.
    const inFlightAtCreation: number[] = [];
    fake.onCreate = (token, servers) => {
      if (token === BYOM_TOKEN) inFlightAtCreation.push(servers.filter((s) => labels.has(s.labels.machine!) && s.status !== 'running').length);
    };
    try {
      await eventually(
        async () => {
          await settled();
          clock.advance(2);
          return app.db.selectFrom('machines').select('status').where('provider_id', 'in', ids).execute();
        },
        (rows) => rows.every((r) => r.status === 'ready'),
        'every machine to be ready',
        40_000,
      );
    } finally {
      fake.onCreate = undefined;
    }
    expect(inFlightAtCreation.length).toBeGreaterThanOrEqual(2); // the first may have been created before the hook
    expect(inFlightAtCreation.every((n) => n === 0)).toBe(true);
    for (const id of ids) expect(fake.servers(BYOM_TOKEN).filter((s) => s.labels.machine === labelValue(id))).toHaveLength(1);
  }, 60_000);
});
