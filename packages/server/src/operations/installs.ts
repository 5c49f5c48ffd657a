import * as revisions from '../resources/install-revisions.ts';
import * as installs from '../resources/installs.ts';
import { requestHash, withIdempotencyKey } from '../services/idempotency.ts';
import { openInstallLogStream } from '../services/logs.ts';
import { resolveWorkspace } from '../services/tenancy.ts';
import { type Caller, callerKey, type Handler, type HandlerEnv, type OperationInput } from './types.ts';

const startInstall = async ({ body, headers, caller }: OperationInput<'createInstall'>, db: HandlerEnv['db'], { clock, workflows }: HandlerEnv) =>
  installs.createInstall(db, await resolveWorkspace(db, caller, headers['X-Workspace-Id']), body, { now: clock.now(), workflows });

/**
 * A token's restriction is part of what its request asks (a restricted token never replays an answer given in
 * another workspace); absent for the others, so their keys' hashes stay what they were.
 */
const restrictionOf = (caller: Caller) => (caller.workspaceIds === null ? {} : { restriction: caller.workspaceIds });

/** With an Idempotency-Key, the install is created in the transaction that stores the answer to replay. */
export const createInstall: Handler<'createInstall'> = async (input, env) => {
  const key = input.headers['idempotency-key'];
  if (key === undefined) return { status: 202, body: await startInstall(input, env.db, env) };
  const hash = requestHash('createInstall', { body: input.body, workspace: input.headers['X-Workspace-Id'] ?? null, ...restrictionOf(input.caller) });
  const scope = { userId: input.caller.userId, key, operation: 'createInstall', hash };
  const { response, replayed } = await withIdempotencyKey(env.db, env.clock, scope, async (trx) => ({
    status: 202 as const,
    body: await startInstall(input, trx, env),
  }));
  return { status: 202, body: response.body, ...(replayed ? { headers: { 'Idempotent-Replayed': 'true' } } : {}) };
};

export const streamInstallLogs: Handler<'streamInstallLogs'> = async (
  { params, headers, query, caller, signal },
  { db, clock, driver, shutdown, logTails, config },
) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  const install = await installs.getInstall(db, caller, params.id);
  const request = {
    installId: install.id,
    pod: query.pod,
    container: query.container,
    follow: query.follow,
    tail: query.tail,
    sinceSeconds: query.since_seconds,
    lastEventId: headers['Last-Event-ID'],
  };
  const env = { db, clock, driver, signal, shutdown, tails: logTails };
  return {
    status: 200,
    stream: await openInstallLogStream(request, env, { key: callerKey(caller), limit: config.logStreamsPerUser }),
    workspaceId: install.workspace_id,
  };
};

export const listInstalls: Handler<'listInstalls'> = async (input, { db }) => ({
  status: 200,
  body: await installs.listInstalls(db, input),
});

export const getInstall: Handler<'getInstall'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await installs.getInstall(db, caller, params.id) };
};

export const deleteInstall: Handler<'deleteInstall'> = async ({ params, headers, caller }, { db, clock, workflows }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 202, body: await installs.deleteInstall(db, caller, params.id, { now: clock.now(), workflows }) };
};

const changeInstall = async ({ params, body, headers, caller }: OperationInput<'updateInstall'>, db: HandlerEnv['db'], { clock, workflows }: HandlerEnv) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return installs.updateInstall(db, caller, params.id, body, { now: clock.now(), workflows });
};

/** With an Idempotency-Key, the change is made in the transaction that stores the answer to replay. */
export const updateInstall: Handler<'updateInstall'> = async (input, env) => {
  const key = input.headers['idempotency-key'];
  if (key === undefined) return { status: 202, body: await changeInstall(input, env.db, env) };
  const hash = requestHash('updateInstall', {
    id: input.params.id,
    body: input.body,
    workspace: input.headers['X-Workspace-Id'] ?? null,
    ...restrictionOf(input.caller),
  });
  const scope = { userId: input.caller.userId, key, operation: 'updateInstall', hash };
  const { response, replayed } = await withIdempotencyKey(env.db, env.clock, scope, async (trx) => ({
    status: 202 as const,
    body: await changeInstall(input, trx, env),
  }));
  return { status: 202, body: response.body, ...(replayed ? { headers: { 'Idempotent-Replayed': 'true' } } : {}) };
};

export const listInstallRevisions: Handler<'listInstallRevisions'> = async ({ params, headers, query, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  const installId = await installs.visibleInstallId(db, caller, params.id);
  return { status: 200, body: await revisions.listRevisions(db, installId, query) };
};

export const rollbackInstall: Handler<'rollbackInstall'> = async ({ params, body, headers, caller }, { db, clock, workflows }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 202, body: await installs.rollbackInstall(db, caller, params.id, body, { now: clock.now(), workflows }) };
};
