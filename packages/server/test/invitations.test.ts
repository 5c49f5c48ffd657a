// Invitations and the end of a membership: an existing member cannot be invited again (409 naming them), and a
// member removed or leaving takes with them the workspace's pending invitations addressed to them and those they
// made, listed in the audit event of the removal; a demotion below admin withdraws those they made; and an
// invitation racing its maker's removal never outlives it.
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/ids.ts';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;
let owner: TestUser;

beforeAll(async () => {
  owner = await newUser(app.db, clock);
});

const emailOf = async (user: TestUser) => (await app.db.selectFrom('users').select('email').where('id', '=', user.userId).executeTakeFirstOrThrow()).email;

async function join(user: TestUser, role: 'admin' | 'member') {
  await app.db.insertInto('workspace_members').values({ workspace_id: owner.workspaceId, user_id: user.userId, role, created_at: clock.now() }).execute();
}

const invite = (token: string, email: string, role = 'member') =>
  call(app.baseUrl, 'POST', `/v1/workspaces/${owner.workspaceId}/invitations`, { token, body: { email, role } });

const pendingIds = async () =>
  (await app.db.selectFrom('workspace_invitations').select('id').where('workspace_id', '=', owner.workspaceId).execute()).map((row) => row.id).sort();

describe('inviting', () => {
  it('refuses an existing member with 409 naming them, whatever the case of the email', async () => {
    const admin = await newUser(app.db, clock);
    await join(admin, 'admin');
    const reply = await invite(owner.token, (await emailOf(admin)).toUpperCase(), 'admin');
    expect(reply.status).toBe(409);
    expect(reply.body.error).toMatchObject({ code: 'conflict', param: 'email', details: { user_id: admin.userId, role: 'admin' } });
    expect(reply.body.error.message).toContain(admin.userId);
    expect(reply.body.error.suggestion).toContain(`/members/${admin.userId}`);
    // The admin cannot invite themselves either (the way back in after a removal).
    expect((await invite(admin.token, await emailOf(admin), 'admin')).status).toBe(409);
  });
});

describe('a membership that ends', () => {
  for (const how of ['removed', 'leaves'] as const) {
    it(`withdraws the invitations addressed to the member and those they made when the member ${how}, and the audit event lists them`, async () => {
      const admin = await newUser(app.db, clock);
      await join(admin, 'admin');
      const madeByAdmin = await invite(admin.token, `friend-${how}@test.example`);
      expect(madeByAdmin.status).toBe(201);
      const madeByOwner = await invite(owner.token, `bystander-${how}@test.example`);
      expect(madeByOwner.status).toBe(201);
      const selfInvitation = newId('inv');
      // Addressed to the admin, in the workspace (written directly: the API refuses it while they are a member).
      await app.db
        .insertInto('workspace_invitations')
        .values({
          id: selfInvitation,
          workspace_id: owner.workspaceId,
          email: await emailOf(admin),
          role: 'admin',
          invited_by: admin.userId,
          created_at: clock.now(),
          expires_at: clock.now() + 3600,
        })
        .execute();
      const reply =
        how === 'removed'
          ? await call(app.baseUrl, 'DELETE', `/v1/workspaces/${owner.workspaceId}/members/${admin.userId}`, { token: owner.token })
          : await call(app.baseUrl, 'POST', `/v1/workspaces/${owner.workspaceId}/leave`, { token: admin.token });
      expect(reply.status).toBe(204);
      const withdrawn = [madeByAdmin.body.id, selfInvitation].sort();
      expect(await pendingIds()).toContain(madeByOwner.body.id);
      for (const id of withdrawn) expect(await pendingIds()).not.toContain(id);
      // Nothing left to accept: the way back in is a new invitation from an admin.
      expect((await call(app.baseUrl, 'GET', '/v1/user/invitations', { token: admin.token })).body.data).toEqual([]);
      const event = await app.db
        .selectFrom('audit_events')
        .select('target_ids')
        .where('request_id', '=', reply.headers.get('x-request-id'))
        .executeTakeFirstOrThrow();
      expect([...event.target_ids].sort()).toEqual(expect.arrayContaining(withdrawn));
      expect(event.target_ids).not.toContain(madeByOwner.body.id);
    });
  }
});

describe('a demotion', () => {
  it('below admin withdraws the invitations the member made, so none can bring them back as admin; a promotion withdraws none', async () => {
    const admin = await newUser(app.db, clock);
    await join(admin, 'admin');
    const second = await invite(admin.token, 'second-account@test.example', 'admin');
    expect(second.status).toBe(201);
    const byOwner = await invite(owner.token, 'kept@test.example', 'admin');
    const setRole = (role: string) =>
      call(app.baseUrl, 'PATCH', `/v1/workspaces/${owner.workspaceId}/members/${admin.userId}`, { token: owner.token, body: { role } });
    expect((await setRole('viewer')).status).toBe(200);
    expect(await pendingIds()).not.toContain(second.body.id);
    expect(await pendingIds()).toContain(byOwner.body.id);
    // Made admin again, they invite anew; raised further, nothing of theirs goes.
    expect((await setRole('admin')).status).toBe(200);
    const third = await invite(admin.token, 'third@test.example', 'member');
    expect(third.status).toBe(201);
    expect((await setRole('admin')).status).toBe(200);
    expect(await pendingIds()).toContain(third.body.id);
  });
});

describe('an invitation raced against the removal of its maker', () => {
  it('never outlives the removal: the two take the maker’s membership in turn', async () => {
    for (let trial = 0; trial < 4; trial++) {
      const admin = await newUser(app.db, clock);
      await join(admin, 'admin');
      const invitations = Array.from({ length: 24 }, (_, i) => invite(admin.token, `race-${trial}-${i}@test.example`));
      // The removal goes out while the invitations are in flight.
      await new Promise((resolve) => setTimeout(resolve, 5 + trial * 5));
      const removal = await call(app.baseUrl, 'DELETE', `/v1/workspaces/${owner.workspaceId}/members/${admin.userId}`, { token: owner.token });
      expect(removal.status).toBe(204);
      const replies = await Promise.all(invitations);
      // Each invitation either was made before the removal (and went with it) or was refused after it.
      for (const reply of replies) expect([201, 403, 404]).toContain(reply.status);
      const left = await app.db.selectFrom('workspace_invitations').select('id').where('invited_by', '=', admin.userId).execute();
      expect(left, `trial ${trial}`).toEqual([]);
    }
  });
});
