// Open streams end when their caller's access ends: the events stream and the install log stream, each with a
// token revoked, a session logged out, a member removed, a role changed, and a token restricted to other
// workspaces. The periodic check is set far beyond these tests' time (STREAM_REAUTH_SECONDS=600): what ends a
// stream here is the change announced with PostgreSQL NOTIFY. The periodic check is in stream-reauth.test.ts.
import { createPlatformClient, PlatformAccessEndedError } from '@platform/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedSampleResources } from '../src/db/seed.ts';
import type { OperationMeta } from '../src/http/contract.ts';
import { streamAccessCheck } from '../src/http/stream-access.ts';
import type { Caller } from '../src/operations/types.ts';
import { recordEvent } from '../src/resources/events.ts';
import { createToken } from '../src/resources/tokens.ts';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer({ env: { STREAM_REAUTH_SECONDS: '600', EVENT_POLL_MS: '20' } });
const { clock } = app;

let owner: TestUser;
let installId: string;

beforeAll(async () => {
  owner = await newUser(app.db, clock, 'pro');
  const { productId } = await seedSampleResources(app.db, clock, owner, 'streams');
  const install = await call(app.baseUrl, 'POST', '/v1/installs', { token: owner.token, body: { product_id: productId, region_id: 'fsn1' } });
  expect(install.status).toBe(202);
  installId = install.body.id;
});

interface Block {
  event?: string;
  data?: string;
}

/** An open stream: its blocks as they come, and `ended`, which settles when the server closes it. */
async function openStream(path: string, token: string) {
  const abort = new AbortController();
  const response = await fetch(`${app.baseUrl}${path}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'x-workspace-id': owner.workspaceId },
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  const blocks: Block[] = [];
  const ended = (async () => {
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return blocks;
      text += decoder.decode(value, { stream: true });
      const parts = text.split('\n\n');
      text = parts.pop()!;
      for (const part of parts) {
        const fields = Object.fromEntries(part.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
        blocks.push({ event: fields.event, data: fields.data });
      }
    }
  })();
  ended.catch(() => {});
  return { blocks, ended, close: () => abort.abort() };
}

/** Settles with the blocks when the stream closes within `ms`, else with 'open'. */
const closedWithin = (stream: { ended: Promise<Block[]> }, ms: number) =>
  Promise.race([stream.ended, new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), ms))]);

/** The stream ends at once with one access_ended event giving `reason`, and nothing after it. */
async function expectAccessEnded(stream: { ended: Promise<Block[]> }, reason: string) {
  const blocks = await closedWithin(stream, 5000);
  expect(blocks).not.toBe('open');
  const last = (blocks as Block[]).at(-1)!;
  expect(last.event).toBe('access_ended');
  expect(JSON.parse(last.data!)).toMatchObject({ reason, message: expect.any(String) });
  expect((blocks as Block[]).filter((block) => block.event === 'access_ended')).toHaveLength(1);
}

/** A user who is a member of the owner's workspace with `role`, with a PAT minted through the API. */
async function memberWithPat(role: 'admin' | 'member' | 'viewer' = 'member') {
  const user = await newUser(app.db, clock);
  await app.db.insertInto('workspace_members').values({ workspace_id: owner.workspaceId, user_id: user.userId, role, created_at: clock.now() }).execute();
  const pat = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: 'stream' } });
  expect(pat.status).toBe(201);
  return { user, pat: pat.body as { id: string; token: string } };
}

const STREAMS = {
  'the events stream': () => '/v1/events/stream',
  'the install log stream': () => `/v1/installs/${installId}/logs`,
};

describe.each(Object.entries(STREAMS))('%s', (_name, pathOf) => {
  it('ends with unauthenticated when its PAT is revoked', async () => {
    const { user, pat } = await memberWithPat();
    const stream = await openStream(pathOf(), pat.token);
    expect(await closedWithin(stream, 300)).toBe('open');
    expect((await call(app.baseUrl, 'DELETE', `/v1/user/tokens/${pat.id}`, { token: user.token })).status).toBe(204);
    await expectAccessEnded(stream, 'unauthenticated');
  });

  it('ends with unauthenticated when its session logs out', async () => {
    const { user } = await memberWithPat();
    const { secret } = await createToken(app.db, clock, { userId: user.userId, kind: 'session', name: 'browser', expiresAt: null });
    const stream = await openStream(pathOf(), secret);
    expect(await closedWithin(stream, 300)).toBe('open');
    expect((await call(app.baseUrl, 'POST', '/v1/auth/logout', { token: secret })).status).toBe(204);
    await expectAccessEnded(stream, 'unauthenticated');
  });

  it('ends with membership_ended when the member is removed', async () => {
    const { user, pat } = await memberWithPat();
    const stream = await openStream(pathOf(), pat.token);
    expect(await closedWithin(stream, 300)).toBe('open');
    const removed = await call(app.baseUrl, 'DELETE', `/v1/workspaces/${owner.workspaceId}/members/${user.userId}`, { token: owner.token });
    expect(removed.status).toBe(204);
    await expectAccessEnded(stream, 'membership_ended');
  });

  it('ends with membership_ended when the member leaves', async () => {
    const { user, pat } = await memberWithPat();
    const stream = await openStream(pathOf(), pat.token);
    expect(await closedWithin(stream, 300)).toBe('open');
    expect((await call(app.baseUrl, 'POST', `/v1/workspaces/${owner.workspaceId}/leave`, { token: user.token })).status).toBe(204);
    await expectAccessEnded(stream, 'membership_ended');
  });

  it('stays open when the role is lowered to one the stream still allows (viewer), checked again at once', async () => {
    const { user, pat } = await memberWithPat('admin');
    const stream = await openStream(pathOf(), pat.token);
    const lowered = await call(app.baseUrl, 'PATCH', `/v1/workspaces/${owner.workspaceId}/members/${user.userId}`, {
      token: owner.token,
      body: { role: 'viewer' },
    });
    expect(lowered.status).toBe(200);
    expect(await closedWithin(stream, 1000)).toBe('open');
    stream.close();
  });

  it('is refused to a token restricted to other workspaces, and never opens', async () => {
    const user = await newUser(app.db, clock);
    await app.db
      .insertInto('workspace_members')
      .values({ workspace_id: owner.workspaceId, user_id: user.userId, role: 'member', created_at: clock.now() })
      .execute();
    const pat = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: 'own only', workspace_ids: [user.workspaceId] } });
    expect(pat.status).toBe(201);
    const reply = await call(app.baseUrl, 'GET', pathOf(), {
      token: pat.body.token,
      headers: { accept: 'text/event-stream', 'x-workspace-id': owner.workspaceId },
    });
    expect(reply.status).toBe(403);
  });
});

describe('the events stream after a change it is told of', () => {
  it('sends nothing of the workspace once the member is removed, not even an event recorded just before', async () => {
    const { user, pat } = await memberWithPat();
    const stream = await openStream('/v1/events/stream', pat.token);
    await call(app.baseUrl, 'DELETE', `/v1/workspaces/${owner.workspaceId}/members/${user.userId}`, { token: owner.token });
    await recordEvent(
      app.db,
      {
        type: 'cluster.created',
        workspace_id: owner.workspaceId,
        object_type: 'cluster',
        object_id: 'cl_after_removal',
        object: {
          id: 'cl_after_removal',
          name: 'after-removal',
          workspace_id: owner.workspaceId,
          region_id: 'fsn1',
          kaas: { version: 'v1.31', status: 'PROVISIONING', status_message: null },
          created_at: clock.now(),
        },
      },
      clock.now(),
    );
    await expectAccessEnded(stream, 'membership_ended');
    expect(stream.blocks.filter((block) => block.data?.includes('cl_after_removal'))).toEqual([]);
  });
});

describe('the client', () => {
  it('throws PlatformAccessEndedError with the reason and does not reconnect', async () => {
    const { user, pat } = await memberWithPat();
    let requests = 0;
    const api = createPlatformClient({
      baseUrl: app.baseUrl,
      token: pat.token,
      workspaceId: owner.workspaceId,
      retry: { maxRetries: 5, baseDelayMs: 10, maxDelayMs: 20 },
      fetch: (request) => {
        requests++;
        return fetch(request);
      },
    });
    for (const [name, open] of [
      ['events', () => api.streamEvents()],
      ['logs', () => api.streamInstallLogs(installId)],
    ] as const) {
      const before = requests;
      const iteration = (async () => {
        for await (const _ of open()) {
          // nothing is sent before the revocation in this workspace
        }
      })();
      const outcome = iteration.then(
        () => 'returned',
        (error: unknown) => error,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      if (name === 'logs') {
        await call(app.baseUrl, 'DELETE', `/v1/workspaces/${owner.workspaceId}/members/${user.userId}`, { token: owner.token });
      } else {
        await call(app.baseUrl, 'PATCH', `/v1/workspaces/${owner.workspaceId}/members/${user.userId}`, { token: owner.token, body: { role: 'viewer' } });
        await call(app.baseUrl, 'DELETE', `/v1/workspaces/${owner.workspaceId}/members/${user.userId}`, { token: owner.token });
      }
      const error = await outcome;
      expect(error).toBeInstanceOf(PlatformAccessEndedError);
      expect(error).toMatchObject({ reason: 'membership_ended', message: expect.stringContaining(owner.workspaceId) });
      expect(requests - before).toBe(1);
      await app.db
        .insertInto('workspace_members')
        .values({ workspace_id: owner.workspaceId, user_id: user.userId, role: 'member', created_at: clock.now() })
        .execute();
    }
  });
});

describe('the check itself', () => {
  const meta = (requiredRole: OperationMeta['requiredRole'], requiredScope = 'events:read') =>
    ({ operationId: 'streamEvents', requiredRole, requiredScope }) as OperationMeta;
  const authenticateAs = (caller: Partial<Caller>) => async () => ({ kind: 'pat', tokenId: 'tok_x', scopes: 'all', workspaceIds: null, ...caller }) as Caller;

  it('tells a role below the stream’s apart from a membership that ended', async () => {
    const { user } = await memberWithPat('viewer');
    const caller = { userId: user.userId };
    expect(await streamAccessCheck(app.db, meta('viewer'), owner.workspaceId, authenticateAs(caller))()).toBeUndefined();
    expect(await streamAccessCheck(app.db, meta('member'), owner.workspaceId, authenticateAs(caller))()).toMatchObject({ reason: 'role_lowered' });
    expect(await streamAccessCheck(app.db, meta('viewer'), 'ws_elsewhere', authenticateAs(caller))()).toMatchObject({
      reason: 'membership_ended',
    });
  });

  it('applies the token’s workspace restriction and scopes as they are now', async () => {
    const { user } = await memberWithPat();
    const check = (caller: Partial<Caller>) =>
      streamAccessCheck(app.db, meta('viewer'), owner.workspaceId, authenticateAs({ userId: user.userId, ...caller }))();
    expect(await check({ workspaceIds: [user.workspaceId] })).toMatchObject({ reason: 'membership_ended' });
    expect(await check({ scopes: ['clusters:read'] })).toMatchObject({ reason: 'scope_missing' });
    expect(await check({ scopes: ['events:write'] })).toBeUndefined();
  });
});
