// A personal access token restricted to workspaces, at the user level: it sees only its workspaces' rows in the
// user's audit events, counts only its workspaces in quotas, and lists and revokes only tokens whose restriction
// lies within its own (never a token of every workspace, nor a session). The matrix over every operation is in
// security-matrix.test.ts.
import { beforeAll, describe, expect, it } from 'vitest';
import { createToken } from '../src/resources/tokens.ts';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;
let alice: TestUser;
let second: string;
let restricted: { id: string; token: string };

beforeAll(async () => {
  alice = await newUser(app.db, clock, 'pro');
  clock.advance(1);
  second = (await call(app.baseUrl, 'POST', '/v1/workspaces', { token: alice.token, body: { name: 'second' } })).body.id;
  // A cluster in her first workspace: an audit event there, and usage.
  const cluster = await call(app.baseUrl, 'POST', '/v1/clusters', { token: alice.token, body: { name: 'first-only', region_id: 'fsn1' } });
  expect(cluster.status).toBe(202);
  // A change in the second: an audit event there.
  expect((await call(app.baseUrl, 'PATCH', `/v1/workspaces/${second}`, { token: alice.token, body: { name: 'second, renamed' } })).status).toBe(200);
  const made = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: alice.token, body: { name: 'second only', workspace_ids: [second] } });
  expect(made.status).toBe(201);
  restricted = made.body;
});

const asRestricted = (method: string, path: string) => call(app.baseUrl, method, path, { token: restricted.token });

describe('a token restricted to one workspace, at the user level', () => {
  it('sees only its workspaces’ rows of the user’s audit events', async () => {
    const all = await call(app.baseUrl, 'GET', '/v1/user/audit_events?limit=100', { token: alice.token });
    expect(all.body.data.some((event: { workspace_id: string | null }) => event.workspace_id === alice.workspaceId)).toBe(true);
    const mine = await asRestricted('GET', '/v1/user/audit_events?limit=100');
    expect(mine.status).toBe(200);
    expect(mine.body.data.length).toBeGreaterThan(0);
    for (const event of mine.body.data) expect(event.workspace_id).toBe(second);
  });

  it('counts only its workspaces in quotas', async () => {
    const usage = (reply: { body: { metric: string; usage: number }[] }) => reply.body.find((entry) => entry.metric === 'kaas/clusters')!.usage;
    expect(usage(await call(app.baseUrl, 'GET', '/v1/quotas', { token: alice.token }))).toBe(1);
    expect(usage(await asRestricted('GET', '/v1/quotas'))).toBe(0);
  });

  it('lists and revokes only tokens restricted within its own, never a wider one or a session', async () => {
    const first = await app.db
      .selectFrom('tokens')
      .select('id')
      .where('user_id', '=', alice.userId)
      .where('workspace_ids', 'is', null)
      .where('kind', '=', 'pat')
      .executeTakeFirstOrThrow();
    const session = await createToken(app.db, clock, { userId: alice.userId, kind: 'session', name: 'browser', expiresAt: null });
    const narrower = await createToken(app.db, clock, { userId: alice.userId, kind: 'pat', name: 'narrow', expiresAt: null, workspaceIds: [second] });
    const wider = await createToken(app.db, clock, {
      userId: alice.userId,
      kind: 'pat',
      name: 'both',
      expiresAt: null,
      workspaceIds: [alice.workspaceId, second],
    });
    const listed = (await asRestricted('GET', '/v1/user/tokens?limit=100')).body.data.map((token: { id: string }) => token.id);
    expect(listed.sort()).toEqual([restricted.id, narrower.row.id].sort());
    expect((await asRestricted('GET', '/v1/user/sessions')).body.data).toEqual([]);
    for (const id of [first.id, wider.row.id]) {
      expect((await asRestricted('GET', `/v1/user/tokens/${id}`)).status).toBe(404);
      expect((await asRestricted('DELETE', `/v1/user/tokens/${id}`)).status).toBe(404);
    }
    expect((await asRestricted('DELETE', `/v1/user/sessions/${session.row.id}`)).status).toBe(404);
    expect((await asRestricted('POST', '/v1/user/sessions/revoke_others')).body).toEqual({ revoked: 0 });
    // All still there: nothing wider was revoked.
    expect((await call(app.baseUrl, 'GET', `/v1/user/tokens/${wider.row.id}`, { token: alice.token })).status).toBe(200);
    expect((await call(app.baseUrl, 'GET', '/v1/user/sessions', { token: session.secret })).status).toBe(200);
    expect((await asRestricted('DELETE', `/v1/user/tokens/${narrower.row.id}`)).status).toBe(204);
  });
});
