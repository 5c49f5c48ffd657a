// Cloud credentials (bring your own machines): the only writer of `cloud_credentials`. The secret is sealed at
// rest and never answered; a credential that compute configs use cannot be deleted.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { conflict, notFound, validationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { ProviderCredential } from '../providers/types.ts';
import { type PageInput, workspacePage } from '../services/lists.ts';
import type { SecretBox } from '../services/secrets.ts';
import { memberWorkspaces, type WorkspaceCaller, type WorkspaceRef } from '../services/tenancy.ts';

type Db = Kysely<Database>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toCloudCredential = (row: Row<'cloud_credentials'>): Schema<'CloudCredential'> => ({
  id: row.id,
  name: row.name,
  workspace_id: row.workspace_id,
  provider: row.provider,
  is_active: row.is_active,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
});

export const listCloudCredentials = (db: Db, input: PageInput) => workspacePage(db, input, 'cloud_credentials', toCloudCredential);

/** A cloud credential the user may see (a member of its workspace); 404 otherwise. */
async function visibleCloudCredential(db: Db, caller: WorkspaceCaller, id: string): Promise<Row<'cloud_credentials'>> {
  const row = await db
    .selectFrom('cloud_credentials')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', 'in', memberWorkspaces(db, caller))
    .executeTakeFirst();
  if (!row) throw notFound('Cloud credential', id);
  return row;
}

export const getCloudCredential = async (db: Db, caller: WorkspaceCaller, id: string): Promise<Schema<'CloudCredential'>> =>
  toCloudCredential(await visibleCloudCredential(db, caller, id));

export async function createCloudCredential(
  db: Db,
  workspace: WorkspaceRef,
  input: Schema<'CloudCredentialCreate'>,
  { now, secrets }: { now: number; secrets: SecretBox },
): Promise<Schema<'CloudCredential'>> {
  const row = await db
    .insertInto('cloud_credentials')
    .values({
      id: newId('ccr'),
      workspace_id: workspace.id,
      name: input.name,
      provider: input.provider,
      secret_ciphertext: secrets.seal(input.secret),
      created_at: now,
      last_used_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toCloudCredential(row);
}

/**
 * A new name, secret or is_active. The new secret overwrites the old ciphertext in the same UPDATE: no copy of the
 * old secret stays behind, and the next provider call of a machine made with it opens the new one.
 */
export async function updateCloudCredential(
  db: Db,
  caller: WorkspaceCaller,
  id: string,
  input: Schema<'CloudCredentialUpdate'>,
  secrets: SecretBox,
): Promise<Schema<'CloudCredential'>> {
  const row = await db
    .updateTable('cloud_credentials')
    .set({
      ...(input.name === undefined ? {} : { name: input.name }),
      ...(input.secret === undefined ? {} : { secret_ciphertext: secrets.seal(input.secret) }),
      ...(input.is_active === undefined ? {} : { is_active: input.is_active }),
    })
    .where('id', '=', id)
    .where('workspace_id', 'in', memberWorkspaces(db, caller))
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Cloud credential', id);
  return toCloudCredential(row);
}

export async function deleteCloudCredential(db: Db, caller: WorkspaceCaller, id: string): Promise<void> {
  await inTransaction(db, async (trx) => {
    const credential = await trx
      .selectFrom('cloud_credentials')
      .select('id')
      .where('id', '=', id)
      .where('workspace_id', 'in', memberWorkspaces(trx, caller))
      .forUpdate()
      .executeTakeFirst();
    if (!credential) throw notFound('Cloud credential', id);
    const { configs } = await trx
      .selectFrom('compute_configs')
      .select(sql<number>`count(*)::int`.as('configs'))
      .where('cloud_credential_id', '=', credential.id)
      .executeTakeFirstOrThrow();
    if (configs > 0)
      throw conflict(
        `Cloud credential ${credential.id} is used by ${configs} compute config${configs === 1 ? '' : 's'}.`,
        'Delete those compute configs first.',
        { compute_configs: configs },
      );
    await trx.deleteFrom('cloud_credentials').where('id', '=', credential.id).execute();
  });
}

/** A reference to a credential must name an active one of the workspace's own: 422 naming the field otherwise. */
export async function requireCredentialOfWorkspace(db: Db, id: string, workspaceId: string, param = 'cloud_credential_id'): Promise<void> {
  const credential = await db
    .selectFrom('cloud_credentials')
    .select(['id', 'is_active'])
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!credential) {
    throw validationError(
      param,
      `Cloud credential ${id} was not found in workspace ${workspaceId}.`,
      'List the workspace’s cloud credentials with GET /v1/compute/cloud_credentials.',
    );
  }
  if (!credential.is_active) {
    throw validationError(
      param,
      `Cloud credential ${id} is inactive.`,
      'Activate it with PATCH /v1/compute/cloud_credentials/{id} (is_active: true), or use another.',
    );
  }
}

/**
 * The BYOM credential a machine is driven with (its compute config's), recording the use; undefined for a machine
 * on the platform's account. The credential must be of the machine's workspace: what a machine references lives
 * in its workspace, checked again where a workflow or a drift check acts on it. The sealed secret is opened only
 * when the driver reads the token, inside the provider call; state, logs and errors carry the id, never the token.
 */
export async function machineCredential(db: Db, providerId: string, now: number, secrets: SecretBox | undefined): Promise<ProviderCredential | undefined> {
  const credential = await byomCredentialOfMachine(db, providerId, now);
  if (!credential) return undefined;
  const { id, sealed } = credential;
  // Opened when the driver reads it (a simulated cloud never does); not enumerable, so no log or JSON holds it.
  return Object.defineProperty({ id } as ProviderCredential, 'token', {
    enumerable: false,
    get() {
      if (!secrets) throw new Error(`Cloud credential ${id} cannot be opened: this process has no secrets key.`);
      return secrets.open(sealed);
    },
  });
}

/** Every active cloud credential (of one workspace, when given), each opened only when its token is read. */
export async function activeCredentials(db: Db, secrets: SecretBox, workspaceId?: string): Promise<ProviderCredential[]> {
  let query = db.selectFrom('cloud_credentials').select(['id', 'secret_ciphertext']).where('is_active', '=', true);
  if (workspaceId !== undefined) query = query.where('workspace_id', '=', workspaceId);
  const rows = await query.execute();
  return rows.map(({ id, secret_ciphertext }) =>
    Object.defineProperty({ id } as ProviderCredential, 'token', { enumerable: false, get: () => secrets.open(secret_ciphertext) }),
  );
}

async function byomCredentialOfMachine(db: Db, providerId: string, now: number): Promise<{ id: string; sealed: Buffer } | undefined> {
  const row = await db
    .selectFrom('machines')
    .innerJoin('clusters', 'clusters.id', 'machines.cluster_id')
    .innerJoin('compute_configs', 'compute_configs.id', 'machines.compute_config_id')
    .select(['compute_configs.cloud_credential_id', 'clusters.workspace_id'])
    .where('machines.provider_id', '=', providerId)
    .executeTakeFirst();
  if (!row?.cloud_credential_id) return undefined;
  const credential = await db
    .updateTable('cloud_credentials')
    .set({ last_used_at: now })
    .where('id', '=', row.cloud_credential_id)
    .where('workspace_id', '=', row.workspace_id)
    .returning(['id', 'secret_ciphertext'])
    .executeTakeFirst();
  if (!credential) throw new Error(`Cloud credential ${row.cloud_credential_id} no longer exists in the machine's workspace.`);
  return { id: credential.id, sealed: credential.secret_ciphertext };
}
