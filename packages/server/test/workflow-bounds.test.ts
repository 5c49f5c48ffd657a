// Every wait on something outside has a bound. Each workflow kind runs against a cloud that never finishes what it
// was asked — servers stay initializing (so nodes are never Ready), control planes provisioning, releases pending,
// snapshots creating — while the test moves the clock on; each must end (failed, or remediated) within the
// horizon, and every step it waited in must have a deadline or name what bounds it (`boundedElsewhere`).
import { createPlatformClient } from '@platform/client';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import type { WorkflowKind } from '../src/db/schema.ts';
import { workflowDefinitions } from '../src/workflows/index.ts';
import { atChartVersion } from './fixtures.ts';
import { eventually, newUser, SIMULATED_WORKFLOWS_ENV, type TestUser, useTestServer, workersSettled } from './support.ts';

// A regeneration waits for its releases here as it does with the Kubernetes driver (the simulation's does not).
const ENV = { ...SIMULATED_WORKFLOWS_ENV, REGENERATION_WAITS: 'true' };
const app = useTestServer({ env: ENV, runtime: { tickMs: 20 } });
const { clock } = app;
const definitions = workflowDefinitions(loadConfig(ENV).deadlines);
/** Longer than any default deadline (the longest, a cluster's, 900 s) with its retries and backoffs. */
const HORIZON_SECONDS = 3 * 3600;
/** How far the clock moves between looks: a step's waits are seconds, its deadline minutes. */
const STEP_SECONDS = 60;
const NEVER = 10 ** 9;

// Hundreds of steps a walk, in the second tier beside processes and browsers: the workers get up to 45 s (real time)
// to catch up with each move of the clock (15 s once ran out in a CI run at load 5).
const settled = () => workersSettled(app.db, clock, 45_000);
const client = (user: TestUser) => createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });

/** From now on, what the simulated cloud is asked to do never finishes. */
function cloudNeverFinishes(): () => void {
  const { options } = app.runtime.cloud;
  const before = { ...options };
  Object.assign(options, { bootSeconds: NEVER, controlPlaneSeconds: NEVER, releaseSeconds: NEVER, snapshotSeconds: NEVER });
  return () => Object.assign(options, before);
}

/** Runs the newest workflow of `kind` to its end, moving the clock on; checks it ends and that each wait is bounded. */
async function walk(kind: WorkflowKind): Promise<void> {
  const { id } = await app.db
    .selectFrom('workflows')
    .select('id')
    .where('kind', '=', kind)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  const definition = definitions[kind];
  const waitedIn = new Set<string>();
  const started = clock.now();
  let row = await app.db.selectFrom('workflows').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  while (clock.now() - started <= HORIZON_SECONDS) {
    await settled();
    row = await app.db.selectFrom('workflows').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    if (row.status === 'succeeded' || row.status === 'failed') break;
    const waiting = (row.state.waiting as { step?: string } | undefined)?.step;
    if (waiting) waitedIn.add(waiting);
    clock.advance(STEP_SECONDS);
  }
  const unbounded = [...waitedIn].filter((step) => !definition.deadlines?.[step] && !definition.boundedElsewhere?.[step]);
  expect(unbounded, `${kind}: steps that waited with neither a deadline nor a reason they are bounded elsewhere`).toEqual([]);
  expect(row.status, `${kind} is still ${row.status} in step ${row.step} after ${HORIZON_SECONDS} s`).toMatch(/^(succeeded|failed)$/);
}

async function runningCluster(user: TestUser) {
  const api = client(user);
  const cluster = await api.POST('/v1/clusters', { body: { name: `c-${Math.random().toString(36).slice(2, 8)}`, region_id: 'fsn1' } });
  await settled();
  clock.advance(30);
  return eventually(
    () => api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } }),
    (c) => c.kaas.status === 'RUNNING',
    'the cluster to run',
  );
}

async function machineConfig(user: TestUser) {
  return client(user).POST('/v1/compute/configs', {
    body: { name: 'plain', provider: 'hcloud', provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' } },
  });
}

async function readyMachine(user: TestUser) {
  const api = client(user);
  const cluster = await runningCluster(user);
  const config = await machineConfig(user);
  const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
  await settled();
  clock.advance(20);
  await eventually(
    () => api.GET('/v1/compute/machines', { params: { query: { cluster_id: cluster.id } } }),
    (m) => m[0]?.status === 'ready',
    'the machine to be ready',
  );
  return machine;
}

async function runningInstall(user: TestUser) {
  const api = client(user);
  const cluster = await runningCluster(user);
  const product = await api.POST('/v1/products', {
    body: {
      name: 'Shop',
      cluster_ids: [cluster.id],
      sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' }, values: { replicaCount: 1 } }],
    },
  });
  const install = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
  const read = () => api.GET('/v1/installs/{id}', { params: { path: { id: install.id } } });
  await eventually(read, (i) => i.status === 'installing', 'installing');
  await whenRunning(read, 'running');
  return { product, install, read };
}

/**
 * Reads the install until it runs, moving the clock on each look, not once: a step scheduled after the workers
 * looked settled (a workflow between two steps) is reached by the next move instead of waiting for ever.
 */
const whenRunning = (read: () => Promise<{ status: string }>, what: string) =>
  eventually(
    async () => {
      await settled();
      clock.advance(8);
      return read();
    },
    (i) => i.status === 'running',
    what,
  );

describe('every workflow kind ends against a cloud that never finishes', () => {
  it('covers every kind', () => {
    const walked: WorkflowKind[] = [
      'createCluster',
      'requestMachine',
      'deleteMachine',
      'suspendMachine',
      'resumeSuspension',
      'createInstall',
      'updateInstall',
      'rollbackInstall',
      'regenerateProduct',
      'deleteInstall',
    ];
    expect(Object.keys(definitions).sort()).toEqual([...walked].sort());
  });

  it('createCluster: the control plane stays provisioning', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const restore = cloudNeverFinishes();
    try {
      await client(user).POST('/v1/clusters', { body: { name: 'never-up', region_id: 'fsn1' } });
      await walk('createCluster');
    } finally {
      restore();
    }
  });

  it('requestMachine: the server stays initializing, its node never Ready', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const cluster = await runningCluster(user);
    const config = await machineConfig(user);
    const restore = cloudNeverFinishes();
    try {
      await client(user).POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      await walk('requestMachine');
    } finally {
      restore();
    }
  });

  it('deleteMachine: of a machine whose server never came up', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const cluster = await runningCluster(user);
    const config = await machineConfig(user);
    const restore = cloudNeverFinishes();
    try {
      const machine = await client(user).POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      await settled();
      await client(user).DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
      await walk('deleteMachine');
    } finally {
      restore();
    }
  });

  it('suspendMachine: the snapshot stays creating', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const machine = await readyMachine(user);
    const restore = cloudNeverFinishes();
    try {
      await client(user).POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } });
      await walk('suspendMachine');
    } finally {
      restore();
    }
    // The suspension failed: its server, shut down for the snapshot, runs again, so the machine is truthfully ready.
    const row = await app.db.selectFrom('machines').select(['status', 'server_id']).where('provider_id', '=', machine.provider_id).executeTakeFirstOrThrow();
    expect(row.status).toBe('ready');
    expect((await app.runtime.cloud.getServer(row.server_id!))?.status).toBe('running');
  });

  it('resumeSuspension: the new server stays initializing', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = client(user);
    const machine = await readyMachine(user);
    const suspension = await api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } });
    await settled();
    clock.advance(15);
    await eventually(
      () => api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } }),
      (s) => s.status === 'suspended',
      'suspended',
    );
    const restore = cloudNeverFinishes();
    try {
      await api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: suspension.id } } });
      await walk('resumeSuspension');
    } finally {
      restore();
    }
  });

  it('createInstall: the releases never sync', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = client(user);
    const cluster = await runningCluster(user);
    const product = await api.POST('/v1/products', {
      body: {
        name: 'Stuck',
        cluster_ids: [cluster.id],
        sources: [{ chart: { repo_url: 'https://charts.example.com', target_revision: '1.0.0', chart: 'web' } }],
      },
    });
    const restore = cloudNeverFinishes();
    try {
      await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
      await walk('createInstall');
    } finally {
      restore();
    }
  });

  it('updateInstall: the upgraded releases never sync', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { product, install } = await runningInstall(user);
    const restore = cloudNeverFinishes();
    try {
      await client(user).PATCH('/v1/installs/{id}', {
        params: { path: { id: install.id } },
        body: { overrides: [{ template_helm_source_id: product.sources[0]!.id, values: { replicaCount: 3 } }] },
      });
      await walk('updateInstall');
    } finally {
      restore();
    }
  });

  it('rollbackInstall: the rolled-back releases never sync', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = client(user);
    const { product, install, read } = await runningInstall(user);
    await api.PATCH('/v1/installs/{id}', {
      params: { path: { id: install.id } },
      body: { overrides: [{ template_helm_source_id: product.sources[0]!.id, values: { replicaCount: 3 } }] },
    });
    await whenRunning(read, 'the update to run');
    const restore = cloudNeverFinishes();
    try {
      await api.POST('/v1/installs/{id}/rollback', { params: { path: { id: install.id } }, body: { revision: 1 } });
      await walk('rollbackInstall');
    } finally {
      restore();
    }
  });

  it('regenerateProduct: the regenerated releases never sync', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { product } = await runningInstall(user);
    const restore = cloudNeverFinishes();
    try {
      await client(user).PATCH('/v1/products/{id}', {
        params: { path: { id: product.id } },
        body: atChartVersion(product, '19.7.0'),
      });
      await walk('regenerateProduct');
      // The install whose releases never synced fails with the deadline's words; the regeneration says so.
      const install = await app.db.selectFrom('installs').select(['status', 'status_message']).where('product_id', '=', product.id).executeTakeFirstOrThrow();
      expect(install.status).toBe('failed');
      expect(install.status_message).toMatch(/^Release [a-z0-9-]+ was not deployed within \d+ s: it is still pending-upgrade$/);
      const after = await client(user).GET('/v1/products/{id}', { params: { path: { id: product.id } } });
      expect(after.regeneration_status).toBe('failed');
    } finally {
      restore();
    }
  });

  it('deleteInstall: of an install whose releases never synced', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { install } = await runningInstall(user);
    const restore = cloudNeverFinishes();
    try {
      await client(user).DELETE('/v1/installs/{id}', { params: { path: { id: install.id } } });
      await walk('deleteInstall');
    } finally {
      restore();
    }
  });
});
