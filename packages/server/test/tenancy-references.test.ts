// What an object references lives in that object's workspace, generated from the contract: every request-body
// field that names another resource by id (`*_id`, `*_ids`) is sent, by a user who is a member of two
// workspaces, with the id of that user's resource in the OTHER workspace, in both directions. It must be refused
// with the field named, never stored. Then the same rule where a workflow acts: a product that names a foreign
// cluster (as one could before the rule was checked) never gets an install placed or upgraded there, also after
// its author has left the cluster's workspace. The same requests are also sent with carol's tokens restricted to
// one workspace: acting in the other one is refused (403 naming the restriction), and acting in its own, a
// reference into the other one is refused like any foreign reference.
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedSampleResources } from '../src/db/seed.ts';
import { newId } from '../src/ids.ts';
import { createToken } from '../src/resources/tokens.ts';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

type JsonSchema = { $ref?: string; type?: string | string[]; properties?: Record<string, JsonSchema>; items?: JsonSchema };
interface Operation {
  operationId: string;
  requestBody?: { content: Record<string, { schema?: JsonSchema; examples?: Record<string, { value: unknown }> }> };
}
const doc = definition as unknown as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, JsonSchema> } };
const deref = (schema: JsonSchema): JsonSchema => (schema.$ref ? deref(doc.components.schemas[schema.$ref.split('/').pop()!]!) : schema);

/** The kinds of resource a reference field names. Region ids are global; helm source and price ids are not workspace resources. */
const KIND_OF_FIELD: Record<string, Kind | null> = {
  cluster_id: 'cluster',
  cluster_ids: 'cluster',
  compute_config_id: 'computeConfig',
  cloud_credential_id: 'cloudCredential',
  product_id: 'product',
  region_id: null,
  template_helm_source_id: null,
  stripe_price_ids: null,
  client_id: null, // the device flow's OAuth client, not a workspace resource
  user_id: null, // transferWorkspaceOwnership's new owner: a member of the workspace (404 otherwise, roles.test.ts)
  workspace_ids: null, // createUserToken's workspaces: any the caller is a member of (422 otherwise, token-workspaces.test.ts)
};
type Kind = 'cluster' | 'computeConfig' | 'cloudCredential' | 'product';

/** Top-level reference fields of each operation's JSON body (nested ones are listed so the test notices them). */
const referencing = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item).flatMap(([method, op]) => {
    const schema = op.requestBody?.content['application/json']?.schema;
    if (!schema) return [];
    const fields = Object.keys(deref(schema).properties ?? {}).filter((name) => /_ids?$/.test(name));
    return fields.map((field) => ({ path, method: method.toUpperCase(), op, field }));
  }),
);

const app = useTestServer({
  env: { PROVIDER_RATE_LIMIT: '1000', SIM_RELEASE_SECONDS: '1' },
  runtime: { simulation: { followPollMs: 20, logLinesPerSecond: 2 }, tickMs: 20, orphanAfterSeconds: 1 },
});
const { clock } = app;
let alice: TestUser;
let carol: TestUser;
/** Carol's PATs with every scope, each restricted to one of her two workspaces. */
const restricted: Record<'shared' | 'own', string> = { shared: '', own: '' };
/** Resources of one kind each, in alice's workspace (carol is a member) and in carol's own. */
const ids: Record<'shared' | 'own', Record<Kind, string>> = { shared: {} as Record<Kind, string>, own: {} as Record<Kind, string> };

async function resourcesOf(owner: TestUser, clusterName: string): Promise<Record<Kind, string>> {
  const sample = await seedSampleResources(app.db, clock, owner, clusterName);
  const cloudCredential = newId('ccr');
  await app.db
    .insertInto('cloud_credentials')
    .values({
      id: cloudCredential,
      workspace_id: owner.workspaceId,
      name: 'key',
      provider: 'hcloud',
      secret_ciphertext: Buffer.from('sealed'),
      created_at: clock.now(),
      last_used_at: null,
    })
    .execute();
  return { cluster: sample.clusterId, computeConfig: sample.configId, cloudCredential, product: sample.productId };
}

beforeAll(async () => {
  alice = await newUser(app.db, clock, 'pro');
  carol = await newUser(app.db, clock, 'pro');
  await app.db
    .insertInto('workspace_members')
    .values({ workspace_id: alice.workspaceId, user_id: carol.userId, role: 'member', created_at: clock.now() })
    .execute();
  ids.shared = await resourcesOf(alice, 'shared-eu');
  ids.own = await resourcesOf(carol, 'own-eu');
  for (const which of ['shared', 'own'] as const) {
    const workspaceIds = [which === 'own' ? carol.workspaceId : alice.workspaceId];
    restricted[which] = (await createToken(app.db, clock, { userId: carol.userId, kind: 'pat', name: which, expiresAt: null, workspaceIds })).secret;
  }
});

describe('every reference field is known to this test', () => {
  it('names a kind of resource, or is declared global', () => {
    for (const { field, op } of referencing) expect(KIND_OF_FIELD, `${op.operationId}.${field}: which resource does it reference?`).toHaveProperty(field);
  });
  it('covers products, installs, machines and compute configs', () => {
    const covered = new Set(referencing.filter(({ field }) => KIND_OF_FIELD[field]).map(({ op }) => op.operationId));
    expect([...covered].sort()).toEqual(['createComputeConfig', 'createInstall', 'createProduct', 'requestMachine', 'updateProduct']);
  });
});

const cases = referencing
  .filter(({ field }) => KIND_OF_FIELD[field])
  .flatMap((c) => [
    { ...c, target: 'own' as const, foreign: 'shared' as const },
    { ...c, target: 'shared' as const, foreign: 'own' as const },
  ]);

describe('a body naming a resource of another workspace of the caller is refused, naming the field', () => {
  it.each(cases.map((c) => [c.op.operationId, c.field, c.target === 'own' ? "carol's own → shared" : "shared → carol's own", c] as const))(
    '%s %s (%s)',
    async (_op, field, _direction, c) => {
      const { path, example, workspaceId } = requestOf(c);
      const reply = await call(app.baseUrl, c.method, path, { token: carol.token, body: example, headers: { 'x-workspace-id': workspaceId } });
      expect([404, 422], JSON.stringify(reply.body)).toContain(reply.status);
      expect(reply.body.error.param).toBe(field.endsWith('_ids') ? `${field}[0]` : field);
    },
  );

  it.each(cases.map((c) => [c.op.operationId, c.field, c.target === 'own' ? "carol's own → shared" : "shared → carol's own", c] as const))(
    '%s %s (%s), with a token restricted to the acting workspace',
    async (_op, field, _direction, c) => {
      const { path, example, workspaceId } = requestOf(c);
      const reply = await call(app.baseUrl, c.method, path, { token: restricted[c.target], body: example, headers: { 'x-workspace-id': workspaceId } });
      expect([404, 422], JSON.stringify(reply.body)).toContain(reply.status);
      expect(reply.body.error.param).toBe(field.endsWith('_ids') ? `${field}[0]` : field);
    },
  );

  it.each(cases.map((c) => [c.op.operationId, c.field, c.target === 'own' ? "carol's own" : 'shared', c] as const))(
    '%s %s acting in %s, with a token restricted to the other workspace, is 403',
    async (_op, _field, _target, c) => {
      const { path, example, workspaceId } = requestOf(c);
      const reply = await call(app.baseUrl, c.method, path, { token: restricted[c.foreign], body: example, headers: { 'x-workspace-id': workspaceId } });
      expect(reply.status).toBe(403);
      expect(reply.body.error).toMatchObject({ code: 'forbidden', param: 'X-Workspace-Id' });
    },
  );

  it('and nothing was stored: no product, install, machine or config names a foreign resource', async () => {
    const { rows } = await sql<{ n: number }>`
      SELECT (SELECT count(*) FROM products p, jsonb_array_elements_text(p.cluster_ids) c(id) JOIN clusters cl ON cl.id = c.id WHERE cl.workspace_id <> p.workspace_id)
           + (SELECT count(*) FROM installs i JOIN products p ON p.id = i.product_id WHERE p.workspace_id <> i.workspace_id)
           + (SELECT count(*) FROM machines m JOIN clusters cl ON cl.id = m.cluster_id JOIN compute_configs cc ON cc.id = m.compute_config_id WHERE cl.workspace_id <> cc.workspace_id)
           + (SELECT count(*) FROM compute_configs cc JOIN cloud_credentials cr ON cr.id = cc.cloud_credential_id WHERE cr.workspace_id <> cc.workspace_id) AS n`.execute(
      app.db,
    );
    expect(rows[0]!.n).toBe(0);
  });
});

/** The case's request: every reference of the body points into the target workspace, except the one under test. */
function requestOf(c: (typeof cases)[number]) {
  const target = ids[c.target];
  const { field } = c;
  const example = structuredClone(Object.values(c.op.requestBody!.content['application/json']!.examples ?? {})[0]!.value) as Record<string, unknown>;
  for (const [name, kind] of Object.entries(KIND_OF_FIELD)) {
    if (!kind || !(name in example || name === field)) continue;
    const id = name === field ? ids[c.foreign][kind] : target[kind];
    example[name] = name.endsWith('_ids') ? [id] : id;
  }
  if (c.op.operationId === 'createInstall') delete example.overrides;
  // Source ids name the sources of the product the example was written for; new sources here.
  if (Array.isArray(example.sources)) for (const source of example.sources as Record<string, unknown>[]) delete source.id;
  if (c.op.operationId === 'createComputeConfig' && field !== 'cloud_credential_id') delete example.cloud_credential_id;
  const path = c.path.replace('{id}', target.product);
  const workspaceId = c.target === 'own' ? carol.workspaceId : alice.workspaceId;
  return { path, example, workspaceId };
}

/** Polls briefly until the install leaves pending/installing. */
async function finalInstall(token: string, id: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    clock.advance(5);
    const reply = await call(app.baseUrl, 'GET', `/v1/installs/${id}`, { token });
    if (!['pending', 'installing'].includes(reply.body.status)) return reply.body;
    if (Date.now() > deadline) throw new Error(`install ${id} still ${reply.body.status}`);
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

describe('workflows check again where they act', () => {
  it('an install of a product naming a foreign cluster is not placed there, before and after its author leaves', async () => {
    // A product of carol's own workspace naming only the shared workspace's cluster, as the unchecked write allowed.
    const legacy = newId('prd');
    const now = clock.now();
    await app.db
      .insertInto('products')
      .values({
        id: legacy,
        workspace_id: carol.workspaceId,
        name: 'legacy',
        template_id: newId('tpl'),
        sources: JSON.stringify([
          { id: newId('src'), chart: { repo_url: 'https://charts.example.com', target_revision: '1.0.0', chart: 'web' }, values: {}, metadata: {} },
        ]),
        cluster_ids: JSON.stringify([ids.shared.cluster]),
        stripe_price_ids: JSON.stringify([]),
        settings: JSON.stringify({}),
        regeneration_status: 'succeeded',
        created_at: now,
        updated_at: now,
      })
      .execute();
    const install = async () => {
      const reply = await call(app.baseUrl, 'POST', '/v1/installs', {
        token: carol.token,
        body: { product_id: legacy, region_id: 'fsn1' },
        headers: { 'x-workspace-id': carol.workspaceId },
      });
      expect(reply.status).toBe(202);
      return finalInstall(carol.token, reply.body.id);
    };
    const before = await install();
    expect(before).toMatchObject({ status: 'failed', cluster_id: null });
    await call(app.baseUrl, 'DELETE', `/v1/workspaces/${alice.workspaceId}/members/${carol.userId}`, { token: alice.token });
    const after = await install();
    expect(after).toMatchObject({ status: 'failed', cluster_id: null });
    const onShared = await app.db.selectFrom('installs').select('id').where('cluster_id', '=', ids.shared.cluster).execute();
    expect(onShared).toEqual([]);
  });
});
