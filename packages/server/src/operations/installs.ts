import * as revisions from '../resources/install-revisions.ts';
import * as installs from '../resources/installs.ts';
import { openInstallLogStream } from '../services/logs.ts';
import { callerKey, type Handler } from './types.ts';

/** With an idempotency-key, the binding makes the install in the transaction that stores the answer to replay. */
export const createInstall: Handler<'createInstall'> = async ({ body, workspace }, { db, clock, workflows }) => ({
  status: 202,
  body: await installs.createInstall(db, workspace, body, { now: clock.now(), workflows }),
});

export const streamInstallLogs: Handler<'streamInstallLogs'> = async (
  { params, headers, query, caller, signal },
  { db, clock, driver, shutdown, logTails, config },
) => {
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
  const env = { db, clock, driver, signal, shutdown, tails: logTails, keepAliveMs: config.logKeepAliveMs };
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

export const getInstall: Handler<'getInstall'> = async ({ params, caller }, { db }) => {
  return { status: 200, body: await installs.getInstall(db, caller, params.id) };
};

export const deleteInstall: Handler<'deleteInstall'> = async ({ params, caller }, { db, clock, workflows }) => {
  return { status: 202, body: await installs.deleteInstall(db, caller, params.id, { now: clock.now(), workflows }) };
};

/** With an idempotency-key, the binding makes the change in the transaction that stores the answer to replay. */
export const updateInstall: Handler<'updateInstall'> = async ({ params, body, caller }, { db, clock, workflows }) => ({
  status: 202,
  body: await installs.updateInstall(db, caller, params.id, body, { now: clock.now(), workflows }),
});

export const listInstallRevisions: Handler<'listInstallRevisions'> = async ({ params, query, caller }, { db }) => {
  const installId = await installs.visibleInstallId(db, caller, params.id);
  return { status: 200, body: await revisions.listRevisions(db, installId, query) };
};

export const rollbackInstall: Handler<'rollbackInstall'> = async ({ params, body, caller }, { db, clock, workflows }) => {
  return { status: 202, body: await installs.rollbackInstall(db, caller, params.id, body, { now: clock.now(), workflows }) };
};
