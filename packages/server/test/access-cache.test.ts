// What a request reads of its token is kept for the token's next requests (services/access-cache.ts), and a change
// of access still reaches the next request: at once when this process made it, on the database's announcement
// when another process or a hand-written statement did, and not after the listener's deadline when announcements
// cannot be heard (a connection gone silent).
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../src/db/schema.ts';
import { AccessCache } from '../src/services/access-cache.ts';
import { type AccessChanges, listenForAccessChanges } from '../src/services/access-changes.ts';
import { call, eventually, newUser, serverLogger, startTestServer, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;

const listClusters = (token: string, workspaceId: string) => call(app.baseUrl, 'GET', '/v1/clusters', { token, headers: { 'x-workspace-id': workspaceId } });

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

/** Deletes a new user's token with a plain statement, as no part of the server does: only the database announces it. */
async function revokeByHand(db: Kysely<Database>): Promise<void> {
  const user = await newUser(db, clock);
  await db.deleteFrom('tokens').where('user_id', '=', user.userId).execute();
}

/**
 * A TCP proxy to the database that can be frozen: every connection through it then forwards nothing, ever again,
 * and is not closed, as when a NAT or load balancer drops an idle connection's mapping or a failover leaves it
 * black-holed. Connections made once it is resumed work.
 */
async function freezableProxy(databaseUrl: string) {
  const target = new URL(databaseUrl);
  let frozen = false;
  const connections = new Set<{ sockets: net.Socket[]; silent: boolean }>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(Number(target.port || 5432), target.hostname);
    const connection = { sockets: [inbound, outbound], silent: frozen };
    connections.add(connection);
    const close = () => {
      inbound.destroy();
      outbound.destroy();
      connections.delete(connection);
    };
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      from.on('data', (data) => {
        if (!connection.silent) to.write(data);
      });
      from.on('close', close);
      from.on('error', close);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(databaseUrl);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as net.AddressInfo).port);
  return {
    url: proxied.toString(),
    freeze: () => {
      frozen = true;
      for (const connection of connections) connection.silent = true;
    },
    resume: () => (frozen = false),
    close: async () => {
      for (const connection of connections) for (const socket of connection.sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A listener quick to find its connection silent, so a test need not wait the default deadline. */
const QUICK = { heartbeatMs: 100, deadlineMs: 1000, reconnectMs: 100 };

describe('a token read by a request', () => {
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

  it('forgets everything on an announcement another process makes, long before its time is up', async () => {
    const listener = await listenForAccessChanges(app.database.url, serverLogger());
    try {
      const cache = reader(new AccessCache<string>(listener, 60_000));
      expect(await cache.read('key', 'first')).toBe('first');
      expect(await cache.read('key', 'second')).toBe('first');
      // Another connection, as another server process: the database's announcement reaches this one's listener.
      await revokeByHand(app.db);
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

  it('keeps a reading for its time at most, whatever is heard', async () => {
    const cache = reader(
      new AccessCache<string>(
        changesWhile(() => true),
        100,
      ),
    );
    expect(await cache.read('key', 'first')).toBe('first');
    expect(await cache.read('key', 'second')).toBe('first');
    await sleep(150);
    expect(await cache.read('key', 'after its time')).toBe('after its time');
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

describe('a change of access written by a plain statement', () => {
  it('is announced by the database: the next request once it is heard meets it', async () => {
    const listener = await listenForAccessChanges(app.database.url, serverLogger());
    const server = await startTestServer(app.db, clock, {}, { accessChanges: listener });
    const list = (token: string, workspaceId: string) => call(server.baseUrl, 'GET', '/v1/clusters', { token, headers: { 'x-workspace-id': workspaceId } });
    try {
      const user = await newUser(app.db, clock);
      for (let use = 0; use < 3; use++) expect((await list(user.token, user.workspaceId)).status).toBe(200);
      await app.db.deleteFrom('tokens').where('user_id', '=', user.userId).execute();
      await listener.heard();
      expect((await list(user.token, user.workspaceId)).status).toBe(401);

      const owner = await newUser(app.db, clock, 'pro');
      const member = await newUser(app.db, clock);
      await app.db
        .insertInto('workspace_members')
        .values({ workspace_id: owner.workspaceId, user_id: member.userId, role: 'member', created_at: clock.now() })
        .execute();
      for (let use = 0; use < 3; use++) expect((await list(member.token, owner.workspaceId)).status).toBe(200);
      await app.db.deleteFrom('workspace_members').where('workspace_id', '=', owner.workspaceId).where('user_id', '=', member.userId).execute();
      await listener.heard();
      expect((await list(member.token, owner.workspaceId)).status).toBe(403);
    } finally {
      await server.close();
      await listener.close();
    }
  });

  it('is announced for what takes access away, not for a token being used', async () => {
    const listener = await listenForAccessChanges(app.database.url, serverLogger());
    let announcements = 0;
    listener.watchAll(() => announcements++);
    try {
      const user = await newUser(app.db, clock);
      await app.db
        .updateTable('tokens')
        .set({ last_used_at: clock.now(), expires_at: sql`expires_at + 86400`, last_address: '192.0.2.1', user_agent: 'test' })
        .where('user_id', '=', user.userId)
        .execute();
      await listener.heard();
      expect(announcements).toBe(0);
      await app.db
        .updateTable('tokens')
        .set({ expires_at: clock.now() + 60 })
        .where('user_id', '=', user.userId)
        .execute();
      await listener.heard();
      expect(announcements).toBe(1);
      await app.db.updateTable('workspace_members').set({ role: 'viewer' }).where('user_id', '=', user.userId).execute();
      await listener.heard();
      expect(announcements).toBe(2);
    } finally {
      await listener.close();
    }
  });
});

describe('a listener whose connection goes silent', () => {
  it('stops the cache within its deadline, and keeps again once it has reconnected', async () => {
    const proxy = await freezableProxy(app.database.url);
    const listener = await listenForAccessChanges(proxy.url, serverLogger(), QUICK);
    try {
      const cache = reader(new AccessCache<string>(listener, 60_000));
      expect(await cache.read('key', 'first')).toBe('first');
      expect(await cache.read('key', 'second')).toBe('first');
      proxy.freeze();
      // Another process's revocation, which this listener cannot hear.
      await revokeByHand(app.db);
      await sleep(QUICK.deadlineMs);
      expect(await cache.read('key', 'after the deadline')).toBe('after the deadline');
      expect(listener.listening).toBe(false);
      proxy.resume();
      await eventually(
        () => listener.listening,
        (listening) => listening,
        'the listener is back',
        5000,
      );
      expect(await cache.read('key', 'kept again')).toBe('kept again');
      expect(await cache.read('key', 'not read')).toBe('kept again');
      await revokeByHand(app.db);
      await eventually(
        () => cache.read('key', 'after the next change'),
        (value) => value === 'after the next change',
        'the reconnected listener hears',
        2000,
      );
    } finally {
      await listener.close();
      await proxy.close();
    }
  });
});

describe('open streams when the listener comes back', () => {
  it('check their callers at once: a revocation made while it was away ends them', async () => {
    const proxy = await freezableProxy(app.database.url);
    const listener = await listenForAccessChanges(proxy.url, serverLogger(), QUICK);
    // The periodic check is far off: only the listener can end the stream in time.
    const server = await startTestServer(app.db, clock, { STREAM_REAUTH_SECONDS: '60' }, { accessChanges: listener });
    const abort = new AbortController();
    try {
      const user = await newUser(app.db, clock);
      const response = await fetch(`${server.baseUrl}/v1/events/stream`, {
        headers: { authorization: `Bearer ${user.token}`, accept: 'text/event-stream', 'x-workspace-id': user.workspaceId },
        signal: abort.signal,
      });
      expect(response.status).toBe(200);
      const text = response.text().catch(() => 'still open');
      proxy.freeze();
      await eventually(
        () => listener.listening,
        (listening) => !listening,
        'the listener finds its connection silent',
        3000,
      );
      await app.db.deleteFrom('tokens').where('user_id', '=', user.userId).execute();
      proxy.resume();
      const resumedAt = Date.now();
      const timer = setTimeout(() => abort.abort(), 10_000);
      const ended = await text;
      clearTimeout(timer);
      expect(ended).toContain('event: access_ended');
      expect(JSON.parse(/event: access_ended\ndata: (.*)\n/.exec(ended)![1]!)).toMatchObject({ reason: 'unauthenticated' });
      expect(Date.now() - resumedAt).toBeLessThan(5000);
    } finally {
      abort.abort();
      await server.close();
      await listener.close();
      await proxy.close();
    }
  });
});
