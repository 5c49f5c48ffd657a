// Compute configs: the only writer of `compute_configs`. A config's region must be a known one, its filter must
// match a server type on sale in that region, its cloud credential (BYOM) must be of its workspace, and a config
// that machines use cannot be deleted.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, NewRow, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { conflict, notFound, shown, validationError } from '../errors.ts';
import { newId } from '../ids.ts';
import { onSaleIn, type ServerOffering } from '../providers/types.ts';
import { type PageInput, workspacePage } from '../services/lists.ts';
import { memberWorkspaces, type WorkspaceCaller, type WorkspaceRef } from '../services/tenancy.ts';
import { requireCredentialOfWorkspace } from './cloud-credentials.ts';
import { regionIds } from './regions.ts';

type Db = Kysely<Database>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toComputeConfig = (row: Row<'compute_configs'>): Schema<'ComputeConfig'> => ({
  id: row.id,
  name: row.name,
  workspace_id: row.workspace_id,
  provider: row.provider,
  provider_config: row.provider_config,
  cloud_credential_id: row.cloud_credential_id,
  created_at: row.created_at,
});

export const listComputeConfigs = (db: Db, input: PageInput) => workspacePage(db, input, 'compute_configs', toComputeConfig);

/** A compute config the user may see (a member of its workspace); 404 naming `param` otherwise. */
export async function visibleComputeConfig(db: Db, caller: WorkspaceCaller, id: string, param?: string): Promise<Row<'compute_configs'>> {
  const row = await db
    .selectFrom('compute_configs')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', 'in', memberWorkspaces(db, caller))
    .executeTakeFirst();
  if (!row) throw notFound('Compute config', id, param);
  return row;
}

/** `cx2*` → /^cx2.*$/: a machine type filter is a glob over the provider's server type names. */
export function matchesFilter(filter: string, name: string): boolean {
  const pattern = filter
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replaceAll('*', '.*')
    .replaceAll('?', '.');
  return new RegExp(`^${pattern}$`).test(name);
}

export const getComputeConfig = async (db: Db, caller: WorkspaceCaller, id: string): Promise<Schema<'ComputeConfig'>> =>
  toComputeConfig(await visibleComputeConfig(db, caller, id));

export async function createComputeConfig(
  db: Db,
  workspace: WorkspaceRef,
  input: Schema<'ComputeConfigCreate'>,
  { now, offerings }: { now: number; offerings: ServerOffering[] },
): Promise<Schema<'ComputeConfig'>> {
  if (input.provider_config.provider !== input.provider) {
    throw validationError(
      'provider_config.provider',
      `provider_config.provider must equal provider (${input.provider}).`,
      'Send the same provider in both places.',
    );
  }
  const regions = await regionIds(db);
  const { region, machine_type_filter: filter } = input.provider_config;
  if (!regions.includes(region)) {
    throw validationError(
      'provider_config.region',
      `Region ${shown(region)} is not one where machines are made.`,
      `Use one of the regions GET /v1/regions lists: ${regions.join(', ')}.`,
    );
  }
  // Matched among the types on sale in the config's region, so its machines are never given one it does not sell.
  const onSale = offerings.filter((t) => onSaleIn(t, region));
  if (!onSale.some((t) => matchesFilter(filter, t.name))) {
    const elsewhere = offerings.some((t) => matchesFilter(filter, t.name));
    throw validationError(
      'provider_config.machine_type_filter',
      elsewhere ? `No server type matching ${filter} is on sale in region ${region}.` : `No server type matches ${filter}.`,
      `Use a filter matching one of: ${onSale.map((t) => t.name).join(', ')}.`,
    );
  }
  if (input.cloud_credential_id !== undefined) await requireCredentialOfWorkspace(db, input.cloud_credential_id, workspace.id);
  const row = await db
    .insertInto('compute_configs')
    .values({
      id: newId('cc'),
      workspace_id: workspace.id,
      name: input.name,
      provider: input.provider,
      provider_config: JSON.stringify(input.provider_config),
      cloud_credential_id: input.cloud_credential_id ?? null,
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toComputeConfig(row);
}

/** A new name; the provider settings stay as they are. */
export async function renameComputeConfig(db: Db, caller: WorkspaceCaller, id: string, input: Schema<'ComputeConfigUpdate'>): Promise<Schema<'ComputeConfig'>> {
  const config = await visibleComputeConfig(db, caller, id);
  const row = await db.updateTable('compute_configs').set({ name: input.name }).where('id', '=', config.id).returningAll().executeTakeFirst();
  if (!row) throw notFound('Compute config', id);
  return toComputeConfig(row);
}

export async function deleteComputeConfig(db: Db, caller: WorkspaceCaller, id: string): Promise<void> {
  await inTransaction(db, async (trx) => {
    const config = await visibleComputeConfig(trx, caller, id);
    // Lock the config so a machine cannot start using it between the count and the delete.
    await trx.selectFrom('compute_configs').select('id').where('id', '=', config.id).forUpdate().execute();
    const { machines } = await trx
      .selectFrom('machines')
      .select(sql<number>`count(*)::int`.as('machines'))
      .where('compute_config_id', '=', config.id)
      .executeTakeFirstOrThrow();
    if (machines > 0) {
      throw conflict(`Compute config ${config.id} is used by ${machines} machine${machines === 1 ? '' : 's'}.`, 'Delete the machines that use it first.', {
        machines,
      });
    }
    await trx.deleteFrom('compute_configs').where('id', '=', config.id).execute();
  });
}

/** The demo data's compute configs (db/seed.ts), written as they are: no creation's rules, quota or workflow. */
export async function seedComputeConfigs(db: Kysely<Database>, rows: NewRow<'compute_configs'>[]): Promise<void> {
  await db.insertInto('compute_configs').values(rows).execute();
}
