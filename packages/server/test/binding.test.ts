// The binding (src/http/) owns the request's context: it resolves the workspace a request acts in once and hands it
// to the handler (input.workspace), and it applies idempotency wherever the contract declares the idempotency-key
// header. Handlers do neither themselves: a source scan of operations/ and the layers below finds no call that
// resolves a workspace or wraps idempotency, and the binding's handler is idempotent for every such operation.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { OperationId } from '@platform/api-types';
import { beforeAll, describe, expect, it } from 'vitest';
import { createAuthorizer } from '../src/http/authorize.ts';
import { bindHandler } from '../src/http/bind-handler.ts';
import { loadContract, type OperationMeta } from '../src/http/contract.ts';
import { workspaceSourceOf } from '../src/http/workspace.ts';
import type { HandlerEnv, OperationInput } from '../src/operations/types.ts';
import { newUser, TestClock, type TestUser, useTestDatabase } from './support.ts';

const SRC = join(import.meta.dirname, '../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'migrations' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('no handler resolves a workspace or wraps idempotency', () => {
  /** Resolving or checking the request's workspace, reading the header it comes in, or keying a request. */
  const RESOLVES = /\b(?:resolveWorkspace|checkNamedWorkspace|withIdempotencyKey|requestHash)\s*\(|\[\s*'X-Workspace-Id'\s*\]/g;
  // The binding (http/) does it once; tenancy.ts defines the resolution and idempotency.ts the keying.
  const ALLOWED = (path: string) => path.startsWith('http/') || path === 'services/tenancy.ts' || path === 'services/idempotency.ts';

  it('finds no such call outside the binding', () => {
    const files = sourceFiles(SRC).map((file) => ({ path: relative(SRC, file), text: readFileSync(file, 'utf8') }));
    expect(files.filter((f) => f.path.startsWith('operations/')).length).toBeGreaterThan(5);
    const sites = files
      .filter((f) => !ALLOWED(f.path))
      .flatMap((f) => [...f.text.matchAll(RESOLVES)].map((m) => `${f.path}:${f.text.slice(0, m.index).split('\n').length} ${m[0]}`));
    expect(sites).toEqual([]);
  });

  it('would see them (the pattern is not blind)', () => {
    const samples = [
      "await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });",
      'await checkNamedWorkspace(db, caller, header);',
      'withIdempotencyKey(env.db, env.clock, scope, work)',
      "requestHash('createInstall', {})",
      "input.headers[ 'X-Workspace-Id' ]",
    ];
    expect(samples.filter((s) => !new RegExp(RESOLVES.source).test(s))).toEqual([]);
    expect(new RegExp(RESOLVES.source).test('createCluster(db, workspace, body)')).toBe(false);
  });
});

describe('idempotency from the binding', () => {
  const database = useTestDatabase();
  const clock = new TestClock();
  let user: TestUser;
  let operations: OperationMeta[];

  beforeAll(async () => {
    user = await newUser(database.db, clock, 'pro');
    operations = [...(await loadContract()).operations.values()];
  });

  /** A handler that counts its runs and answers which run it was, with a header of its own. */
  function counting() {
    let runs = 0;
    const handler = async () => ({ status: 202, body: { run: ++runs }, headers: { Location: `/v1/installs/ins_${runs}` } });
    return { handler, runs: () => runs };
  }

  const inputFor = (key: string | undefined) =>
    ({
      params: { id: 'ins_1' },
      query: {},
      headers: key === undefined ? {} : { 'idempotency-key': key },
      body: { name: 'same' },
      caller: { userId: user.userId, kind: 'session', tokenId: null, scopes: 'all', workspaceIds: null },
      workspace: undefined,
      requestId: 'req',
      signal: new AbortController().signal,
      origin: 'http://127.0.0.1',
    }) as unknown as OperationInput<OperationId>;

  it('runs an operation declaring idempotency-key once per key and replays its answer, headers included', async () => {
    const declaring = operations.filter((meta) => meta.headerNames.has('idempotency-key'));
    expect(declaring.map((meta) => meta.operationId).sort()).toEqual(['createInstall', 'updateInstall']);
    for (const meta of declaring) {
      const { handler, runs } = counting();
      const bound = bindHandler(meta, { kind: 'none' }, handler);
      const env = { db: database.db, clock } as unknown as HandlerEnv;
      const key = `binding-${meta.operationId}`;
      const first = await bound(inputFor(key), env);
      const again = await bound(inputFor(key), env);
      expect(first).toEqual({ status: 202, body: { run: 1 }, headers: { Location: '/v1/installs/ins_1' } });
      expect(again).toEqual({ status: 202, body: { run: 1 }, headers: { Location: '/v1/installs/ins_1', 'Idempotent-Replayed': 'true' } });
      expect(runs()).toBe(1);
      // Without a key, each request runs.
      await bound(inputFor(undefined), env);
      expect(runs()).toBe(2);
    }
  });

  it('leaves an operation without the header as it is', () => {
    const meta = operations.find((m) => m.operationId === 'getInstall')!;
    const { handler } = counting();
    expect(bindHandler(meta, workspaceSourceOf(meta), handler)).toBe(handler);
  });
});

describe('the workspace of a path, checked by the binding', () => {
  const database = useTestDatabase();
  const clock = new TestClock();

  it("answers a non-member 404 for every operation under a path's {workspaceId}, a viewer's too, before its handler runs", async () => {
    const member = await newUser(database.db, clock, 'pro');
    const stranger = await newUser(database.db, clock, 'pro');
    const operations = [...(await loadContract()).operations.values()];
    const authorize = createAuthorizer(database.db, operations);
    const underPath = operations.filter((meta) => meta.path.includes('{workspaceId}'));
    // getWorkspace, listWorkspaceMembers and leaveWorkspace are a viewer's: a new list under the path is one too.
    expect(
      underPath
        .filter((meta) => meta.requiredRole === 'viewer')
        .map((meta) => meta.operationId)
        .sort(),
    ).toEqual(['getWorkspace', 'leaveWorkspace', 'listWorkspaceMembers']);
    const callerOf = (user: TestUser) => ({ userId: user.userId, kind: 'session', tokenId: null, scopes: 'all', workspaceIds: null }) as const;
    for (const meta of underPath) {
      const params = { workspaceId: member.workspaceId, userId: member.userId, invitationId: 'inv_1' };
      await expect(authorize(meta, params, callerOf(stranger), undefined), meta.operationId).rejects.toMatchObject({ status: 404 });
    }
    // A member gets past it to the operation (an owner holds every role).
    for (const meta of underPath) await expect(authorize(meta, { workspaceId: member.workspaceId }, callerOf(member), undefined)).resolves.toBeUndefined();
  });
});
