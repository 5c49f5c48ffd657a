import { toRegistryCredential } from '../db/mappers.ts';
import { notFound, validationError } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { workspacePage } from '../services/lists.ts';
import { isForbiddenHost } from '../services/ssrf.ts';
import { memberWorkspaces, requireWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import type { Handler } from './types.ts';

export const listRegistryCredentials: Handler<'listRegistryCredentials'> = async (input, { db }) => ({
  status: 200,
  body: await workspacePage(db, input, 'registry_credentials', toRegistryCredential),
});

export const createRegistryCredential: Handler<'createRegistryCredential'> = async ({ body, headers, caller }, { db, clock, secrets, resolveHost }) => {
  const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
  const host = body.registry_url.replace(/:\d+$/, '');
  if (await isForbiddenHost(host, resolveHost)) {
    throw validationError('registry_url', `${body.registry_url} is a loopback, private, link-local or metadata address.`, 'Use the public host name of the registry, e.g. ghcr.io.');
  }
  const row = await db
    .insertInto('registry_credentials')
    .values({
      id: newId('rc'),
      workspace_id: workspace.id,
      name: body.name,
      registry_url: body.registry_url.toLowerCase(),
      username: body.username,
      password_ciphertext: secrets.seal(body.password),
      is_active: body.is_active ?? true,
      created_at: clock.now(),
      last_used_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { status: 201, body: toRegistryCredential(row) };
};

export const deleteRegistryCredential: Handler<'deleteRegistryCredential'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  const result = await db.deleteFrom('registry_credentials').where('id', '=', params.id).where('workspace_id', 'in', memberWorkspaces(db, caller.userId)).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound('Registry credential', params.id);
  return { status: 204, body: undefined };
};
