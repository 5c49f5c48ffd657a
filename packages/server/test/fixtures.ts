// A world of two users with one of each resource, for tests that walk the whole contract; and the start of the
// workflow tests' worlds (a running cluster, a compute config on the user's own key), made through the API.
import type { Schema } from '@platform/api-types';
import { createPlatformClient } from '@platform/client';
import type { Kysely } from 'kysely';
import { expect } from 'vitest';
import type { Clock } from '../src/clock.ts';
import type { Database } from '../src/db/schema.ts';
import { seedSampleResources } from '../src/db/seed.ts';
import { newId } from '../src/ids.ts';
import { createToken } from '../src/resources/tokens.ts';
import { createWorkspace } from '../src/resources/workspaces.ts';
import { eventually, newUser, type TestContext, type TestUser, workersSettled } from './support.ts';

export interface World {
  alice: TestUser;
  bob: TestUser;
  /** A second workspace of Alice's, newer (so not her default) and empty: where restricted tokens are sent. */
  aliceSecondWorkspaceId: string;
  /** Members of Alice's workspace (she is its owner), one per role below owner. */
  members: Record<'admin' | 'member' | 'viewer', TestUser>;
  /** Alice's resources, by the kind of id a path names. */
  ids: {
    cluster: string;
    computeConfig: string;
    /** The suspended machine (the suspension's). */
    machine: string;
    /** The ready machine. */
    readyMachine: string;
    suspension: string;
    product: string;
    source: string;
    install: string;
    notification: string;
    cloudCredential: string;
    registryCredential: string;
    token: string;
    /** An invitation from Bob's workspace to Alice. */
    invitation: string;
    /** A pending invitation of Alice's workspace (to someone without an account). */
    workspaceInvitation: string;
    session: string;
    webhookEndpoint: string;
    /** A delivery of an event to that endpoint. */
    webhookDelivery: string;
  };
}

export async function buildWorld(db: Kysely<Database>, clock: Clock): Promise<World> {
  const alice = await newUser(db, clock, 'pro');
  const bob = await newUser(db, clock, 'pro');
  const members = { admin: await newUser(db, clock), member: await newUser(db, clock), viewer: await newUser(db, clock) };
  for (const [role, user] of Object.entries(members) as [keyof typeof members, TestUser][]) {
    await db.insertInto('workspace_members').values({ workspace_id: alice.workspaceId, user_id: user.userId, role, created_at: clock.now() }).execute();
  }
  const sample = await seedSampleResources(db, clock, alice);
  const now = clock.now();
  const ws = alice.workspaceId;
  const ids: World['ids'] = {
    cluster: sample.clusterId,
    computeConfig: sample.configId,
    machine: sample.suspendedId,
    readyMachine: sample.providerId,
    suspension: sample.suspensionId,
    product: sample.productId,
    source: sample.sourceId,
    install: newId('ins'),
    notification: sample.notificationId,
    cloudCredential: newId('ccr'),
    registryCredential: newId('rc'),
    token: (await db.selectFrom('tokens').select('id').where('user_id', '=', alice.userId).executeTakeFirstOrThrow()).id,
    invitation: newId('inv'),
    workspaceInvitation: newId('inv'),
    session: (await createToken(db, clock, { userId: alice.userId, kind: 'session', name: 'platform-cli', expiresAt: null })).row.id,
    webhookEndpoint: newId('whe'),
    webhookDelivery: newId('whd'),
  };
  const aliceEmail = (await db.selectFrom('users').select('email').where('id', '=', alice.userId).executeTakeFirstOrThrow()).email;
  await db
    .insertInto('workspace_invitations')
    .values({
      id: ids.invitation,
      workspace_id: bob.workspaceId,
      email: aliceEmail,
      role: 'viewer',
      invited_by: bob.userId,
      created_at: now,
      expires_at: now + 7 * 24 * 60 * 60,
    })
    .execute();
  await db
    .insertInto('workspace_invitations')
    .values({
      id: ids.workspaceInvitation,
      workspace_id: ws,
      email: 'someone@elsewhere.example',
      role: 'member',
      invited_by: alice.userId,
      created_at: now,
      expires_at: now + 7 * 24 * 60 * 60,
    })
    .execute();
  const second = await createWorkspace(db, alice.userId, { name: 'second' }, now + 1);
  const workflow = newId('wf');
  await db
    .insertInto('workflows')
    .values({ id: workflow, kind: 'createInstall', subject_id: ids.install, status: 'pending', created_at: now, updated_at: now })
    .execute();
  await db
    .insertInto('installs')
    .values({
      id: ids.install,
      workspace_id: ws,
      product_id: ids.product,
      region_id: 'fsn1',
      cluster_id: null,
      status: 'pending',
      workflow_id: workflow,
      overrides: JSON.stringify([]),
      status_message: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await db
    .insertInto('cloud_credentials')
    .values({
      id: ids.cloudCredential,
      workspace_id: ws,
      name: 'cc',
      provider: 'hcloud',
      secret_ciphertext: Buffer.from('sealed'),
      created_at: now,
      last_used_at: null,
    })
    .execute();
  await db
    .insertInto('registry_credentials')
    .values({
      id: ids.registryCredential,
      workspace_id: ws,
      name: 'rc',
      registry_url: 'ghcr.io',
      username: 'u',
      password_ciphertext: null,
      is_active: true,
      created_at: now,
      last_used_at: null,
    })
    .execute();
  await db
    .insertInto('webhook_endpoints')
    .values({
      id: ids.webhookEndpoint,
      workspace_id: ws,
      url: 'https://hooks.example.com/platform',
      event_types: [],
      description: '',
      enabled: true,
      disabled_reason: null,
      secret_ciphertext: Buffer.from('sealed'),
      previous_secret_ciphertext: null,
      previous_secret_expires_at: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  const event = newId('evt');
  const cluster = await db.selectFrom('clusters').selectAll().where('id', '=', ids.cluster).executeTakeFirstOrThrow();
  const object = {
    id: cluster.id,
    name: cluster.name,
    workspace_id: cluster.workspace_id,
    region_id: cluster.region_id,
    kaas: { version: cluster.kaas_version, status: cluster.status, status_message: cluster.status_message },
    created_at: cluster.created_at,
  };
  await db
    .insertInto('events')
    .values({
      id: event,
      workspace_id: ws,
      type: 'cluster.created',
      object_type: 'cluster',
      object_id: ids.cluster,
      object: JSON.stringify(object),
      created_at: now,
    })
    .execute();
  await db
    .insertInto('webhook_deliveries')
    .values({
      id: ids.webhookDelivery,
      endpoint_id: ids.webhookEndpoint,
      workspace_id: ws,
      event_id: event,
      event_type: 'cluster.created',
      status: 'failed',
      first_attempt_at: now,
      last_attempt_at: now,
      last_response_status: 500,
      last_duration_ms: 12,
      last_error: 'The endpoint answered HTTP 500.',
      next_attempt_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { alice, aliceSecondWorkspaceId: second.id, bob, members, ids };
}

/** Which of the world's ids a path parameter names, from the path it sits in. */
export function idFor(world: World, path: string, param: string): string | undefined {
  const { ids } = world;
  if (param === 'clusterId') return ids.cluster;
  if (param === 'providerId') return ids.machine;
  if (param === 'workspaceId') return world.alice.workspaceId;
  if (param === 'userId') return world.alice.userId;
  if (param === 'invitationId') return ids.workspaceInvitation;
  if (param === 'deliveryId') return ids.webhookDelivery;
  const byCollection: [RegExp, string][] = [
    [/^\/v1\/compute\/configs\/\{id\}/, ids.computeConfig],
    [/^\/v1\/compute\/suspensions\/\{id\}/, ids.suspension],
    [/^\/v1\/products\/\{id\}/, ids.product],
    [/^\/v1\/installs\/\{id\}/, ids.install],
    [/^\/v1\/notifications\/\{id\}/, ids.notification],
    [/^\/v1\/compute\/cloud_credentials\/\{id\}/, ids.cloudCredential],
    [/^\/v1\/registry\/credentials\/\{id\}/, ids.registryCredential],
    [/^\/v1\/user\/tokens\/\{id\}/, ids.token],
    [/^\/v1\/user\/invitations\/\{id\}/, ids.invitation],
    [/^\/v1\/user\/sessions\/\{id\}/, ids.session],
    [/^\/v1\/webhook_endpoints\/\{id\}/, ids.webhookEndpoint],
  ];
  return byCollection.find(([pattern]) => pattern.test(path))?.[1];
}

/** The workflow tests' app: its clock is a TestClock they move, its workflow runtime runs (SIMULATED_WORKFLOWS_ENV). */
type WorkflowApp = Pick<TestContext, 'baseUrl' | 'db' | 'clock'>;

const clientOf = (app: WorkflowApp, user: TestUser) => createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });

/** A cluster of the user's, created and moved on (the simulated control plane takes 30 s) until it is RUNNING. */
export async function runningCluster(app: WorkflowApp, user: TestUser, name: string) {
  const api = clientOf(app, user);
  const created = await api.POST('/v1/clusters', { body: { name, region_id: 'fsn1' } });
  expect(created.kaas.status).toBe('PROVISIONING');
  await workersSettled(app.db, app.clock);
  app.clock.advance(30);
  return eventually(
    () => api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: created.id } } }),
    (cluster) => cluster.kaas.status === 'RUNNING',
    'the cluster to run',
  );
}

/** The user's own Hetzner token as a cloud credential ('own-key'), and a compute config (hcloud, fsn1, cx2*) on it. */
export async function ownKeyComputeConfig(app: WorkflowApp, user: TestUser, options: { name: string; image?: string }) {
  const api = clientOf(app, user);
  const credential = await api.POST('/v1/compute/cloud_credentials', {
    body: { name: 'own-key', provider: 'hcloud', secret: 'hcloud-token-0123456789abcdef0123456789abcdef' },
  });
  const config = await api.POST('/v1/compute/configs', {
    body: {
      name: options.name,
      provider: 'hcloud',
      provider_config: { provider: 'hcloud', region: 'fsn1', image: options.image ?? 'ubuntu-24.04', machine_type_filter: 'cx2*' },
      cloud_credential_id: credential.id,
    },
  });
  return { credential, config };
}

/** A product update that keeps the product as it is but at another chart version of every source: a regeneration. */
export const atChartVersion = (product: Schema<'Product'>, targetRevision: string): Schema<'ProductUpdate'> => ({
  name: product.name,
  cluster_ids: product.cluster_ids,
  sources: product.sources.map((source) => ({ ...source, chart: { ...source.chart, target_revision: targetRevision } })),
});
