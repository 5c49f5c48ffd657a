import * as registryCredentials from '../resources/registry-credentials.ts';
import { type Handler, staged } from './types.ts';

export const listRegistryCredentials: Handler<'listRegistryCredentials'> = async (input, { db }) => ({
  status: 200,
  body: await registryCredentials.listRegistryCredentials(db, input),
});

export const getRegistryCredential: Handler<'getRegistryCredential'> = async ({ params, caller }, { db }) => {
  return { status: 200, body: await registryCredentials.getRegistryCredential(db, caller, params.id) };
};

export const createRegistryCredential = staged<'createRegistryCredential'>({
  before: ({ body }, { resolveHost }) => registryCredentials.checkRegistryHost(body.registry_url, resolveHost),
  change: async ({ body, workspace }, { db, clock, secrets }) => {
    return { status: 201, body: await registryCredentials.createRegistryCredential(db, workspace, body, { now: clock.now(), secrets }) };
  },
});

export const updateRegistryCredential: Handler<'updateRegistryCredential'> = async ({ params, body, caller }, { db, secrets }) => {
  return { status: 200, body: await registryCredentials.updateRegistryCredential(db, caller, params.id, body, secrets) };
};

export const deleteRegistryCredential: Handler<'deleteRegistryCredential'> = async ({ params, caller }, { db }) => {
  await registryCredentials.deleteRegistryCredential(db, caller, params.id);
  return { status: 204, body: undefined };
};
