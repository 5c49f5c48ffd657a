// The security matrix, generated from the contract: every operation without a token → 401 (except the ones the
// contract marks `security: []`, which must be exactly the device flow's first two steps and the health probes); every operation
// that names a resource by id, called by a user of another workspace → 404; every operation that takes
// X-Workspace-Id, called with a workspace the caller is not a member of → 403; every operation that declares
// `x-required-role`, called by every role of the workspace it acts in → 403 below that role, allowed from it up;
// every operation's scope (its security requirements), with a PAT lacking it → 403 and with a PAT of exactly it →
// past the check. A new operation is covered without a new test (a path naming a new kind of resource fails until
// fixtures.ts knows it).
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import { beforeAll, describe, expect, it } from 'vitest';
import { createToken } from '../src/resources/tokens.ts';
import { ROLES, type Role } from '../src/services/roles.ts';
import { ALL_SCOPES, type Scope } from '../src/services/scopes.ts';
import { buildWorld, idFor, type World } from './fixtures.ts';
import { call, newUser, useTestServer } from './support.ts';

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: { type?: string; minimum?: number };
}
interface Operation {
  operationId: string;
  'x-required-role'?: Role;
  'x-requires-workspace'?: boolean;
  parameters?: (Parameter | { $ref: string })[];
  requestBody?: { content: Record<string, { examples?: Record<string, { value: unknown }> }> };
  security?: unknown[];
}

const doc = definition as unknown as {
  paths: Record<string, Record<string, unknown>>;
  components: { parameters: Record<string, Parameter> };
};

const resolve = (p: Parameter | { $ref: string }): Parameter => ('$ref' in p ? doc.components.parameters[p.$ref.split('/').pop()!]! : p);

const operations = Object.entries(doc.paths).flatMap(([path, item]) => {
  const shared = ((item.parameters ?? []) as (Parameter | { $ref: string })[]).map(resolve);
  return Object.entries(item)
    .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map(([method, op]) => {
      const operation = op as Operation;
      return { path, method: method.toUpperCase(), operation, parameters: [...shared, ...(operation.parameters ?? []).map(resolve)] };
    });
});

let world: World;
const app = useTestServer();
const { clock } = app;

beforeAll(async () => {
  world = await buildWorld(app.db, clock);
});

/**
 * Path parameters that name nothing of a workspace, with the value the matrix sends: a quota's metric, and a device
 * sign-in's user code (an unknown one: the look-up answers 404 once the checks this matrix tests have passed).
 */
const UNOWNED: Record<string, string> = { metric: 'kaas/clusters', userCode: 'WDJB-MJHT' };

/** A request that passes validation: path ids from the world, required query parameters, the first body example. */
function request(op: (typeof operations)[number], token: string | undefined, workspaceId?: string) {
  let url = op.path;
  for (const p of op.parameters.filter((p) => p.in === 'path')) {
    const id = UNOWNED[p.name] ?? idFor(world, op.path, p.name);
    if (id === undefined) throw new Error(`fixtures.ts has no resource for ${op.path} {${p.name}}`);
    url = url.replace(`{${p.name}}`, encodeURIComponent(id));
  }
  const query = new URLSearchParams();
  for (const p of op.parameters.filter((p) => p.in === 'query' && p.required)) {
    query.set(p.name, p.name === 'cluster_id' ? world.ids.cluster : 'x');
  }
  const example = Object.values(op.operation.requestBody?.content['application/json']?.examples ?? {})[0]?.value;
  const headers: Record<string, string> = { accept: 'application/json, text/event-stream' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (workspaceId) headers['x-workspace-id'] = workspaceId;
  if (example !== undefined) headers['content-type'] = 'application/json';
  return fetch(`${app.baseUrl}${url}${query.size ? `?${query}` : ''}`, {
    method: op.method,
    headers,
    ...(example === undefined ? {} : { body: JSON.stringify(example) }),
  });
}

// `security: []` opts an operation out of authentication; the list is pinned, so a new public operation is a
// deliberate change to this test rather than an accident.
const isPublic = (op: (typeof operations)[number]) => Array.isArray(op.operation.security) && op.operation.security.length === 0;
const publicOperations = operations.filter(isPublic);

describe('only the device flow needs no token', () => {
  it('the public operations are requestDeviceCode and pollDeviceToken', () => {
    expect(publicOperations.map((op) => op.operation.operationId).sort()).toEqual(['pollDeviceToken', 'requestDeviceCode']);
  });
  it.each(publicOperations.map((op) => [op.operation.operationId, op] as const))('%s answers without a token', async (_id, op) => {
    const response = await request(op, undefined);
    expect(response.status).not.toBe(401);
    expect(response.status).toBeLessThan(500);
    expect(response.headers.get('www-authenticate')).toBeNull();
  });
});

describe('every operation without a token is 401', () => {
  it.each(operations.filter((op) => !isPublic(op)).map((op) => [op.operation.operationId, op] as const))('%s', async (_id, op) => {
    const response = await request(op, undefined);
    expect(response.status).toBe(401);
    // No token sent: the bare challenge, no error code (RFC 6750 §3.1).
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="platform"');
    expect(await response.json()).toMatchObject({ error: { code: 'unauthorized' } });
  });
});

const byId = operations.filter((op) => op.parameters.some((p) => p.in === 'path' && !(p.name in UNOWNED)));

describe('every operation on another workspace’s resource is 404', () => {
  it('covers every path that names a resource', () => {
    for (const op of byId) {
      for (const p of op.parameters.filter((p) => p.in === 'path' && !(p.name in UNOWNED))) {
        expect(idFor(world, op.path, p.name), `fixtures.ts has no resource for ${op.path} {${p.name}}`).toBeDefined();
      }
    }
  });
  it.each(byId.map((op) => [op.operation.operationId, op] as const))('%s', async (_id, op) => {
    const response = await request(op, world.bob.token);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: 'not_found' } });
  });
});

const workspaceScoped = operations.filter((op) => op.parameters.some((p) => p.in === 'header' && p.name === 'X-Workspace-Id'));

describe('every operation with a foreign X-Workspace-Id is 403', () => {
  it.each(workspaceScoped.map((op) => [op.operation.operationId, op] as const))('%s', async (_id, op) => {
    const response = await request(op, world.alice.token, world.bob.workspaceId);
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ error: { code: 'forbidden', param: 'X-Workspace-Id' } });
  });
});

const actingInWorkspace = workspaceScoped.filter((op) => op.operation['x-requires-workspace'] === true);

describe('every operation that acts in a workspace, called acting in none, is 422 naming X-Workspace-Id', () => {
  it('is every change scoped by X-Workspace-Id, and the events stream; a machine request acts in its cluster’s workspace', () => {
    // Scoped by the header alone: no resource addressed in the path.
    const changes = workspaceScoped.filter((op) => op.method !== 'GET' && !op.path.includes('{')).map((op) => op.operation.operationId);
    const marked = actingInWorkspace.map((op) => op.operation.operationId);
    expect(changes.filter((id) => !marked.includes(id))).toEqual(['requestMachine']);
    expect(marked.filter((id) => !changes.includes(id))).toEqual(['streamEvents']);
  });
  it.each(actingInWorkspace.map((op) => [op.operation.operationId, op] as const))('%s', async (_id, op) => {
    // A user whose only workspace was deleted: none named, none owned.
    const user = await newUser(app.db, clock, 'pro');
    expect((await call(app.baseUrl, 'DELETE', `/v1/workspaces/${user.workspaceId}`, { token: user.token })).status).toBe(204);
    const response = await request(op, user.token);
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ error: { code: 'validation_error', param: 'X-Workspace-Id' } });
  });
});

// The restriction matrix: Alice's token with every scope, restricted to her second workspace, on everything of her
// first: a workspace named in the header or the path is 403 naming the restriction; a resource addressed by id is
// 404 like a missing one, and so are the user's tokens and sessions wider than the restriction (Alice's first
// token, of every workspace, and her session); without X-Workspace-Id a list answers nothing of the first
// workspace, nor of what lies beyond the restriction at the user level (tokens, sessions, the user's audit events).
async function restrictedToSecond(): Promise<string> {
  const init = { userId: world.alice.userId, kind: 'pat' as const, name: 'restricted', expiresAt: null, workspaceIds: [world.aliceSecondWorkspaceId] };
  return (await createToken(app.db, clock, init)).secret;
}
const restrictionRefusal = (param: string) => ({ error: { code: 'forbidden', param, details: { workspace_ids: [world.aliceSecondWorkspaceId] } } });

describe('a token restricted to another workspace', () => {
  const inPath = operations.filter((op) => op.parameters.some((p) => p.in === 'path' && p.name === 'workspaceId'));
  const addressed = byId.filter((op) => !op.path.includes('{workspaceId}'));
  const isStream = (op: (typeof operations)[number]) => /\/(stream|logs)$/.test(op.path);
  const userLists = operations.filter((op) => op.method === 'GET' && /^\/v1\/user\/(tokens|sessions|audit_events)$/.test(op.path));
  const defaults = workspaceScoped.filter(
    (op) => op.method === 'GET' && !isStream(op) && !op.parameters.some((p) => p.in === 'path' || (p.in === 'query' && p.required)),
  );

  it('covers the operations of every kind', () => {
    expect(inPath.length).toBeGreaterThan(5);
    expect(addressed.map((op) => op.operation.operationId)).toEqual(
      expect.arrayContaining([
        'getCluster',
        'deleteInstall',
        'acceptInvitation',
        'markNotificationRead',
        'getUserToken',
        'revokeUserToken',
        'revokeUserSession',
      ]),
    );
    expect(defaults.map((op) => op.operation.operationId)).toEqual(expect.arrayContaining(['listClusters', 'listEvents', 'listQuotas']));
    expect(userLists.map((op) => op.operation.operationId)).toEqual(expect.arrayContaining(['listUserTokens', 'listUserSessions', 'listUserAuditEvents']));
  });
  it.each(workspaceScoped.map((op) => [op.operation.operationId, op] as const))('%s with the other in X-Workspace-Id is 403', async (_id, op) => {
    const response = await request(op, await restrictedToSecond(), world.alice.workspaceId);
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject(restrictionRefusal('X-Workspace-Id'));
  });
  it.each(inPath.map((op) => [op.operation.operationId, op] as const))('%s with the other in its path is 403', async (_id, op) => {
    const response = await request(op, await restrictedToSecond());
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject(restrictionRefusal('workspaceId'));
  });
  it.each(addressed.map((op) => [op.operation.operationId, op] as const))('%s on a resource of the other is 404', async (_id, op) => {
    const response = await request(op, await restrictedToSecond());
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: 'not_found' } });
  });
  it.each(userLists.map((op) => [op.operation.operationId, op] as const))('%s lists nothing beyond the restriction', async (_id, op) => {
    const response = await request(op, await restrictedToSecond());
    expect(response.status).toBe(200);
    const text = await response.text();
    for (const id of [world.alice.workspaceId, world.ids.token, world.ids.session]) expect(text).not.toContain(id);
  });
  it.each(defaults.map((op) => [op.operation.operationId, op] as const))('%s without X-Workspace-Id answers nothing of the other', async (_id, op) => {
    const response = await request(op, await restrictedToSecond());
    expect(response.status).toBe(200);
    const text = await response.text();
    for (const id of [world.alice.workspaceId, ...Object.values(world.ids)]) expect(text).not.toContain(id);
  });
});

/** What each role may do, from the contract: operations acting in no workspace declare no role. */
const roleScoped = operations.filter((op) => op.operation['x-required-role'] !== undefined);
const tokenOf = (role: Role) => (role === 'owner' ? world.alice.token : world.members[role].token);
const asRole = (op: (typeof operations)[number], role: Role) =>
  request(op, tokenOf(role), op.parameters.some((p) => p.name === 'X-Workspace-Id') ? world.alice.workspaceId : undefined);

describe('every operation in a workspace declares its role', () => {
  it('exactly the operations that act in a workspace', () => {
    const actsInWorkspace = (op: (typeof operations)[number]) => op.parameters.some((p) => p.name === 'X-Workspace-Id' || p.name === 'workspaceId');
    expect(roleScoped.map((op) => op.operation.operationId).sort()).toEqual(
      operations
        .filter(actsInWorkspace)
        .map((op) => op.operation.operationId)
        .sort(),
    );
  });
});

const below = roleScoped.flatMap((op) =>
  ROLES.filter((role) => ROLES.indexOf(role) < ROLES.indexOf(op.operation['x-required-role']!)).map((role) => [op.operation.operationId, role, op] as const),
);

describe('every role below an operation’s x-required-role is 403', () => {
  it.each(below)('%s as %s', async (_id, role, op) => {
    const response = await asRole(op, role);
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({
      error: { code: 'forbidden', details: { required_role: op.operation['x-required-role'], role } },
    });
  });
});

// Reads first, and the calls that remove things or change memberships last, so each runs on the world intact
// (a deletion done by its least role leaves the roles above it a 404, which is still not a refusal).
const order = (op: (typeof operations)[number]) =>
  op.path.includes('/members') || op.path.endsWith('/transfer') || op.path.endsWith('/leave') ? 3 : op.method === 'DELETE' ? 2 : op.method === 'GET' ? 0 : 1;
const fromRequired = [...roleScoped]
  .sort((a, b) => order(a) - order(b))
  .flatMap((op) =>
    ROLES.filter((role) => ROLES.indexOf(role) >= ROLES.indexOf(op.operation['x-required-role']!)).map((role) => [op.operation.operationId, role, op] as const),
  );

describe('every role from an operation’s x-required-role up is allowed', () => {
  it.each(fromRequired)('%s as %s', async (_id, role, op) => {
    const response = await asRole(op, role);
    expect(response.status).toBeLessThan(500);
    if (response.status === 403) expect(((await response.json()) as { error: { details?: unknown } }).error.details).toBeUndefined();
  });
});

// The scope matrix: each operation's scope is what its security requirements list for a PAT (and the same for a
// JWT). Alice's PAT holding every scope but that one (and but its group's write, which includes read) gets 403
// naming it; her PAT holding exactly that scope gets past the check.
const scopeOf = (op: (typeof operations)[number]) =>
  (op.operation.security as Record<string, string[]>[] | undefined)?.find((requirement) => requirement.personalAccessToken)?.personalAccessToken?.[0];
const scoped = operations.filter((op) => scopeOf(op) !== undefined);
// Approving a device sign-in issues a session token, which holds every scope: one scope is not enough.
const needsEveryScope = new Set(['approveDeviceCode']);

async function patWith(scopes: readonly Scope[]): Promise<string> {
  return (await createToken(app.db, clock, { userId: world.alice.userId, kind: 'pat', name: 'matrix', expiresAt: null, scopes })).secret;
}

describe('every operation with a token lacking its scope is 403', () => {
  it('every operation but getCurrentUser, logout and the public ones names a scope of the Scope schema, the same for PATs and JWTs', () => {
    // A token may always say what it is and end itself, whatever its scopes.
    const unscoped = operations.filter((op) => !isPublic(op) && scopeOf(op) === undefined).map((op) => op.operation.operationId);
    expect(unscoped.sort()).toEqual(['getCurrentUser', 'logout']);
    for (const op of scoped) {
      const requirements = op.operation.security as Record<string, string[]>[];
      expect(ALL_SCOPES).toContain(scopeOf(op));
      expect(requirements.find((r) => r.oauth2Jwt)?.oauth2Jwt).toEqual([scopeOf(op)]);
      expect(requirements.find((r) => r.sessionToken)?.sessionToken).toEqual([]);
    }
  });
  it.each(scoped.map((op) => [op.operation.operationId, scopeOf(op)!, op] as const))('%s without %s', async (_id, scope, op) => {
    const write = scope.replace(/:read$/, ':write');
    const response = await request(op, await patWith(ALL_SCOPES.filter((s) => s !== scope && s !== write)));
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ error: { code: 'forbidden', param: 'Authorization', details: { required_scope: scope } } });
  });
});

describe('every operation with a token of exactly its scope passes the scope check', () => {
  it.each(scoped.filter((op) => !needsEveryScope.has(op.operation.operationId)).map((op) => [op.operation.operationId, scopeOf(op)!, op] as const))(
    '%s with %s',
    async (_id, scope, op) => {
      const response = await request(op, await patWith([scope as Scope]));
      expect(response.status).not.toBe(401);
      if (response.status === 403) expect((await response.json()).error.code).not.toBe('forbidden');
    },
  );
  it('approveDeviceCode takes a token of every scope', async () => {
    const op = operations.find((op) => op.operation.operationId === 'approveDeviceCode')!;
    const one = await request(op, await patWith(['tokens:write']));
    expect(one.status).toBe(403);
    expect(await one.json()).toMatchObject({ error: { code: 'forbidden', details: { required_scope: 'workspaces:read' } } });
    const every = await request(op, await patWith(ALL_SCOPES));
    expect([403, 401]).not.toContain(every.status);
  });
});
