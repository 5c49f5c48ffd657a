// A world of two users with one of each resource, for tests that walk the whole contract.
import type { Kysely } from 'kysely';
import type { Clock } from '../src/clock.ts';
import type { Database } from '../src/db/schema.ts';
import { newId } from '../src/ids.ts';
import { newUser, type TestUser } from './support.ts';

export interface World {
  alice: TestUser;
  bob: TestUser;
  /** Alice's resources, by the kind of id a path names. */
  ids: {
    cluster: string;
    computeConfig: string;
    machine: string;
    suspension: string;
    product: string;
    source: string;
    install: string;
    notification: string;
    cloudCredential: string;
    registryCredential: string;
    token: string;
  };
}

export async function buildWorld(db: Kysely<Database>, clock: Clock): Promise<World> {
  const alice = await newUser(db, clock, 'pro');
  const bob = await newUser(db, clock, 'pro');
  const now = clock.now();
  const ids = {
    cluster: newId('cl'),
    computeConfig: newId('cc'),
    machine: `compute://${newId('mch')}`,
    suspension: newId('sus'),
    product: newId('prd'),
    source: newId('src'),
    install: newId('ins'),
    notification: newId('ntf'),
    cloudCredential: newId('ccr'),
    registryCredential: newId('rc'),
    token: '',
  };
  const ws = alice.workspaceId;
  await db.insertInto('clusters').values({ id: ids.cluster, workspace_id: ws, name: 'c', region_id: 'fsn1', kaas_version: 'v1.31', status: 'RUNNING', status_message: null, created_at: now }).execute();
  await db
    .insertInto('compute_configs')
    .values({ id: ids.computeConfig, workspace_id: ws, name: 'gp', provider: 'hcloud', provider_config: JSON.stringify({ provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' }), cloud_credential_id: null, created_at: now })
    .execute();
  await db.insertInto('machines').values({ provider_id: ids.machine, cluster_id: ids.cluster, compute_config_id: ids.computeConfig, node_name: 'n', status: 'suspended', byom: false, server_type: 'cx22', cpu: 2, memory_bytes: 4 * 1024 ** 3, created_at: now }).execute();
  await db.insertInto('suspensions').values({ id: ids.suspension, workspace_id: ws, cluster_id: ids.cluster, provider_id: ids.machine, node_name: 'n', reason: 'manual', status: 'suspended', snapshot_id: 'snap', created_at: now, expires_at: null }).execute();
  await db
    .insertInto('products')
    .values({
      id: ids.product,
      workspace_id: ws,
      name: 'p',
      template_id: newId('tpl'),
      sources: JSON.stringify([{ id: ids.source, chart: { repo_url: 'https://charts.example.com', target_revision: '1', chart: 'p' }, values: {}, metadata: {} }]),
      cluster_ids: JSON.stringify([ids.cluster]),
      stripe_price_ids: JSON.stringify([]),
      settings: JSON.stringify({}),
      regeneration_status: 'succeeded',
      created_at: now,
      updated_at: now,
    })
    .execute();
  const workflow = newId('wf');
  await db.insertInto('workflows').values({ id: workflow, kind: 'install', subject_id: ids.install, status: 'pending', created_at: now, updated_at: now }).execute();
  await db
    .insertInto('installs')
    .values({ id: ids.install, workspace_id: ws, product_id: ids.product, region_id: 'fsn1', cluster_id: null, status: 'pending', workflow_id: workflow, overrides: JSON.stringify([]), status_message: null, created_at: now, updated_at: now })
    .execute();
  await db.insertInto('notifications').values({ id: ids.notification, user_id: alice.userId, type: 'cluster.ready', resource_type: 'cluster', resource_id: ids.cluster, title: 't', body: 'b', severity: 'info', read_at: null, created_at: now }).execute();
  await db.insertInto('cloud_credentials').values({ id: ids.cloudCredential, workspace_id: ws, name: 'cc', provider: 'hcloud', secret_ciphertext: Buffer.from('sealed'), created_at: now, last_used_at: null }).execute();
  await db.insertInto('registry_credentials').values({ id: ids.registryCredential, workspace_id: ws, name: 'rc', registry_url: 'ghcr.io', username: 'u', password_ciphertext: null, is_active: true, created_at: now, last_used_at: null }).execute();
  ids.token = (await db.selectFrom('tokens').select('id').where('user_id', '=', alice.userId).executeTakeFirstOrThrow()).id;
  return { alice, bob, ids };
}

/** Which of the world's ids a path parameter names, from the path it sits in. */
export function idFor(world: World, path: string, param: string): string | undefined {
  const { ids } = world;
  if (param === 'clusterId') return ids.cluster;
  if (param === 'providerId') return ids.machine;
  if (param === 'workspaceId') return world.alice.workspaceId;
  if (param === 'userId') return world.alice.userId;
  const byCollection: [RegExp, string][] = [
    [/^\/v1\/compute\/configs\/\{id\}/, ids.computeConfig],
    [/^\/v1\/compute\/suspensions\/\{id\}/, ids.suspension],
    [/^\/v1\/products\/\{id\}/, ids.product],
    [/^\/v1\/installs\/\{id\}/, ids.install],
    [/^\/v1\/notifications\/\{id\}/, ids.notification],
    [/^\/v1\/compute\/cloud_credentials\/\{id\}/, ids.cloudCredential],
    [/^\/v1\/registry\/credentials\/\{id\}/, ids.registryCredential],
    [/^\/v1\/user\/tokens\/\{id\}/, ids.token],
  ];
  return byCollection.find(([pattern]) => pattern.test(path))?.[1];
}
