// The audit log, through the server and PostgreSQL with pg-boss workers: every change writes one event in its own
// transaction, a refusal writes one on its own and changes nothing, a change whose event cannot be written is not
// made, workflows record their transitions as the platform, the two lists page and filter, each reader sees only
// what is theirs, old events are pruned, and a kubeconfig handed out is recorded.
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import type { Row } from '../src/db/schema.ts';
import { rowOnlyStarter, type WorkflowStarter } from '../src/engine/engine.ts';
import { auditLog } from '../src/http/audit.ts';
import { newId } from '../src/ids.ts';
import type { HandlerEnv } from '../src/operations/types.ts';
import { recordRequestEvent } from '../src/resources/audit-events.ts';
import { buildWorld, type World } from './fixtures.ts';
import {
  call,
  createTestDatabase,
  eventually,
  newUser,
  type Reply,
  secretsInAuditLog,
  serverLogger,
  startTestServer,
  type TestUser,
  useTestServer,
} from './support.ts';

const app = useTestServer({
  env: { WORKER_CONCURRENCY: '4', PROVIDER_RATE_LIMIT: '1000', SIM_CONTROL_PLANE_SECONDS: '30', AUDIT_RETENTION_DAYS: '90' },
  runtime: { tickMs: 20, orphanAfterSeconds: 1, eventPruneEveryMs: 50, retention: true },
});
const { clock } = app;
let world: World;

beforeAll(async () => {
  world = await buildWorld(app.db, clock);
});

const eventsOfRequest = (requestId: string) => app.db.selectFrom('audit_events').selectAll().where('request_id', '=', requestId).execute();
/** Events of requests (the workers record workflow transitions meanwhile). */
const countRequestEvents = async () =>
  Number(
    (
      await app.db
        .selectFrom('audit_events')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('actor_type', '=', 'user')
        .executeTakeFirstOrThrow()
    ).n,
  );
const patIdOf = async (user: TestUser) =>
  (await app.db.selectFrom('tokens').select('id').where('user_id', '=', user.userId).where('kind', '=', 'pat').executeTakeFirstOrThrow()).id;

/** Every page of a list, following the cursor. */
async function allPages(user: TestUser, path: string, query: Record<string, string | number>, headers: Record<string, string> = {}) {
  const data: Row<'audit_events'>[] = [];
  let cursor: string | undefined;
  for (;;) {
    const params = new URLSearchParams(Object.entries({ ...query, ...(cursor ? { cursor } : {}) }).map(([k, v]) => [k, String(v)]));
    const reply: Reply = await call(app.baseUrl, 'GET', `${path}?${params}`, { token: user.token, headers });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    data.push(...reply.body.data);
    if (!reply.body.pagination.has_more) return data;
    cursor = reply.body.pagination.cursor;
  }
}

describe('a change', () => {
  it('writes exactly one event, in its transaction, with who, how, where, what and the outcome', async () => {
    const created = await call(app.baseUrl, 'POST', '/v1/clusters', {
      token: world.alice.token,
      body: { name: 'audited', region_id: 'fsn1' },
      headers: { 'x-request-id': 'req-audit-create' },
    });
    expect(created.status).toBe(202);
    expect(await eventsOfRequest('req-audit-create')).toEqual([
      {
        id: expect.stringMatching(/^aud_/),
        created_at: clock.now(),
        actor_type: 'user',
        actor_id: world.alice.userId,
        token_kind: 'pat',
        token_id: await patIdOf(world.alice),
        workspace_id: world.alice.workspaceId,
        operation: 'createCluster',
        target_ids: [created.body.id],
        request_id: 'req-audit-create',
        outcome: 'succeeded',
        status: 202,
        error_code: null,
        client_address: '127.0.0.1',
      },
    ]);
    // By id: the workspace of the object the path names, the path's id as the target.
    const renamed = await call(app.baseUrl, 'PATCH', `/v1/clusters/${created.body.id}`, {
      token: world.members.member.token,
      body: { name: 'audited-2' },
      headers: { 'x-request-id': 'req-audit-rename' },
    });
    expect(renamed.status).toBe(200);
    expect(await eventsOfRequest('req-audit-rename')).toMatchObject([
      { actor_id: world.members.member.userId, workspace_id: world.alice.workspaceId, operation: 'updateCluster', target_ids: [created.body.id], status: 200 },
    ]);
  });

  it('a replayed idempotent request is recorded as a request of its own; the install is made once', async () => {
    const body = { product_id: world.ids.product, region_id: 'fsn1' };
    const first = await call(app.baseUrl, 'POST', '/v1/installs', {
      token: world.alice.token,
      body,
      headers: { 'idempotency-key': 'audit-k1', 'x-request-id': 'req-idem-1' },
    });
    const again = await call(app.baseUrl, 'POST', '/v1/installs', {
      token: world.alice.token,
      body,
      headers: { 'idempotency-key': 'audit-k1', 'x-request-id': 'req-idem-2' },
    });
    expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([202, 202, 'true']);
    for (const requestId of ['req-idem-1', 'req-idem-2']) {
      expect(await eventsOfRequest(requestId)).toMatchObject([
        { operation: 'createInstall', outcome: 'succeeded', target_ids: [first.body.id, first.body.workflow_id] },
      ]);
    }
  });

  it('reads write nothing', async () => {
    const before = await countRequestEvents();
    for (const path of ['/v1/clusters', `/v1/clusters/${world.ids.cluster}`, '/v1/installs', '/v1/audit_events', '/v1/user/audit_events']) {
      expect((await call(app.baseUrl, 'GET', path, { token: world.alice.token })).status).toBe(200);
    }
    expect(await countRequestEvents()).toBe(before);
  });
});

describe('a refused request', () => {
  it('writes one event, denied (forbidden) or failed, and changes nothing', async () => {
    const denied = await call(app.baseUrl, 'DELETE', `/v1/clusters/${world.ids.cluster}`, {
      token: world.members.member.token,
      headers: { 'x-request-id': 'req-denied' },
    });
    expect(denied.status).toBe(403);
    expect(await eventsOfRequest('req-denied')).toMatchObject([
      {
        actor_id: world.members.member.userId,
        workspace_id: world.alice.workspaceId,
        operation: 'deleteCluster',
        target_ids: [world.ids.cluster],
        outcome: 'denied',
        status: 403,
        error_code: 'forbidden',
      },
    ]);
    expect(await app.db.selectFrom('clusters').select('id').where('id', '=', world.ids.cluster).executeTakeFirst()).toBeDefined();

    const invalid = await call(app.baseUrl, 'POST', '/v1/clusters', {
      token: world.alice.token,
      body: { name: 'nowhere', region_id: 'xx9' },
      headers: { 'x-request-id': 'req-failed' },
    });
    expect(invalid.status).toBe(404);
    expect(await eventsOfRequest('req-failed')).toMatchObject([
      { operation: 'createCluster', outcome: 'failed', status: 404, error_code: 'not_found', workspace_id: null, target_ids: [] },
    ]);
    expect(await app.db.selectFrom('clusters').select('id').where('name', '=', 'nowhere').execute()).toEqual([]);

    // A stranger's attempt on another workspace's cluster is theirs alone: no workspace, so its admins never see it.
    const foreign = await call(app.baseUrl, 'DELETE', `/v1/clusters/${world.ids.cluster}`, {
      token: world.bob.token,
      headers: { 'x-request-id': 'req-foreign' },
    });
    expect(foreign.status).toBe(404);
    expect(await eventsOfRequest('req-foreign')).toMatchObject([{ actor_id: world.bob.userId, workspace_id: null, outcome: 'failed', status: 404 }]);
  });

  it('a token pasted where an id belongs, or sent as the request id, is never recorded', async () => {
    const pasted = await call(app.baseUrl, 'DELETE', `/v1/user/tokens/${world.alice.token}`, {
      token: world.alice.token,
      headers: { 'x-request-id': 'req-pasted' },
    });
    expect([404, 422]).toContain(pasted.status);
    expect(await eventsOfRequest('req-pasted')).toMatchObject([{ operation: 'revokeUserToken', target_ids: [], outcome: 'failed' }]);
    const sessionLike = 'Q7xk2LmN9pR4sT6vW8yZ0aB3cD5eF7gH';
    const asRequestId = await call(app.baseUrl, 'PATCH', `/v1/clusters/${world.ids.cluster}`, {
      token: world.alice.token,
      body: { name: 'renamed-once' },
      headers: { 'x-request-id': sessionLike },
    });
    // Not echoed: replaced by a generated id, which the response names and the event records.
    const used = asRequestId.headers.get('x-request-id')!;
    expect(used).toMatch(/^req_[0-9a-f]{32}$/);
    expect(await eventsOfRequest(used)).toMatchObject([{ operation: 'updateCluster' }]);
    expect(await eventsOfRequest(sessionLike)).toEqual([]);
    expect(await secretsInAuditLog(app.db)).toEqual([]);
  });

  it('without a token is not recorded (no actor to show, and anyone could make the server write)', async () => {
    const before = await countRequestEvents();
    expect((await call(app.baseUrl, 'POST', '/v1/clusters', { body: { name: 'x', region_id: 'fsn1' } })).status).toBe(401);
    expect(await countRequestEvents()).toBe(before);
  });
});

describe('the change and its event commit together', () => {
  it('a change whose event cannot be written is not made', async () => {
    // The audit insert of this one rename fails: the rename must roll back with it.
    await sql`
      CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.request_id = 'req-no-audit' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit();`.execute(app.db);
    try {
      const reply = await call(app.baseUrl, 'PATCH', `/v1/clusters/${world.ids.cluster}`, {
        token: world.alice.token,
        body: { name: 'never-renamed' },
        headers: { 'x-request-id': 'req-no-audit' },
      });
      expect(reply.status).toBe(500);
    } finally {
      await sql`DROP TRIGGER refuse_audit ON audit_events; DROP FUNCTION refuse_audit();`.execute(app.db);
    }
    expect(await app.db.selectFrom('clusters').select('name').where('id', '=', world.ids.cluster).executeTakeFirstOrThrow()).not.toEqual({
      name: 'never-renamed',
    });
    expect(await eventsOfRequest('req-no-audit')).toEqual([]);
  });

  it('a change that fails after its first write leaves neither the write nor an event', async () => {
    // The workflow's row is written, then starting its job fails (a queue that broke mid-request).
    const rows = rowOnlyStarter(clock);
    const breaking: WorkflowStarter = {
      async start(trx, kind, subjectId, state) {
        await rows.start(trx, kind, subjectId, state);
        throw new Error('the queue broke');
      },
    };
    const broken = await startTestServer(app.db, clock, {}, { workflows: breaking });
    try {
      const reply = await call(broken.baseUrl, 'POST', '/v1/clusters', {
        token: world.alice.token,
        body: { name: 'half-made', region_id: 'fsn1' },
        headers: { 'x-request-id': 'req-crash' },
      });
      expect(reply.status).toBe(500);
    } finally {
      await broken.close();
    }
    expect(await app.db.selectFrom('clusters').select('id').where('name', '=', 'half-made').execute()).toEqual([]);
    expect(await eventsOfRequest('req-crash')).toEqual([]);
  });
});

describe('workflow transitions', () => {
  it('are recorded as the platform, in the workspace of their subject, with the workflow and subject as targets', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const cluster = await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: 'flows', region_id: 'fsn1' } });
    const workflowId = (await app.db.selectFrom('workflows').select('id').where('subject_id', '=', cluster.body.id).executeTakeFirstOrThrow()).id;
    const transitions = () =>
      app.db
        .selectFrom('audit_events')
        .selectAll()
        .where('actor_type', '=', 'platform')
        .where(sql<boolean>`${cluster.body.id} = ANY(target_ids)`)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
    await eventually(transitions, (events) => events.length === 1, 'the workflow to start running');
    clock.advance(30);
    const events = await eventually(transitions, (events) => events.length === 2, 'the workflow to succeed');
    expect(events.map((e) => e.operation)).toEqual(['workflow.createCluster.running', 'workflow.createCluster.succeeded']);
    for (const event of events) {
      expect(event).toMatchObject({
        actor_type: 'platform',
        actor_id: null,
        token_kind: null,
        workspace_id: user.workspaceId,
        target_ids: [workflowId, cluster.body.id],
        outcome: 'succeeded',
        request_id: null,
        status: null,
      });
    }
    // No running cluster in hel1: the install's workflow fails.
    const product = await call(app.baseUrl, 'POST', '/v1/products', {
      token: user.token,
      body: {
        name: 'Shop',
        cluster_ids: [cluster.body.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' } }],
      },
    });
    expect(product.status).toBe(201);
    const install = await call(app.baseUrl, 'POST', '/v1/installs', { token: user.token, body: { product_id: product.body.id, region_id: 'hel1' } });
    const failed = await eventually(
      () => allPages(user, '/v1/audit_events', { target_id: install.body.id, operation: 'workflow.createInstall.failed' }),
      (events) => events.length === 1,
      'the install to fail',
    );
    expect(failed[0]).toMatchObject({
      actor_type: 'platform',
      outcome: 'failed',
      workspace_id: user.workspaceId,
      target_ids: [install.body.workflow_id, install.body.id],
    });
  });
});

describe('the lists', () => {
  it('page oldest first without repeats, and filter by actor, target, operation and time (since inclusive, until exclusive)', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const start = clock.now();
    const names: string[] = [];
    for (let i = 0; i < 5; i++) {
      const reply = await call(app.baseUrl, 'POST', '/v1/workspaces', { token: user.token, body: { name: `ws-${i}` } });
      names.push(reply.body.id);
      const renamed = await call(app.baseUrl, 'PATCH', `/v1/workspaces/${user.workspaceId}`, { token: user.token, body: { name: `home-${i}` } });
      expect(renamed.status).toBe(200);
      clock.advance(10);
    }
    const mine = await allPages(user, '/v1/user/audit_events', { limit: 3 });
    expect(mine.map((e) => e.operation)).toEqual(Array.from({ length: 5 }, () => ['createWorkspace', 'updateWorkspace']).flat());
    expect(new Set(mine.map((e) => e.id)).size).toBe(10);
    expect(mine.map((e) => e.created_at)).toEqual([...mine.map((e) => e.created_at)].sort((a, b) => a - b));
    expect(mine.filter((e) => e.operation === 'createWorkspace').map((e) => e.target_ids)).toEqual(names.map((id) => [id]));

    const workspace = await allPages(user, '/v1/audit_events', { limit: 2 });
    expect(workspace.map((e) => e.operation)).toEqual(Array(5).fill('updateWorkspace'));
    expect(
      await allPages(user, '/v1/audit_events', { actor_id: user.userId, operation: 'updateWorkspace', since: start + 10, until: start + 30 }),
    ).toHaveLength(2);
    expect(await allPages(user, '/v1/audit_events', { actor_id: world.alice.userId })).toEqual([]);
    expect(await allPages(user, '/v1/user/audit_events', { target_id: names[2]! })).toMatchObject([{ operation: 'createWorkspace', target_ids: [names[2]] }]);
    expect(await allPages(user, '/v1/user/audit_events', { since: start + 40 })).toHaveLength(2);
    const cursorTampered = await call(app.baseUrl, 'GET', '/v1/user/audit_events?cursor=nope', { token: user.token });
    expect(cursorTampered.status).toBe(422);
  });

  it('show a workspace to its admins and owner only, a user only their own, and never another workspace', async () => {
    for (const [who, status] of [
      [world.alice, 200],
      [world.members.admin, 200],
      [world.members.member, 403],
      [world.members.viewer, 403],
    ] as const) {
      const reply = await call(app.baseUrl, 'GET', '/v1/audit_events', { token: who.token, headers: { 'x-workspace-id': world.alice.workspaceId } });
      expect(reply.status, who.userId).toBe(status);
    }
    const stranger = await call(app.baseUrl, 'GET', '/v1/audit_events', { token: world.bob.token, headers: { 'x-workspace-id': world.alice.workspaceId } });
    expect(stranger.status).toBe(403);
    const alices = await allPages(world.alice, '/v1/audit_events', {});
    expect(alices.length).toBeGreaterThan(0);
    expect(alices.every((e) => e.workspace_id === world.alice.workspaceId)).toBe(true);
    // Bob's own workspace shows none of Alice's; his own list holds only what he did.
    expect((await allPages(world.bob, '/v1/audit_events', {})).every((e) => e.workspace_id === world.bob.workspaceId)).toBe(true);
    const member = await allPages(world.members.member, '/v1/user/audit_events', {});
    expect(member.length).toBeGreaterThan(0);
    expect(member.every((e) => e.actor_id === world.members.member.userId)).toBe(true);
    expect(member.map((e) => e.outcome)).toContain('denied');
  });

  it('need the audit:read scope', async () => {
    const created = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: world.alice.token, body: { name: 'no-audit', scopes: ['clusters:read'] } });
    for (const path of ['/v1/audit_events', '/v1/user/audit_events']) {
      const reply = await call(app.baseUrl, 'GET', path, { token: created.body.token });
      expect(reply.status).toBe(403);
      expect(reply.body).toMatchObject({ error: { code: 'forbidden', details: { required_scope: 'audit:read' } } });
    }
  });
});

describe('a kubeconfig handed out', () => {
  it('is recorded (the caller, the cluster, the request; never the kubeconfig)', async () => {
    const reply = await call(app.baseUrl, 'GET', `/v1/clusters/${world.ids.cluster}/kubeconfig`, {
      token: world.members.admin.token,
      headers: { 'x-request-id': 'req-kube' },
    });
    expect(reply.status).toBe(200);
    expect(await eventsOfRequest('req-kube')).toMatchObject([
      {
        actor_id: world.members.admin.userId,
        workspace_id: world.alice.workspaceId,
        operation: 'getClusterKubeconfig',
        target_ids: [world.ids.cluster],
        outcome: 'succeeded',
        status: 200,
      },
    ]);
    const refused = await call(app.baseUrl, 'GET', `/v1/clusters/${world.ids.cluster}/kubeconfig`, {
      token: world.members.member.token,
      headers: { 'x-request-id': 'req-kube-2' },
    });
    expect(refused.status).toBe(403);
    expect(await eventsOfRequest('req-kube-2')).toMatchObject([{ operation: 'getClusterKubeconfig', outcome: 'denied' }]);
  });
});

describe('retention', () => {
  it('the worker deletes audit events older than AUDIT_RETENTION_DAYS (365 by default; 0 keeps them)', async () => {
    expect(loadConfig({}).auditRetentionDays).toBe(365);
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '0' }).auditRetentionDays).toBe(0);
    expect(() => loadConfig({ AUDIT_RETENTION_DAYS: '-1' })).toThrow(ConfigError);
    const event = (requestId: string, secondsAgo: number) =>
      recordRequestEvent(
        app.db,
        {
          actor_id: world.alice.userId,
          token_kind: 'pat',
          token_id: null,
          workspace_id: world.alice.workspaceId,
          operation: 'updateCluster',
          target_ids: [world.ids.cluster],
          request_id: requestId,
          outcome: 'succeeded',
          status: 200,
          error_code: null,
          client_address: '127.0.0.1',
        },
        clock.now() - secondsAgo,
      );
    // This runtime keeps 90 days.
    await event('req-old', 90 * 86_400 + 60);
    await event('req-recent', 90 * 86_400 - 60);
    await eventually(
      () => eventsOfRequest('req-old'),
      (events) => events.length === 0,
      'the expired event to go',
    );
    expect(await eventsOfRequest('req-recent')).toHaveLength(1);
  });
});

describe('the binding', () => {
  it('refuses calls to the provider, the driver and DNS inside a change’s transaction', async () => {
    const env = { db: app.db, clock, logger: serverLogger() } as unknown as HandlerEnv;
    const caller = { userId: world.alice.userId, kind: 'pat' as const, tokenId: null, scopes: 'all' as const };
    const request = { meta: { operationId: 'createComputeConfig', audit: 'change' }, params: {}, caller, requestId: 'req-guard', clientAddress: '127.0.0.1' };
    for (const callOut of [
      (inside: HandlerEnv) => inside.provider.offerings(),
      (inside: HandlerEnv) => inside.driver.deleteCluster('cl_x'),
      (inside: HandlerEnv) => inside.resolveHost('example.com'),
    ]) {
      const handler = async (_input: unknown, inside: HandlerEnv) => {
        await callOut(inside);
        return { status: 201, body: { id: newId('cc') } };
      };
      await expect(auditLog(env).run(request as never, handler as never, {} as never)).rejects.toThrow(/inside a request's transaction/);
    }
    expect(await eventsOfRequest('req-guard')).toEqual([]);
  });
});

describe('the scan of every test database', () => {
  it('fails the file whose audit log holds a credential', async () => {
    const other = await createTestDatabase();
    await other.db
      .insertInto('audit_events')
      .values({
        id: newId('aud'),
        created_at: clock.now(),
        actor_type: 'user',
        actor_id: world.alice.userId,
        token_kind: 'pat',
        token_id: null,
        workspace_id: null,
        operation: 'revokeUserToken',
        target_ids: [world.alice.token],
        request_id: null,
        outcome: 'failed',
        status: 404,
        error_code: 'not_found',
        client_address: null,
      })
      .execute();
    await expect(other.drop()).rejects.toThrow(/looks like a credential/);
  });
});
