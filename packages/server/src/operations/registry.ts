import * as registryCredentials from '../resources/registry-credentials.ts';
import { requireWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import { type Handler, staged } from './types.ts';

export const listRegistryCredentials: Handler<'listRegistryCredentials'> = async (input, { db }) => ({
  status: 200,
  body: await registryCredentials.listRegistryCredentials(db, input),
});

export const getRegistryCredential: Handler<'getRegistryCredential'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await registryCredentials.getRegistryCredential(db, caller, params.id) };
};

export const createRegistryCredential = staged<'createRegistryCredential'>({
  // A workspace the caller may not act in is refused before the host is resolved.
  before: async ({ body, headers, caller }, { db, resolveHost }) => {
    await requireWorkspace(db, caller, headers['X-Workspace-Id']);
    await registryCredentials.checkRegistryHost(body.registry_url, resolveHost);
  },
  change: async ({ body, headers, caller }, { db, clock, secrets }) => {
    const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
    return { status: 201, body: await registryCredentials.createRegistryCredential(db, workspace, body, { now: clock.now(), secrets }) };
  },
});

export const updateRegistryCredential: Handler<'updateRegistryCredential'> = async ({ params, body, headers, caller }, { db, secrets }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await registryCredentials.updateRegistryCredential(db, caller, params.id, body, secrets) };
};

export const deleteRegistryCredential: Handler<'deleteRegistryCredential'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  await registryCredentials.deleteRegistryCredential(db, caller, params.id);
  return { status: 204, body: undefined };
};
