// What a request reads of its token is kept for the token's next requests (services/access-cache.ts), and a change
// of access still reaches the next request: at once when this process made it, on the announcement when another
// process did, and after a second at the latest when nobody announced it.
import { describe, expect, it } from 'vitest';
import { AccessCache } from '../src/services/access-cache.ts';
import { type AccessChanges, announceAccessChange, listenForAccessChanges } from '../src/services/access-changes.ts';
import { call, eventually, newUser, serverLogger, startTestServer, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;

const listClusters = (token: string, workspaceId: string) => call(app.baseUrl, 'GET', '/v1/clusters', { token, headers: { 'x-workspace-id': workspaceId } });

describe('a token read by a request', () => {
  it('is kept for its next requests, for a second at most when nothing announces a change', async () => {
    const user = await newUser(app.db, clock);
    expect((await listClusters(user.token, user.workspaceId)).status).toBe(200);
    // Removed by hand, as no part of the server does: nothing is announced.
    await app.db.deleteFrom('tokens').where('user_id', '=', user.userId).execute();
    const removedAt = performance.now();
    expect((await listClusters(user.token, user.workspaceId)).status).toBe(200);
    await eventually(
      () => listClusters(user.token, user.workspaceId),
      (reply) => reply.status === 401,
      'the token removed by hand is refused',
      3000,
    );
    expect(performance.now() - removedAt).toBeLessThan(2000);
  });

  it('is refused by the next request once revoked through the API, every time', async () => {
    const user = await newUser(app.db, clock);
    for (let i = 0; i < 10; i++) {
      const created = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: `kept-${i}`, scopes: ['clusters:read'] } });
      expect(created.status).toBe(201);
      for (let use = 0; use < 3; use++) expect((await listClusters(created.body.token, user.workspaceId)).status).toBe(200);
      expect((await call(app.baseUrl, 'DELETE', `/v1/user/tokens/${created.body.id}`, { token: user.token })).status).toBe(204);
      expect((await listClusters(created.body.token, user.workspaceId)).status).toBe(401);
    }
  });

  it('stops acting in a workspace with the next request once the membership is removed through the API', async () => {
    const owner = await newUser(app.db, clock, 'pro');
    for (let i = 0; i < 5; i++) {
      const member = await newUser(app.db, clock);
      await app.db
        .insertInto('workspace_members')
        .values({ workspace_id: owner.workspaceId, user_id: member.userId, role: 'member', created_at: clock.now() })
        .execute();
      for (let use = 0; use < 3; use++) expect((await listClusters(member.token, owner.workspaceId)).status).toBe(200);
      const removed = await call(app.baseUrl, 'DELETE', `/v1/workspaces/${owner.workspaceId}/members/${member.userId}`, { token: owner.token });
      expect(removed.status).toBe(204);
      const after = await listClusters(member.token, owner.workspaceId);
      expect(after.status).toBe(403);
    }
  });

  it('is not kept for a workspace its user is no member of, so joining one takes effect at once', async () => {
    const owner = await newUser(app.db, clock, 'pro');
    const joining = await newUser(app.db, clock);
    expect((await listClusters(joining.token, owner.workspaceId)).status).toBe(403);
    await app.db
      .insertInto('workspace_members')
      .values({ workspace_id: owner.workspaceId, user_id: joining.userId, role: 'viewer', created_at: clock.now() })
      .execute();
    expect((await listClusters(joining.token, owner.workspaceId)).status).toBe(200);
  });
});

describe('a change of access made by a request', () => {
  it('is heard before it is answered, however late announcements arrive', async () => {
    const listener = await listenForAccessChanges(app.database.url, serverLogger());
    // Announcements reach the cache half a second late, unless the server asks whether all were heard.
    const pending = new Set<() => void>();
    const late: AccessChanges = {
      watch: listener.watch,
      watchAll: (watcher) =>
        listener.watchAll(() => {
          const hear = () => {
            pending.delete(hear);
            watcher();
          };
          pending.add(hear);
          setTimeout(hear, 500);
        }),
      get listening() {
        return listener.listening;
      },
      heard: async () => {
        await listener.heard();
        for (const hear of [...pending]) hear();
      },
      close: listener.close,
    };
    const server = await startTestServer(app.db, clock, {}, { accessChanges: late });
    try {
      const user = await newUser(app.db, clock);
      const created = await call(server.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: 'late', scopes: ['clusters:read'] } });
      const list = () => call(server.baseUrl, 'GET', '/v1/clusters', { token: created.body.token, headers: { 'x-workspace-id': user.workspaceId } });
      expect((await list()).status).toBe(200);
      expect((await call(server.baseUrl, 'DELETE', `/v1/user/tokens/${created.body.id}`, { token: user.token })).status).toBe(204);
      expect((await list()).status).toBe(401);
    } finally {
      await server.close();
      await listener.close();
    }
  });
});

describe('the cache of access', () => {
  /** The process's announcements as a stand-in whose connection is up or down as the test says. */
  function changesWhile(up: () => boolean): AccessChanges & { hear(): void } {
    const watchers: (() => void)[] = [];
    return {
      watch: () => () => {},
      watchAll: (watcher) => watchers.push(watcher),
      get listening() {
        return up();
      },
      heard: async () => {},
      close: async () => {},
      hear: () => {
        for (const watcher of watchers) watcher();
      },
    };
  }

  /** Reads `key` through the cache: what was kept, else `value`, kept unless `keep` is false. */
  const reader = (cache: AccessCache<string>) => ({
    read: (key: string, value: string | undefined, keep = true) =>
      cache.read(
        key,
        async () => value,
        () => true,
        () => keep,
      ),
  });

  it('forgets everything on an announcement another process makes, long before its time is up', async () => {
    const listener = await listenForAccessChanges(app.database.url, serverLogger());
    try {
      const cache = reader(new AccessCache<string>(listener, 60_000));
      expect(await cache.read('key', 'first')).toBe('first');
      expect(await cache.read('key', 'second')).toBe('first');
      // Another connection, as another server process: its announcement reaches this one's listener.
      await announceAccessChange(app.db, ['usr_someone']);
      await eventually(
        () => cache.read('key', 'after the change'),
        (value) => value === 'after the change',
        'the announcement is heard',
        2000,
      );
    } finally {
      await listener.close();
    }
  });

  it('keeps nothing while announcements cannot be heard, nothing read before one was heard, nothing it is told not to', async () => {
    let up = false;
    const changes = changesWhile(() => up);
    const cache = new AccessCache<string>(changes, 60_000);
    const through = reader(cache);
    expect(await through.read('key', 'down')).toBe('down');
    expect(await through.read('key', 'down again')).toBe('down again');
    up = true;
    // A change heard while the value is read: it is answered, not kept.
    let finish: (value: string) => void = () => {};
    const reading = cache.read(
      'key',
      () => new Promise<string>((resolve) => (finish = resolve)),
      () => true,
      () => true,
    );
    changes.hear();
    finish('read before the change');
    expect(await reading).toBe('read before the change');
    expect(await through.read('key', 'read after')).toBe('read after');
    expect(await through.read('key', 'not read')).toBe('read after');
    expect(await through.read('other', 'not kept', false)).toBe('not kept');
    expect(await through.read('other', 'read again')).toBe('read again');
    // The connection drops: what was kept is not used until announcements are heard again.
    up = false;
    expect(await through.read('key', 'while down')).toBe('while down');
  });

  it('shares one read among the requests that ask at once, and none begun before a change', async () => {
    const changes = changesWhile(() => true);
    const cache = new AccessCache<string>(changes, 60_000);
    let reads = 0;
    const finishes: ((value: string) => void)[] = [];
    const slow = () => {
      reads++;
      return new Promise<string>((resolve) => finishes.push(resolve));
    };
    const first = [
      cache.read(
        'key',
        slow,
        () => true,
        () => true,
      ),
      cache.read(
        'key',
        slow,
        () => true,
        () => true,
      ),
    ];
    expect(reads).toBe(1);
    changes.hear();
    const after = cache.read(
      'key',
      slow,
      () => true,
      () => true,
    );
    expect(reads).toBe(2);
    finishes[0]!('before');
    finishes[1]!('after');
    expect(await Promise.all(first)).toEqual(['before', 'before']);
    expect(await after).toBe('after');
  });

  it('reads again what it says is no longer usable', async () => {
    const cache = new AccessCache<string>(
      changesWhile(() => true),
      60_000,
    );
    expect(
      await cache.read(
        'key',
        async () => 'expired',
        () => true,
        () => true,
      ),
    ).toBe('expired');
    expect(
      await cache.read(
        'key',
        async () => 'fresh',
        (kept) => kept !== 'expired',
        () => true,
      ),
    ).toBe('fresh');
  });
});
