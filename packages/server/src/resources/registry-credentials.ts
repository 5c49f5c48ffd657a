// Registry credentials: the only writer of `registry_credentials`. The password is sealed at rest and never
// answered; the registry must be a public host (SSRF).
import type { ReceivedBody, Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { notFound, validationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { HelmReleaseRequest } from '../providers/types.ts';
import { type PageInput, workspacePage } from '../services/lists.ts';
import type { SecretBox } from '../services/secrets.ts';
import { isForbiddenHost, type Resolver } from '../services/ssrf.ts';
import { memberWorkspaces, type WorkspaceCaller, type WorkspaceRef } from '../services/tenancy.ts';

type Db = Kysely<Database>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toRegistryCredential = (row: Row<'registry_credentials'>): Schema<'RegistryCredential'> => ({
  id: row.id,
  name: row.name,
  workspace_id: row.workspace_id,
  registry_url: row.registry_url,
  is_active: row.is_active,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
});

export const listRegistryCredentials = (db: Db, input: PageInput) => workspacePage(db, input, 'registry_credentials', toRegistryCredential);

/** A registry credential the user may see (a member of its workspace); 404 otherwise. */
async function visibleRegistryCredential(db: Db, caller: WorkspaceCaller, id: string): Promise<Row<'registry_credentials'>> {
  const row = await db
    .selectFrom('registry_credentials')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', 'in', memberWorkspaces(db, caller))
    .executeTakeFirst();
  if (!row) throw notFound('Registry credential', id);
  return row;
}

export const getRegistryCredential = async (db: Db, caller: WorkspaceCaller, id: string): Promise<Schema<'RegistryCredential'>> =>
  toRegistryCredential(await visibleRegistryCredential(db, caller, id));

/**
 * Refuses a registry the service must not connect to (SSRF). It resolves the host name, so it runs before the
 * request's transaction (the operation's `before` stage), not inside it.
 */
export async function checkRegistryHost(registryUrl: string, resolveHost: Resolver): Promise<void> {
  if (await isForbiddenHost(registryUrl.replace(/:\d+$/, ''), resolveHost)) {
    throw validationError(
      'registry_url',
      `${registryUrl} is a loopback, private, link-local or metadata address.`,
      'Use the public host name of the registry, e.g. ghcr.io.',
    );
  }
}

export async function createRegistryCredential(
  db: Db,
  workspace: WorkspaceRef,
  input: ReceivedBody<'createRegistryCredential'>,
  { now, secrets }: { now: number; secrets: SecretBox },
): Promise<Schema<'RegistryCredential'>> {
  const row = await db
    .insertInto('registry_credentials')
    .values({
      id: newId('rc'),
      workspace_id: workspace.id,
      name: input.name,
      registry_url: input.registry_url.toLowerCase(),
      username: input.username,
      password_ciphertext: secrets.seal(input.password),
      is_active: input.is_active,
      created_at: now,
      last_used_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRegistryCredential(row);
}

/** A new name, username, password or is_active; a new password overwrites the old ciphertext in the same UPDATE. */
export async function updateRegistryCredential(
  db: Db,
  caller: WorkspaceCaller,
  id: string,
  input: Schema<'RegistryCredentialUpdate'>,
  secrets: SecretBox,
): Promise<Schema<'RegistryCredential'>> {
  const row = await db
    .updateTable('registry_credentials')
    .set({
      ...(input.name === undefined ? {} : { name: input.name }),
      ...(input.username === undefined ? {} : { username: input.username }),
      ...(input.password === undefined ? {} : { password_ciphertext: secrets.seal(input.password) }),
      ...(input.is_active === undefined ? {} : { is_active: input.is_active }),
    })
    .where('id', '=', id)
    .where('workspace_id', 'in', memberWorkspaces(db, caller))
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Registry credential', id);
  return toRegistryCredential(row);
}

export async function deleteRegistryCredential(db: Db, caller: WorkspaceCaller, id: string): Promise<void> {
  const result = await db.deleteFrom('registry_credentials').where('id', '=', id).where('workspace_id', 'in', memberWorkspaces(db, caller)).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound('Registry credential', id);
}

/**
 * The workspace's active registry credentials, as the pull secrets of its installs' releases, recording the use.
 * Each password is opened only when the driver reads it (a simulated cluster never does); not enumerable, so no
 * log or JSON of the request holds it. A credential stored before passwords were kept has none to pass.
 */
export async function pullSecretsOf(
  db: Db,
  workspaceId: string,
  now: number,
  secrets: SecretBox | undefined,
): Promise<NonNullable<HelmReleaseRequest['pull_secrets']>> {
  const rows = await db
    .updateTable('registry_credentials')
    .set({ last_used_at: now })
    .where('workspace_id', '=', workspaceId)
    .where('is_active', '=', true)
    .where('password_ciphertext', 'is not', null)
    .returning(['id', 'registry_url', 'username', 'password_ciphertext'])
    .execute();
  return rows
    .sort((a, b) => a.id.localeCompare(b.id))
    .map(({ id, registry_url, username, password_ciphertext }) =>
      Object.defineProperty({ server: registry_url, username } as { server: string; username: string; password: string }, 'password', {
        enumerable: false,
        get() {
          if (!secrets) throw new Error(`Registry credential ${id} cannot be opened: this process has no secrets key.`);
          return secrets.open(password_ciphertext!);
        },
      }),
    );
}
