// Workspace roles through the API: changing a role, transferring ownership, leaving, and the role being that of
// the workspace the request acts in (a resource's own workspace, whatever X-Workspace-Id says).
import { createPlatformClient } from '@platform/client';
import { describe, expect, it } from 'vitest';
import { seedSampleResources } from '../src/db/seed.ts';
import { newId } from '../src/ids.ts';
import type { Role } from '../src/services/roles.ts';
import { apiError, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;

const client = (user: TestUser, workspaceId?: string) =>
  createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false, ...(workspaceId ? { workspaceId } : {}) });

/** A new user who is a member of the owner's workspace with the role. */
async function joined(owner: TestUser, role: Role): Promise<TestUser> {
  const user = await newUser(app.db, clock);
  await app.db.insertInto('workspace_members').values({ workspace_id: owner.workspaceId, user_id: user.userId, role, created_at: clock.now() }).execute();
  return user;
}

/** The user's role in the workspace, as a member listing it sees it. */
const roleOf = async (asker: TestUser, workspaceId: string, user: TestUser) =>
  (await client(asker).GET('/v1/workspaces/{workspaceId}/members', { params: { path: { workspaceId } } })).data.find((m) => m.user_id === user.userId)?.role;

describe('changing a role', () => {
  it('an admin changes a member’s role; the owner’s role changes only by transfer; a member changes none', async () => {
    const owner = await newUser(app.db, clock);
    const admin = await joined(owner, 'admin');
    const dana = await joined(owner, 'member');
    const path = (user: TestUser) => ({ path: { workspaceId: owner.workspaceId, userId: user.userId } });
    expect(await client(admin).PATCH('/v1/workspaces/{workspaceId}/members/{userId}', { params: path(dana), body: { role: 'viewer' } })).toMatchObject({
      user_id: dana.userId,
      role: 'viewer',
    });
    expect(await roleOf(owner, owner.workspaceId, dana)).toBe('viewer');
    const toOwner = await apiError(client(admin).PATCH('/v1/workspaces/{workspaceId}/members/{userId}', { params: path(owner), body: { role: 'viewer' } }));
    expect(toOwner).toMatchObject({ status: 409, code: 'conflict' });
    expect(toOwner.suggestion).toContain('/transfer');
    // `owner` is not a role one is given: the body's enum refuses it.
    const body = { role: 'owner' } as unknown as { role: 'admin' };
    expect(await apiError(client(admin).PATCH('/v1/workspaces/{workspaceId}/members/{userId}', { params: path(dana), body }))).toMatchObject({ status: 422 });
    expect(
      await apiError(client(dana).PATCH('/v1/workspaces/{workspaceId}/members/{userId}', { params: path(admin), body: { role: 'viewer' } })),
    ).toMatchObject({ status: 403, details: { required_role: 'admin', role: 'viewer' } });
    const stranger = await newUser(app.db, clock);
    expect(
      await apiError(client(admin).PATCH('/v1/workspaces/{workspaceId}/members/{userId}', { params: path(stranger), body: { role: 'viewer' } })),
    ).toMatchObject({ status: 404 });
  });
});

describe('transferring ownership', () => {
  it('makes a member the owner and the previous owner an admin; only the owner transfers', async () => {
    const owner = await newUser(app.db, clock);
    const admin = await joined(owner, 'admin');
    const dana = await joined(owner, 'member');
    const workspaceId = owner.workspaceId;
    expect(
      await apiError(client(admin).POST('/v1/workspaces/{workspaceId}/transfer', { params: { path: { workspaceId } }, body: { user_id: admin.userId } })),
    ).toMatchObject({ status: 403, details: { required_role: 'owner', role: 'admin' } });
    const stranger = await newUser(app.db, clock);
    expect(
      await apiError(client(owner).POST('/v1/workspaces/{workspaceId}/transfer', { params: { path: { workspaceId } }, body: { user_id: stranger.userId } })),
    ).toMatchObject({ status: 404 });
    expect(
      await client(owner).POST('/v1/workspaces/{workspaceId}/transfer', { params: { path: { workspaceId } }, body: { user_id: dana.userId } }),
    ).toMatchObject({
      user_id: dana.userId,
      role: 'owner',
    });
    expect(await roleOf(dana, workspaceId, owner)).toBe('admin');
    expect(await roleOf(dana, workspaceId, dana)).toBe('owner');
    const row = await app.db.selectFrom('workspaces').select('owner_id').where('id', '=', workspaceId).executeTakeFirstOrThrow();
    expect(row.owner_id).toBe(dana.userId);
    // The previous owner may leave now; the new one may not.
    await client(owner).POST('/v1/workspaces/{workspaceId}/leave', { params: { path: { workspaceId } } });
    expect(await apiError(client(dana).POST('/v1/workspaces/{workspaceId}/leave', { params: { path: { workspaceId } } }))).toMatchObject({ status: 409 });
  });
});

describe('leaving', () => {
  it('a member leaves and sees the workspace no more; the owner is told to transfer first', async () => {
    const owner = await newUser(app.db, clock);
    const viewer = await joined(owner, 'viewer');
    const workspaceId = owner.workspaceId;
    await client(viewer).POST('/v1/workspaces/{workspaceId}/leave', { params: { path: { workspaceId } } });
    expect(await apiError(client(viewer).GET('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId } } }))).toMatchObject({ status: 404 });
    expect(await apiError(client(viewer).POST('/v1/workspaces/{workspaceId}/leave', { params: { path: { workspaceId } } }))).toMatchObject({ status: 404 });
    const refused = await apiError(client(owner).POST('/v1/workspaces/{workspaceId}/leave', { params: { path: { workspaceId } } }));
    expect(refused).toMatchObject({ status: 409, code: 'conflict' });
    expect(refused.suggestion).toContain(`/v1/workspaces/${workspaceId}/transfer`);
  });
});

describe('the role is the one in the workspace the request acts in', () => {
  it('a viewer cannot delete a resource of the workspace by naming a workspace they own', async () => {
    const owner = await newUser(app.db, clock, 'pro');
    const viewer = await joined(owner, 'viewer');
    const { clusterId, configId } = await seedSampleResources(app.db, clock, owner);
    for (const workspaceId of [undefined, viewer.workspaceId, owner.workspaceId]) {
      expect(await apiError(client(viewer, workspaceId).DELETE('/v1/compute/configs/{id}', { params: { path: { id: configId } } }))).toMatchObject({
        status: 403,
        details: { required_role: 'admin', role: 'viewer' },
      });
    }
    // Reading is a viewer's right.
    expect(await client(viewer, owner.workspaceId).GET('/v1/clusters/{clusterId}', { params: { path: { clusterId } } })).toMatchObject({ id: clusterId });
    // In their own workspace, without the header, they are its owner.
    expect(
      await client(viewer).POST('/v1/registry/credentials', { body: { name: 'mine', registry_url: 'ghcr.io', username: 'u', password: 'p' } }),
    ).toMatchObject({
      name: 'mine',
    });
  });
});

describe('membership by invitation', () => {
  const emailOf = async (user: TestUser) => (await app.db.selectFrom('users').select('email').where('id', '=', user.userId).executeTakeFirstOrThrow()).email;
  const invite = (owner: TestUser, email: string, role?: 'admin' | 'member' | 'viewer') =>
    fetch(`${app.baseUrl}/v1/workspaces/${owner.workspaceId}/invitations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(role ? { email, role } : { email }),
    });

  it('answers alike whether or not the email has an account', async () => {
    const owner = await newUser(app.db, clock);
    const dana = await newUser(app.db, clock);
    const known = await invite(owner, await emailOf(dana));
    const unknown = await invite(owner, 'nobody-here@nowhere.example');
    expect([known.status, unknown.status]).toEqual([201, 201]);
    const shape = (response: Response) => response.json().then((body: Record<string, unknown>) => ({ ...body, id: undefined, email: undefined }));
    expect(await shape(known)).toEqual(await shape(unknown));
    expect([...known.headers.keys()].sort()).toEqual([...unknown.headers.keys()].sort());
  });

  it('the invitee lists, accepts with the role, or declines; nobody else can', async () => {
    const owner = await newUser(app.db, clock);
    const dana = await newUser(app.db, clock);
    const erin = await newUser(app.db, clock);
    const first = (await (await invite(owner, await emailOf(dana), 'viewer')).json()) as { id: string };
    const second = (await (await invite(owner, await emailOf(erin), 'admin')).json()) as { id: string };
    expect((await client(dana).GET('/v1/user/invitations', {})).data).toMatchObject([{ id: first.id, role: 'viewer', workspace_id: owner.workspaceId }]);
    // Another user's invitation is not there for them.
    expect(await apiError(client(dana).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: second.id } } }))).toMatchObject({ status: 404 });
    expect(await apiError(client(dana).POST('/v1/user/invitations/{id}/decline', { params: { path: { id: second.id } } }))).toMatchObject({ status: 404 });
    expect(await client(dana).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: first.id } } })).toMatchObject({ role: 'viewer' });
    expect(await roleOf(owner, owner.workspaceId, dana)).toBe('viewer');
    await client(erin).POST('/v1/user/invitations/{id}/decline', { params: { path: { id: second.id } } });
    expect((await client(erin).GET('/v1/user/invitations', {})).data).toEqual([]);
    expect(await roleOf(owner, owner.workspaceId, erin)).toBeUndefined();
  });

  it('a member is not invited again (409); one who became a member after being invited keeps their role on accepting', async () => {
    const owner = await newUser(app.db, clock);
    const admin = await joined(owner, 'admin');
    expect((await invite(owner, await emailOf(admin), 'viewer')).status).toBe(409);
    const later = await newUser(app.db, clock);
    const invitation = (await (await invite(owner, await emailOf(later), 'viewer')).json()) as { id: string };
    await app.db
      .insertInto('workspace_members')
      .values({ workspace_id: owner.workspaceId, user_id: later.userId, role: 'admin', created_at: clock.now() })
      .execute();
    expect(await client(later).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: invitation.id } } })).toMatchObject({ role: 'admin' });
  });

  it('expires after 7 days', async () => {
    const owner = await newUser(app.db, clock);
    const dana = await newUser(app.db, clock);
    const invitation = (await (await invite(owner, await emailOf(dana))).json()) as { id: string; expires_at: number; created_at: number };
    expect(invitation.expires_at - invitation.created_at).toBe(7 * 24 * 60 * 60);
    clock.advance(7 * 24 * 60 * 60);
    expect((await client(dana).GET('/v1/user/invitations', {})).data).toEqual([]);
    expect(await apiError(client(dana).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: invitation.id } } }))).toMatchObject({ status: 404 });
  });
});

describe('a token never exceeds its user’s current role', () => {
  it('a PAT with clusters:write of a member demoted to viewer gets 403 on a write; the read still works', async () => {
    const owner = await newUser(app.db, clock, 'pro');
    const dana = await joined(owner, 'member');
    const { clusterId } = await seedSampleResources(app.db, clock, owner);
    const { token } = (await client(dana).POST('/v1/user/tokens', { body: { name: 'ci', scopes: ['clusters:write'] } })) as { token: string };
    const ci = createPlatformClient({ baseUrl: app.baseUrl, token, retry: false });
    const rename = (name: string) => ci.PATCH('/v1/clusters/{clusterId}', { params: { path: { clusterId } }, body: { name } });
    expect(await rename('renamed-by-member')).toMatchObject({ name: 'renamed-by-member' });
    await client(owner).PATCH('/v1/workspaces/{workspaceId}/members/{userId}', {
      params: { path: { workspaceId: owner.workspaceId, userId: dana.userId } },
      body: { role: 'viewer' },
    });
    expect(await apiError(rename('renamed-by-viewer'))).toMatchObject({ status: 403, details: { required_role: 'member', role: 'viewer' } });
    expect(await ci.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId } } })).toMatchObject({ name: 'renamed-by-member' });
  });
});

describe('a workspace’s pending invitations', () => {
  const invite = (admin: TestUser, workspaceId: string, email: string) =>
    client(admin).POST('/v1/workspaces/{workspaceId}/invitations', { params: { path: { workspaceId } }, body: { email } });
  const pending = async (admin: TestUser, workspaceId: string) =>
    (await client(admin).GET('/v1/workspaces/{workspaceId}/invitations', { params: { path: { workspaceId } } })).data.map((i) => i.id);

  it('are listed by its admins and revoked: the invitee can accept it no more', async () => {
    const owner = await newUser(app.db, clock);
    const admin = await joined(owner, 'admin');
    const dana = await newUser(app.db, clock);
    const email = (await app.db.selectFrom('users').select('email').where('id', '=', dana.userId).executeTakeFirstOrThrow()).email;
    const first = await invite(admin, owner.workspaceId, email);
    const second = await invite(admin, owner.workspaceId, 'erin@elsewhere.example');
    expect(await pending(admin, owner.workspaceId)).toEqual([first.id, second.id]);
    const path = (invitationId: string, workspaceId = owner.workspaceId) => ({ params: { path: { workspaceId, invitationId } } });
    await client(admin).DELETE('/v1/workspaces/{workspaceId}/invitations/{invitationId}', path(first.id));
    expect(await pending(owner, owner.workspaceId)).toEqual([second.id]);
    expect((await client(dana).GET('/v1/user/invitations', {})).data).toEqual([]);
    expect(await apiError(client(dana).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: first.id } } }))).toMatchObject({ status: 404 });
    // Gone already, or of another workspace: 404, and the other workspace's invitation stays.
    expect(await apiError(client(admin).DELETE('/v1/workspaces/{workspaceId}/invitations/{invitationId}', path(first.id)))).toMatchObject({
      status: 404,
      param: 'invitationId',
    });
    const other = await newUser(app.db, clock);
    const theirs = await invite(other, other.workspaceId, 'frank@elsewhere.example');
    expect(await apiError(client(owner).DELETE('/v1/workspaces/{workspaceId}/invitations/{invitationId}', path(theirs.id)))).toMatchObject({ status: 404 });
    expect(await pending(other, other.workspaceId)).toEqual([theirs.id]);
  });

  it('do not include expired ones', async () => {
    const owner = await newUser(app.db, clock);
    const old = await invite(owner, owner.workspaceId, 'late@elsewhere.example');
    clock.advance(7 * 24 * 60 * 60);
    const fresh = await invite(owner, owner.workspaceId, 'new@elsewhere.example');
    expect(await pending(owner, owner.workspaceId)).toEqual([fresh.id]);
    expect(
      await apiError(
        client(owner).DELETE('/v1/workspaces/{workspaceId}/invitations/{invitationId}', {
          params: { path: { workspaceId: owner.workspaceId, invitationId: old.id } },
        }),
      ),
    ).toMatchObject({ status: 404 });
  });
});

describe('deleting a workspace', () => {
  const remove = (user: TestUser, workspaceId: string) => client(user).DELETE('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId } } });

  it('is refused while it holds resources, naming each kind with its ids', async () => {
    const owner = await newUser(app.db, clock, 'pro');
    const { clusterId, configId, productId } = await seedSampleResources(app.db, clock, owner);
    const refused = await apiError(remove(owner, owner.workspaceId));
    expect(refused).toMatchObject({ status: 409, code: 'conflict' });
    expect(refused.suggestion).toContain('Delete them first');
    expect(refused.message).toBe(`Workspace ${owner.workspaceId} still holds 1 product, 1 cluster and 1 compute config.`);
    expect(refused.details).toEqual({
      remaining: [
        { kind: 'products', count: 1, ids: [productId] },
        { kind: 'clusters', count: 1, ids: [clusterId] },
        { kind: 'compute_configs', count: 1, ids: [configId] },
      ],
    });
    expect(await client(owner).GET('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId: owner.workspaceId } } })).toMatchObject({
      id: owner.workspaceId,
    });
  });

  /** A deletion of the workspace under way: it holds the row and has removed it and its rows, but not committed. */
  async function deletionUnderWay(workspaceId: string) {
    const deletion = await app.db.startTransaction().execute();
    await deletion.selectFrom('workspaces').select('id').where('id', '=', workspaceId).forUpdate().execute();
    await deletion.deleteFrom('workspace_invitations').where('workspace_id', '=', workspaceId).execute();
    await deletion.deleteFrom('workspace_members').where('workspace_id', '=', workspaceId).execute();
    await deletion.deleteFrom('workspaces').where('id', '=', workspaceId).execute();
    return deletion;
  }

  /** The request's answer, once the deletion it waits for has committed (it must not answer before). */
  async function afterDeletion<T>(deletion: Awaited<ReturnType<typeof deletionUnderWay>>, request: Promise<T>): Promise<T> {
    let answered = false;
    const answer = request.finally(() => {
      answered = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answered).toBe(false);
    await deletion.commit().execute();
    return answer;
  }

  it('a creation that races the deletion finds no workspace (403), never a foreign-key error', async () => {
    const owner = await newUser(app.db, clock);
    clock.advance(1);
    const racing = await client(owner).POST('/v1/workspaces', { body: { name: 'racing' } });
    const deletion = await deletionUnderWay(racing.id);
    // The creation waits for the deletion (it holds the workspace until it commits), and then finds it gone.
    const creation = apiError(client(owner, racing.id).POST('/v1/clusters', { body: { name: 'late', region_id: 'fsn1' } }));
    expect(await afterDeletion(deletion, creation)).toMatchObject({ status: 403, code: 'forbidden', param: 'X-Workspace-Id' });
    expect(await app.db.selectFrom('clusters').select('id').where('workspace_id', '=', racing.id).execute()).toEqual([]);
  });

  it('an invitation that races the deletion finds no workspace (404), never a foreign-key error', async () => {
    const owner = await newUser(app.db, clock);
    clock.advance(1);
    const racing = await client(owner).POST('/v1/workspaces', { body: { name: 'racing' } });
    const deletion = await deletionUnderWay(racing.id);
    const invitation = client(owner).POST('/v1/workspaces/{workspaceId}/invitations', {
      params: { path: { workspaceId: racing.id } },
      body: { email: 'late@elsewhere.example' },
    });
    expect(await afterDeletion(deletion, apiError(invitation))).toMatchObject({ status: 404, code: 'not_found' });
    expect(await app.db.selectFrom('workspace_invitations').select('id').where('workspace_id', '=', racing.id).execute()).toEqual([]);
  });

  it('an accept that races the deletion waits for it and finds no invitation (404), never a foreign-key error or a deadlock', async () => {
    const owner = await newUser(app.db, clock);
    const dana = await newUser(app.db, clock);
    clock.advance(1);
    const racing = await client(owner).POST('/v1/workspaces', { body: { name: 'racing' } });
    const email = (await app.db.selectFrom('users').select('email').where('id', '=', dana.userId).executeTakeFirstOrThrow()).email;
    const invitation = await client(owner).POST('/v1/workspaces/{workspaceId}/invitations', { params: { path: { workspaceId: racing.id } }, body: { email } });
    // The deletion has taken the workspace's row, and is yet to remove its invitations.
    const deletion = await app.db.startTransaction().execute();
    await deletion.selectFrom('workspaces').select('id').where('id', '=', racing.id).forUpdate().execute();
    let answered = false;
    const accept = apiError(client(dana).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: invitation.id } } })).finally(() => {
      answered = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answered).toBe(false);
    // Had the accept claimed the invitation before waiting for the workspace, this would wait for the accept while
    // the accept waits for this: a deadlock, which PostgreSQL ends by failing one of them.
    await deletion.deleteFrom('workspace_invitations').where('workspace_id', '=', racing.id).execute();
    await deletion.deleteFrom('workspace_members').where('workspace_id', '=', racing.id).execute();
    await deletion.deleteFrom('workspaces').where('id', '=', racing.id).execute();
    await deletion.commit().execute();
    expect(await accept).toMatchObject({ status: 404, code: 'not_found', message: expect.stringContaining(invitation.id) });
    expect(await app.db.selectFrom('workspace_members').select('user_id').where('workspace_id', '=', racing.id).execute()).toEqual([]);
  });

  it('an empty one goes with its memberships, invitations, notifications, events, overrides and token restrictions', async () => {
    const owner = await newUser(app.db, clock);
    clock.advance(1);
    const doomed = await client(owner).POST('/v1/workspaces', { body: { name: 'doomed' } });
    const admin = await newUser(app.db, clock);
    await app.db.insertInto('workspace_members').values({ workspace_id: doomed.id, user_id: admin.userId, role: 'admin', created_at: clock.now() }).execute();
    await client(owner).POST('/v1/workspaces/{workspaceId}/invitations', {
      params: { path: { workspaceId: doomed.id } },
      body: { email: 'x@elsewhere.example' },
    });
    const credential = await client(owner, doomed.id).POST('/v1/registry/credentials', {
      body: { name: 'r', registry_url: 'ghcr.io', username: 'u', password: 'p' },
    });
    const now = clock.now();
    await app.db
      .insertInto('notifications')
      .values({
        id: newId('ntf'),
        user_id: admin.userId,
        workspace_id: doomed.id,
        type: 'cluster.failed',
        resource_type: 'cluster',
        resource_id: 'cl_gone',
        title: 't',
        body: 'b',
        severity: 'info',
        read_at: null,
        created_at: now,
      })
      .execute();
    await app.db
      .insertInto('events')
      .values({
        id: newId('evt'),
        workspace_id: doomed.id,
        type: 'cluster.failed',
        object_type: 'cluster',
        object_id: 'cl_gone',
        object: '{}',
        created_at: now,
      })
      .execute();
    await app.db.insertInto('quota_overrides').values({ workspace_id: doomed.id, user_id: null, metric: 'kaas/clusters', limit: 5 }).execute();
    const both = (await client(owner).POST('/v1/user/tokens', { body: { name: 'both', scopes: ['*'], workspace_ids: [owner.workspaceId, doomed.id] } })) as {
      id: string;
    };
    const only = (await client(owner).POST('/v1/user/tokens', { body: { name: 'only', scopes: ['*'], workspace_ids: [doomed.id] } })) as {
      id: string;
      token: string;
    };

    // Only its owner deletes it; a credential is something it holds.
    expect(await apiError(remove(admin, doomed.id))).toMatchObject({ status: 403, details: { required_role: 'owner', role: 'admin' } });
    expect((await apiError(remove(owner, doomed.id))).details).toEqual({ remaining: [{ kind: 'registry_credentials', count: 1, ids: [credential.id] }] });
    await client(owner).DELETE('/v1/registry/credentials/{id}', { params: { path: { id: credential.id } } });
    await remove(owner, doomed.id);

    expect(await apiError(client(owner).GET('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId: doomed.id } } }))).toMatchObject({ status: 404 });
    expect(await apiError(remove(owner, doomed.id))).toMatchObject({ status: 404 });
    for (const table of ['workspace_members', 'workspace_invitations', 'notifications', 'events', 'quota_overrides'] as const) {
      const left = await app.db.selectFrom(table).select('workspace_id').where('workspace_id', '=', doomed.id).execute();
      expect(left, table).toEqual([]);
    }
    expect((await client(owner).GET('/v1/user/tokens/{id}', { params: { path: { id: both.id } } })).workspace_ids).toEqual([owner.workspaceId]);
    expect((await client(owner).GET('/v1/user/tokens/{id}', { params: { path: { id: only.id } } })).workspace_ids).toEqual([]);
    // A token left with no workspace acts in none.
    expect((await createPlatformClient({ baseUrl: app.baseUrl, token: only.token, retry: false }).GET('/v1/workspaces', {})).data).toEqual([]);
  });

  it('the default workspace becomes the next oldest the owner owns; with none, no workspace', async () => {
    const owner = await newUser(app.db, clock);
    clock.advance(1);
    const second = await client(owner).POST('/v1/workspaces', { body: { name: 'second' } });
    const credential = () =>
      client(owner).POST('/v1/registry/credentials', {
        body: { name: `r-${Math.random().toString(36).slice(2, 8)}`, registry_url: 'ghcr.io', username: 'u', password: 'p' },
      });
    const inDefault = await credential();
    const where = async (id: string) =>
      (await app.db.selectFrom('registry_credentials').select('workspace_id').where('id', '=', id).executeTakeFirstOrThrow()).workspace_id;
    expect(await where(inDefault.id)).toBe(owner.workspaceId);
    await client(owner).DELETE('/v1/registry/credentials/{id}', { params: { path: { id: inDefault.id } } });
    await remove(owner, owner.workspaceId);
    const inSecond = await credential();
    expect(await where(inSecond.id)).toBe(second.id);
    await client(owner).DELETE('/v1/registry/credentials/{id}', { params: { path: { id: inSecond.id } } });
    await remove(owner, second.id);
    expect((await client(owner).GET('/v1/workspaces', {})).data).toEqual([]);
    expect((await client(owner).GET('/v1/registry/credentials', {})).data).toEqual([]);
    expect(await apiError(credential())).toMatchObject({ status: 422, param: 'X-Workspace-Id' });
    // A new workspace is the new default.
    const third = await client(owner).POST('/v1/workspaces', { body: { name: 'third' } });
    expect((await client(owner).GET('/v1/workspaces', {})).data.map((w) => w.id)).toEqual([third.id]);
  });
});
