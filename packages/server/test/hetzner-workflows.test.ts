// The provision workflow with COMPUTE_PROVIDER=hetzner, end to end through the API, against the stateful
// fake of Hetzner Cloud's API (validated against the committed extract). Clusters stay simulated.
import { createPlatformClient } from '@platform/client';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { leftoversReconciler } from '../src/jobs/leftovers.ts';
import { HetznerCompute, labelValue } from '../src/providers/hetzner/compute.ts';
import { tokenRateLimit } from '../src/providers/hetzner/rate-limit.ts';
import { secretBox } from '../src/services/secrets.ts';
import { runningCluster } from './fixtures.ts';
import { type HetznerFake, startHetznerFake } from './support/hetzner-fake.ts';
import { eventually, newUser, type TestUser, useTestServer, workersSettled } from './support.ts';

const PLATFORM = 'platform-token-wf-81b2';
const BYOM_TOKEN = 'byom-token-wf-4c07';
const MANAGED_BY = 'platform-wf-test';
let fake: HetznerFake;
// Registered first: the fake is up when the runtime is configured, and outlives it.
beforeAll(async () => {
  fake = await startHetznerFake({ requestsPerHour: 3_600_000, actionMs: 30, startingMs: 30 });
  // Hetzner's default bucket for the platform token in the fake: one more request a second once spent.
  fake.addToken(PLATFORM, 3600);
  fake.addToken(BYOM_TOKEN);
});
afterAll(async () => {
  await fake?.close();
});

const app = useTestServer({
  env: () => ({
    COMPUTE_PROVIDER: 'hetzner',
    HCLOUD_TOKEN: PLATFORM,
    HCLOUD_ENDPOINT: fake.url,
    HCLOUD_MANAGED_BY: MANAGED_BY,
    HCLOUD_REQUESTS_PER_HOUR: '3600000',
    PROVIDER_RATE_LIMIT: '1000',
    SIM_CONTROL_PLANE_SECONDS: '30',
  }),
  runtime: { tickMs: 20, orphanAfterSeconds: 1 },
});
const { clock } = app;

afterEach(() => {
  expect(fake.violations).toEqual([]);
});

const client = (user: TestUser) => createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });

const settled = () => workersSettled(app.db, clock);

async function machineOnNewCluster(user: TestUser, name: string, options: { byom?: boolean } = {}) {
  const api = client(user);
  const credential = options.byom
    ? await api.POST('/v1/compute/cloud_credentials', { body: { name: `own-${name}`, provider: 'hcloud', secret: BYOM_TOKEN } })
    : undefined;
  const cluster = await runningCluster(app, user, name);
  const config = await api.POST('/v1/compute/configs', {
    body: {
      name: `cfg-${name}`,
      provider: 'hcloud',
      provider_config: { provider: 'hcloud', region: 'nbg1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
      ...(credential ? { cloud_credential_id: credential.id } : {}),
    },
  });
  const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
  return { api, cluster, machine, credential };
}

const machineRow = (providerId: string) => app.db.selectFrom('machines').selectAll().where('provider_id', '=', providerId).executeTakeFirstOrThrow();

describe('provisioning on Hetzner Cloud', () => {
  it('creates a server labelled with the workflow, reaches ready, and the drift check reads the live server', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine } = await machineOnNewCluster(user, 'hz-ready');
    const ready = await eventually(
      async () => {
        await settled();
        clock.advance(2);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'ready',
      'the machine to be ready',
    );
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

  it('a spent rate limit (429) makes provisioning wait, not fail', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-429');
    fake.exhaust(PLATFORM);
    await eventually(
      async () => {
        await settled();
        clock.advance(2);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'ready',
      'the machine to be ready',
    );
    expect(fake.requests.some((r) => r.status === 429)).toBe(true);
    const notifications = await api.GET('/v1/notifications');
    expect(notifications.data.map((n) => n.type)).not.toContain('machine.provision_failed');
    expect((await api.GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId: cluster.id } } })).autoscaling.backoff_until).toBeNull();
  });

  it('a refused platform token fails the machine at once, with a notification naming the credential', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine } = await machineOnNewCluster(user, 'hz-401');
    fake.revoke(PLATFORM);
    const failed = await eventually(
      async () => {
        await settled();
        clock.advance(2);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'failed',
      'the machine to fail',
    );
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
    const failed = await eventually(
      async () => {
        await settled();
        clock.advance(2);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'failed',
      'the machine to fail',
    );
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

  it('a BYOM machine is created, suspended to a snapshot and resumed from it with the credential’s token, in its own project', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine, credential } = await machineOnNewCluster(user, 'hz-byom', { byom: true });
    const until = (status: string) =>
      eventually(
        async () => {
          await settled();
          clock.advance(5);
          return machineRow(machine.provider_id);
        },
        (m) => m.status === status,
        `the machine to be ${status}`,
      );
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
    const ready = await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'ready',
      'the machine to be ready',
    );
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
    const ready = await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'ready',
      'the machine to be ready',
    );
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
    const untilReady = async (machine: { provider_id: string }) =>
      eventually(
        async () => {
          await settled();
          clock.advance(5);
          return machineRow(machine.provider_id);
        },
        (m) => m.status === 'ready',
        'the machine to be ready',
      );
    const { api, machine } = await machineOnNewCluster(user, 'hz-locked', { byom: true });
    const ready = await untilReady(machine);
    // Another Action holds the server for 3 s (real time): meanwhile Hetzner answers the delete with 423.
    fake.occupy(BYOM_TOKEN, Number(ready.server_id), 3000);
    await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    const row = () => app.db.selectFrom('machines').select('status').where('provider_id', '=', machine.provider_id).executeTakeFirst();
    await eventually(
      async () => {
        await settled();
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
        clock.advance(30);
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
    const ready = await eventually(
      async () => {
        await settled();
        clock.advance(2);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'ready',
      'the machine to be ready',
    );
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

describe('leftovers at Hetzner', () => {
  it('deletes a server and a snapshot labelled as ours with nothing behind them after the grace period, not before, and not in dry run', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { machine } = await machineOnNewCluster(user, 'hz-leftovers', { byom: true });
    const ready = await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'ready',
      'the machine to be ready',
    );
    // A server (and its snapshot) made for a machine that was deleted while the creation was in flight.
    const hetzner = new HetznerCompute({
      endpoint: fake.url,
      token: undefined,
      managedBy: MANAGED_BY,
      rateLimit: tokenRateLimit(app.db, 3_600_000),
      actionPollMs: 10,
    });
    const byom = { id: 'ccr_direct', token: BYOM_TOKEN };
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
    await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'ready',
      'the machine to be ready',
    );
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

  it('a deleted cluster’s firewall is deleted after its servers: refused while a leftover server still has it, gone once that server is', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, cluster, machine } = await machineOnNewCluster(user, 'hz-firewall', { byom: true });
    const ready = await eventually(
      async () => {
        await settled();
        clock.advance(5);
        return machineRow(machine.provider_id);
      },
      (m) => m.status === 'ready',
      'the machine to be ready',
    );
    const firewall = fake.firewalls(BYOM_TOKEN).find((f) => f.labels?.cluster === labelValue(cluster.id))!;
    expect(firewall.labels?.['managed-by']).toBe(MANAGED_BY);
    // A server of the cluster whose machine was lost in a crash: it has the firewall too.
    const hetzner = new HetznerCompute({
      endpoint: fake.url,
      token: undefined,
      managedBy: MANAGED_BY,
      rateLimit: tokenRateLimit(app.db, 3_600_000),
      actionPollMs: 10,
    });
    const byom = { id: 'ccr_direct', token: BYOM_TOKEN };
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
