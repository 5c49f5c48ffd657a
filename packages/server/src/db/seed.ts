// The demo data a first start on an empty database gets: a user with a workspace, a cluster, a compute
// config, a machine, a suspension, a product and a notification, and a token to try them with.
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.ts';
import { newId } from '../ids.ts';
import { createToken } from '../services/tokens.ts';
import type { Database, Plan } from './schema.ts';

export async function createUser(db: Kysely<Database>, clock: Clock, email: string, plan: Plan): Promise<{ userId: string; workspaceId: string; token: string }> {
  return db.transaction().execute(async (trx) => {
    const now = clock.now();
    const userId = newId('usr');
    const workspaceId = newId('ws');
    await trx.insertInto('users').values({ id: userId, email, plan, created_at: now }).execute();
    await trx.insertInto('workspaces').values({ id: workspaceId, name: `${email.split('@')[0]}'s workspace`, icon: null, owner_id: userId, created_at: now }).execute();
    await trx.insertInto('workspace_members').values({ workspace_id: workspaceId, user_id: userId, role: 'owner', created_at: now }).execute();
    const { secret } = await createToken(trx, clock, { userId, kind: 'pat', name: 'initial', expiresAt: null });
    return { userId, workspaceId, token: secret };
  });
}

/** Seeds the demo user when the database has no user yet; returns its token, or undefined when not empty. */
export async function seedDemo(db: Kysely<Database>, clock: Clock): Promise<string | undefined> {
  const any = await db.selectFrom('users').select('id').limit(1).executeTakeFirst();
  if (any) return undefined;
  const { userId, workspaceId, token } = await createUser(db, clock, 'demo@platform.example', 'pro');
  const now = clock.now();
  const clusterId = newId('cl');
  const configId = newId('cc');
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('clusters').values({ id: clusterId, workspace_id: workspaceId, name: 'demo-eu', region_id: 'fsn1', kaas_version: 'v1.31', status: 'RUNNING', status_message: null, created_at: now }).execute();
    await trx
      .insertInto('compute_configs')
      .values({ id: configId, workspace_id: workspaceId, name: 'general-purpose', provider: 'hcloud', provider_config: JSON.stringify({ provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' }), cloud_credential_id: null, created_at: now })
      .execute();
    await trx
      .insertInto('machines')
      .values({ provider_id: `compute://${newId('mch')}`, cluster_id: clusterId, compute_config_id: configId, node_name: 'demo-eu-worker-1', status: 'ready', byom: false, server_type: 'cx22', cpu: 2, memory_bytes: 4 * 1024 ** 3, created_at: now })
      .execute();
    const suspended = `compute://${newId('mch')}`;
    await trx
      .insertInto('machines')
      .values({ provider_id: suspended, cluster_id: clusterId, compute_config_id: configId, node_name: 'demo-eu-worker-2', status: 'suspended', byom: false, server_type: 'cx22', cpu: 2, memory_bytes: 4 * 1024 ** 3, created_at: now })
      .execute();
    await trx
      .insertInto('suspensions')
      .values({ id: newId('sus'), workspace_id: workspaceId, cluster_id: clusterId, provider_id: suspended, node_name: 'demo-eu-worker-2', reason: 'manual', status: 'suspended', snapshot_id: `snap_${newId('mch').slice(4)}`, created_at: now, expires_at: now + 30 * 24 * 3600 })
      .execute();
    await trx
      .insertInto('products')
      .values({
        id: newId('prd'),
        workspace_id: workspaceId,
        name: 'Web Shop',
        template_id: newId('tpl'),
        sources: JSON.stringify([{ id: newId('src'), chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' }, values: { replicaCount: 1 }, metadata: {} }]),
        cluster_ids: JSON.stringify([clusterId]),
        stripe_price_ids: JSON.stringify([]),
        settings: JSON.stringify({}),
        regeneration_status: 'succeeded',
        created_at: now,
        updated_at: now,
      })
      .execute();
    await trx
      .insertInto('notifications')
      .values({ id: newId('ntf'), user_id: userId, type: 'cluster.ready', resource_type: 'cluster', resource_id: clusterId, title: 'Cluster demo-eu is running', body: 'Your demo cluster is ready for installs.', severity: 'info', read_at: null, created_at: now })
      .execute();
  });
  return token;
}
