// Workspace roles through the API: changing a role, transferring ownership, leaving, and the role being that of
// the workspace the request acts in (a resource's own workspace, whatever X-Workspace-Id says).
import { createPlatformClient, PlatformApiError } from '@platform/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedSampleResources } from '../src/db/seed.ts';
import type { Role } from '../src/services/roles.ts';
import { createTestDatabase, newUser, startTestServer, TestClock, type TestDatabase, type TestServer, type TestUser } from './support.ts';

let database: TestDatabase;
let server: TestServer;
const clock = new TestClock();

const client = (user: TestUser, workspaceId?: string) =>
  createPlatformClient({ baseUrl: server.baseUrl, token: user.token, retry: false, ...(workspaceId ? { workspaceId } : {}) });

async function apiError(promise: Promise<unknown>): Promise<PlatformApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PlatformApiError);
  return error as PlatformApiError;
}

/** A new user who is a member of the owner's workspace with the role. */
async function joined(owner: TestUser, role: Role): Promise<TestUser> {
  const user = await newUser(database.db, clock);
  await database.db.insertInto('workspace_members').values({ workspace_id: owner.workspaceId, user_id: user.userId, role, created_at: clock.now() }).execute();
  return user;
}

/** The user's role in the workspace, as a member listing it sees it. */
const roleOf = async (asker: TestUser, workspaceId: string, user: TestUser) =>
  (await client(asker).GET('/v1/workspaces/{workspaceId}/members', { params: { path: { workspaceId } } })).data.find((m) => m.user_id === user.userId)?.role;

beforeAll(async () => {
  database = await createTestDatabase();
  server = await startTestServer(database.db, clock);
});
afterAll(async () => {
  await server?.close();
  await database?.drop();
});

describe('changing a role', () => {
  it('an admin changes a member’s role; the owner’s role changes only by transfer; a member changes none', async () => {
    const owner = await newUser(database.db, clock);
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
    const stranger = await newUser(database.db, clock);
    expect(
      await apiError(client(admin).PATCH('/v1/workspaces/{workspaceId}/members/{userId}', { params: path(stranger), body: { role: 'viewer' } })),
    ).toMatchObject({ status: 404 });
  });
});

describe('transferring ownership', () => {
  it('makes a member the owner and the previous owner an admin; only the owner transfers', async () => {
    const owner = await newUser(database.db, clock);
    const admin = await joined(owner, 'admin');
    const dana = await joined(owner, 'member');
    const workspaceId = owner.workspaceId;
    expect(
      await apiError(client(admin).POST('/v1/workspaces/{workspaceId}/transfer', { params: { path: { workspaceId } }, body: { user_id: admin.userId } })),
    ).toMatchObject({ status: 403, details: { required_role: 'owner', role: 'admin' } });
    const stranger = await newUser(database.db, clock);
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
    const row = await database.db.selectFrom('workspaces').select('owner_id').where('id', '=', workspaceId).executeTakeFirstOrThrow();
    expect(row.owner_id).toBe(dana.userId);
    // The previous owner may leave now; the new one may not.
    await client(owner).POST('/v1/workspaces/{workspaceId}/leave', { params: { path: { workspaceId } } });
    expect(await apiError(client(dana).POST('/v1/workspaces/{workspaceId}/leave', { params: { path: { workspaceId } } }))).toMatchObject({ status: 409 });
  });
});

describe('leaving', () => {
  it('a member leaves and sees the workspace no more; the owner is told to transfer first', async () => {
    const owner = await newUser(database.db, clock);
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
    const owner = await newUser(database.db, clock, 'pro');
    const viewer = await joined(owner, 'viewer');
    const { clusterId, configId } = await seedSampleResources(database.db, clock, owner);
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
  const emailOf = async (user: TestUser) =>
    (await database.db.selectFrom('users').select('email').where('id', '=', user.userId).executeTakeFirstOrThrow()).email;
  const invite = (owner: TestUser, email: string, role?: 'admin' | 'member' | 'viewer') =>
    fetch(`${server.baseUrl}/v1/workspaces/${owner.workspaceId}/invitations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(role ? { email, role } : { email }),
    });

  it('answers alike whether or not the email has an account', async () => {
    const owner = await newUser(database.db, clock);
    const dana = await newUser(database.db, clock);
    const known = await invite(owner, await emailOf(dana));
    const unknown = await invite(owner, 'nobody-here@nowhere.example');
    expect([known.status, unknown.status]).toEqual([202, 202]);
    const shape = (response: Response) => response.json().then((body: Record<string, unknown>) => ({ ...body, id: undefined, email: undefined }));
    expect(await shape(known)).toEqual(await shape(unknown));
    expect([...known.headers.keys()].sort()).toEqual([...unknown.headers.keys()].sort());
  });

  it('the invitee lists, accepts with the role, or declines; nobody else can', async () => {
    const owner = await newUser(database.db, clock);
    const dana = await newUser(database.db, clock);
    const erin = await newUser(database.db, clock);
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

  it('a member who accepts keeps their role', async () => {
    const owner = await newUser(database.db, clock);
    const admin = await joined(owner, 'admin');
    const invitation = (await (await invite(owner, await emailOf(admin), 'viewer')).json()) as { id: string };
    expect(await client(admin).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: invitation.id } } })).toMatchObject({ role: 'admin' });
  });

  it('expires after 7 days', async () => {
    const owner = await newUser(database.db, clock);
    const dana = await newUser(database.db, clock);
    const invitation = (await (await invite(owner, await emailOf(dana))).json()) as { id: string; expires_at: number; created_at: number };
    expect(invitation.expires_at - invitation.created_at).toBe(7 * 24 * 60 * 60);
    clock.advance(7 * 24 * 60 * 60);
    expect((await client(dana).GET('/v1/user/invitations', {})).data).toEqual([]);
    expect(await apiError(client(dana).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: invitation.id } } }))).toMatchObject({ status: 404 });
  });
});
