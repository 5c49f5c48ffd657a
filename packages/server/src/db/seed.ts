// The demo data a first start on an empty database gets: a user with a workspace, one of each resource, and a
// token to try them with. Every row goes through the module that owns its table (test/table-owners.test.ts): users,
// workspaces and tokens as any are made, the sample resources as they are, without a creation's rules (a running
// cluster at once, no workflow). createUser (resources/users.ts) is re-exported for the tests and scripts that make
// users.
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.ts';
import { newId } from '../ids.ts';
import type { ClusterDriver, ComputeProvider } from '../providers/types.ts';
import { clusterById, seedClusters } from '../resources/clusters.ts';
import { seedComputeConfigs } from '../resources/compute-configs.ts';
import { releaseForNewCluster } from '../resources/kaas-versions.ts';
import { machineById, seedMachines, setMachineState } from '../resources/machines.ts';
import { seedNotifications } from '../resources/notifications.ts';
import { seedProducts } from '../resources/products.ts';
import { recordSnapshot, seedSuspensions } from '../resources/suspensions.ts';
import { anyUser, createUser } from '../resources/users.ts';
import type { Database } from './schema.ts';

/**
 * The demo product's chart, one that runs on a real cluster as it is (and the one `pnpm smoke` installs): podinfo
 * 6.7.1 from its Helm repository, published there (its index.yaml on the repository's gh-pages branch lists
 * https://stefanprodan.github.io/podinfo/podinfo-6.7.1.tgz, created 2024-10-08), whose image is where its values say
 * (`ghcr.io/stefanprodan/podinfo:6.7.1`, charts/podinfo/values.yaml at tag 6.7.1) and whose Service is a ClusterIP,
 * so it is healthy with or without a load balancer.
 */
const DEMO_CHART = { repo_url: 'https://stefanprodan.github.io/podinfo', target_revision: '6.7.1', chart: 'podinfo' };

export { createUser };

export interface SampleResources {
  clusterId: string;
  configId: string;
  /** A ready machine. */
  providerId: string;
  /** A suspended machine, with `suspensionId`. */
  suspendedId: string;
  suspensionId: string;
  productId: string;
  sourceId: string;
  notificationId: string;
}

/**
 * One of each resource in a workspace: a running cluster with a compute config, a ready machine, a suspended
 * machine and its suspension, a product with one source, and an unread notification for the user. The demo
 * seed and the tests share it.
 */
export async function seedSampleResources(
  db: Kysely<Database>,
  clock: Clock,
  owner: { userId: string; workspaceId: string },
  clusterName = 'demo-eu',
): Promise<SampleResources> {
  const now = clock.now();
  const ids: SampleResources = {
    clusterId: newId('cl'),
    configId: newId('cc'),
    providerId: `compute://${newId('mch')}`,
    suspendedId: `compute://${newId('mch')}`,
    suspensionId: newId('sus'),
    productId: newId('prd'),
    sourceId: newId('src'),
    notificationId: newId('ntf'),
  };
  const workspaceId = owner.workspaceId;
  const kaasVersion = 'v1.31';
  const kaasRelease = await releaseForNewCluster(db, kaasVersion);
  const machine = (providerId: string, node: string, status: 'ready' | 'suspended', createdAt: number) =>
    ({
      provider_id: providerId,
      cluster_id: ids.clusterId,
      compute_config_id: ids.configId,
      node_name: node,
      status,
      byom: false,
      server_type: 'cx22',
      cpu: 2,
      memory_bytes: 4 * 1024 ** 3,
      created_at: createdAt,
    }) as const;
  await db.transaction().execute(async (trx) => {
    await seedClusters(trx, [
      {
        id: ids.clusterId,
        workspace_id: workspaceId,
        name: clusterName,
        region_id: 'fsn1',
        kaas_version: kaasVersion,
        kaas_release: kaasRelease,
        status: 'RUNNING',
        status_message: null,
        created_at: now,
      },
    ]);
    await seedComputeConfigs(trx, [
      {
        id: ids.configId,
        workspace_id: workspaceId,
        name: 'general-purpose',
        provider: 'hcloud',
        provider_config: JSON.stringify({ provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' }),
        cloud_credential_id: null,
        created_at: now,
      },
    ]);
    await seedMachines(trx, [
      machine(ids.providerId, `${clusterName}-worker-1`, 'ready', now),
      machine(ids.suspendedId, `${clusterName}-worker-2`, 'suspended', now + 1),
    ]);
    await seedSuspensions(trx, [
      {
        id: ids.suspensionId,
        workspace_id: workspaceId,
        cluster_id: ids.clusterId,
        provider_id: ids.suspendedId,
        node_name: `${clusterName}-worker-2`,
        reason: 'manual',
        status: 'suspended',
        snapshot_id: `snap_${ids.suspensionId.slice(4)}`,
        created_at: now,
        expires_at: now + 30 * 24 * 3600,
      },
    ]);
    await seedProducts(trx, [
      {
        id: ids.productId,
        workspace_id: workspaceId,
        name: 'Podinfo',
        template_id: newId('tpl'),
        sources: JSON.stringify([
          {
            id: ids.sourceId,
            chart: DEMO_CHART,
            values: { replicaCount: 1 },
            metadata: {},
          },
        ]),
        cluster_ids: JSON.stringify([ids.clusterId]),
        stripe_price_ids: JSON.stringify([]),
        settings: JSON.stringify({}),
        regeneration_status: 'succeeded',
        created_at: now,
        updated_at: now,
      },
    ]);
    await seedNotifications(trx, [
      {
        id: ids.notificationId,
        user_id: owner.userId,
        workspace_id: owner.workspaceId,
        type: 'cluster.running',
        resource_type: 'cluster',
        resource_id: ids.clusterId,
        title: `Cluster ${clusterName} is running`,
        body: 'Your cluster is ready for installs.',
        severity: 'info',
        read_at: null,
        created_at: now,
      },
    ]);
  });
  return ids;
}

export const DEMO_EMAIL = 'demo@platform.example';

/**
 * Seeds the demo user when the database has no user yet; returns its token, or undefined when not empty.
 * The demo's machines have what such machines have at the cloud provider and in their cluster, so suspending,
 * resuming and deleting them work as for any other: the ready one its server, and on the simulated cloud
 * (`simulatedCloud`) the suspended one its snapshot. At a real provider that snapshot would cost a server made and
 * deleted at every first start, and minutes of waiting: there the suspended one's snapshot id names nothing, and
 * resuming it fails (suspend the ready one to try a resume).
 */
export async function seedDemo(
  db: Kysely<Database>,
  clock: Clock,
  { provider, driver, simulatedCloud }: { provider: ComputeProvider; driver: ClusterDriver; simulatedCloud: boolean },
  progress: (line: string) => void = () => {},
): Promise<string | undefined> {
  if (await anyUser(db)) return undefined;
  progress('Seeding the demo user and sample resources…');
  const user = await createUser(db, clock, DEMO_EMAIL, 'pro');
  const sample = await seedSampleResources(db, clock, user);
  const ready = await serverFor(db, { provider, driver }, sample.providerId);
  await setMachineState(db, sample.providerId, { server_id: ready.id });
  if (!simulatedCloud) return user.token;
  // Suspended as the suspend workflow does: its server snapshotted, then deleted (the simulation allows the delete
  // before the snapshot is available).
  const suspended = await serverFor(db, { provider, driver }, sample.suspendedId);
  const snapshot = await provider.createSnapshot(suspended.id, { workflow: `seed-snapshot:${sample.suspendedId}`, machine: sample.suspendedId });
  await provider.deleteServer(suspended.id);
  await recordSnapshot(db, sample.suspensionId, snapshot.id);
  return user.token;
}

/** A server for a seeded machine, its node joined to the machine's cluster as a provisioned machine's is. */
async function serverFor(db: Kysely<Database>, { provider, driver }: { provider: ComputeProvider; driver: ClusterDriver }, providerId: string) {
  const machine = await machineById(db, providerId);
  if (!machine) throw new Error(`seeded machine ${providerId} is missing`);
  const cluster = await clusterById(db, machine.cluster_id);
  if (!cluster) throw new Error(`seeded cluster ${machine.cluster_id} is missing`);
  // A real cluster driver has no control plane for the demo's cluster (it exists only in this database): no join then.
  const join = await driver
    .joinMachine({
      cluster_id: machine.cluster_id,
      machine_id: machine.provider_id,
      node_name: machine.node_name,
      kubernetes_release: cluster.kaas_release,
      token_ttl_seconds: 600,
    })
    .catch(() => undefined);
  return provider.createServer({
    name: machine.node_name,
    server_type: machine.server_type,
    location: 'fsn1',
    image: 'ubuntu-24.04',
    labels: { workflow: `seed:${providerId}`, machine: providerId },
    ...(join ? { user_data: join.user_data } : {}),
  });
}
