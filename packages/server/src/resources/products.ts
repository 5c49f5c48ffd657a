// Products: the only writer of `products`. A product's configuration (create, or a full replacement) makes a
// new template, which the regenerateProduct workflow renders and rolls out (regeneration_status). What a product
// references lives in its workspace: its clusters are checked on every write and again by the workflows.
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database, NewRow, ProductSource, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { WorkflowStarter } from '../engine/engine.ts';
import { conflict, notFound, validationError } from '../errors.ts';
import { newId } from '../ids.ts';
import { chartLocation } from '../providers/types.ts';
import { type PageInput, workspacePage } from '../services/lists.ts';
import { forbiddenSourceUrl, type Resolver } from '../services/ssrf.ts';
import { memberWorkspaces, type WorkspaceCaller, type WorkspaceRef } from '../services/tenancy.ts';
import { clustersOfWorkspace } from './clusters.ts';
import { recordEvent } from './events.ts';

type Db = Kysely<Database>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toProduct = (row: Row<'products'>): Schema<'Product'> => ({
  id: row.id,
  workspace_id: row.workspace_id,
  name: row.name,
  template_id: row.template_id,
  sources: row.sources,
  cluster_ids: row.cluster_ids,
  stripe_price_ids: row.stripe_price_ids,
  settings: row.settings,
  regeneration_status: row.regeneration_status,
  created_at: row.created_at,
  updated_at: row.updated_at,
});
type Configuration = Schema<'ProductUpdate'>;
interface Effects {
  now: number;
  workflows: WorkflowStarter;
}

export const listProducts = (db: Db, input: PageInput) => workspacePage(db, input, 'products', toProduct);

/** A product the user may see (a member of its workspace); 404 naming `param` otherwise. */
async function visibleProduct(db: Db, caller: WorkspaceCaller, id: string, param?: string): Promise<Row<'products'>> {
  const row = await db.selectFrom('products').selectAll().where('id', '=', id).where('workspace_id', 'in', memberWorkspaces(db, caller)).executeTakeFirst();
  if (!row) throw notFound('Product', id, param);
  return row;
}

export const getProduct = async (db: Db, caller: WorkspaceCaller, id: string): Promise<Schema<'Product'>> => toProduct(await visibleProduct(db, caller, id));

/**
 * Refuses a helm source the service must not fetch from (SSRF): see services/ssrf.ts. It resolves host names, so
 * it runs before the request's transaction (the operation's `before` stage), not inside it.
 */
export async function checkSourceUrls(body: Configuration, resolveHost: Resolver): Promise<void> {
  for (const [i, source] of body.sources.entries()) {
    const reason = await forbiddenSourceUrl(source.chart.repo_url, resolveHost);
    if (reason) {
      throw validationError(
        `sources[${i}].chart.repo_url`,
        `${source.chart.repo_url} ${reason}.`,
        'Use the public https:// (or oci://) address of the chart or Git repository.',
      );
    }
  }
}

/**
 * Checks a product configuration (create or full replacement) and returns the columns it sets. Its clusters must
 * be clusters of the product's own workspace: membership of another workspace gives no right to place installs
 * of this workspace's products there (nor the reverse).
 */
async function configurationColumns(db: Db, workspaceId: string, body: Configuration, existingSourceIds: ReadonlySet<string>) {
  const sources: ProductSource[] = body.sources.map((source, i) => {
    if (source.id !== undefined && !existingSourceIds.has(source.id)) {
      throw validationError(
        `sources[${i}].id`,
        `The product has no helm source ${source.id}.`,
        'Omit id for a new source, or send the id of one of its sources.',
      );
    }
    // The seed's source names all four fields; an empty one is not used (chartLocation).
    if (!chartLocation(source.chart)) {
      throw validationError(
        `sources[${i}].chart`,
        'A helm source names a chart (in a chart repository) or a path (in a Git repository); both are missing or empty.',
        'Send chart for a chart repository, or path for a Git repository.',
      );
    }
    return { id: source.id ?? newId('src'), chart: source.chart, values: source.values ?? {}, metadata: source.metadata ?? {} };
  });
  const own = await clustersOfWorkspace(db, workspaceId, body.cluster_ids);
  body.cluster_ids.forEach((id, i) => {
    if (!own.has(id)) {
      throw validationError(
        `cluster_ids[${i}]`,
        `Cluster ${id} was not found in the product's workspace ${workspaceId}.`,
        "List the workspace's clusters with GET /v1/clusters and use their ids.",
      );
    }
  });
  return {
    name: body.name,
    template_id: newId('tpl'),
    sources: JSON.stringify(sources),
    cluster_ids: JSON.stringify(body.cluster_ids),
    stripe_price_ids: JSON.stringify(body.stripe_price_ids ?? []),
    settings: JSON.stringify(body.settings ?? {}),
    regeneration_status: 'pending' as const,
  };
}

export async function createProduct(db: Db, workspace: WorkspaceRef, body: Configuration, { now, workflows }: Effects): Promise<Schema<'Product'>> {
  const row = await inTransaction(db, async (trx) => {
    const columns = await configurationColumns(trx, workspace.id, body, new Set());
    const id = newId('prd');
    await workflows.start(trx, 'regenerateProduct', columns.template_id, { product_id: id });
    return trx
      .insertInto('products')
      .values({ id, workspace_id: workspace.id, ...columns, created_at: now, updated_at: now })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return toProduct(row);
}

/**
 * The checks of an update that come before its transaction: a product the user cannot see is 404 before any of
 * the sources' hosts is resolved, then the sources are checked (checkSourceUrls).
 */
export async function checkUpdate(db: Db, caller: WorkspaceCaller, id: string, body: Configuration, resolveHost: Resolver): Promise<void> {
  await visibleProduct(db, caller, id);
  await checkSourceUrls(body, resolveHost);
}

/** A full replacement of the configuration: a new template, regenerated and rolled out to the running installs. */
export async function updateProduct(
  db: Db,
  caller: WorkspaceCaller,
  id: string,
  body: Configuration,
  { now, workflows }: Effects,
): Promise<Schema<'ProductUpdateResult'>> {
  return inTransaction(db, async (trx) => {
    const product = await visibleProduct(trx, caller, id);
    await trx.selectFrom('products').select('id').where('id', '=', product.id).forUpdate().execute();
    const columns = await configurationColumns(trx, product.workspace_id, body, new Set(product.sources.map((s) => s.id)));
    await trx
      .updateTable('products')
      .set({ ...columns, updated_at: now })
      .where('id', '=', product.id)
      .execute();
    await workflows.start(trx, 'regenerateProduct', columns.template_id, { product_id: product.id });
    return { product_id: product.id, template_id: columns.template_id };
  });
}

/** How many of a product's installs a 409 names. */
const NAMED_INSTALLS = 100;

/**
 * Deletes a product without installs; 409 naming them otherwise. The row lock orders it after an update, and an
 * install created meanwhile holds the product's row through its foreign key.
 */
export async function deleteProduct(db: Db, caller: WorkspaceCaller, id: string): Promise<void> {
  await inTransaction(db, async (trx) => {
    const product = await visibleProduct(trx, caller, id);
    await trx.selectFrom('products').select('id').where('id', '=', product.id).forUpdate().execute();
    const installs = await trx.selectFrom('installs').select('id').where('product_id', '=', product.id).orderBy('id').limit(NAMED_INSTALLS).execute();
    if (installs.length > 0) {
      const { n } = await trx
        .selectFrom('installs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('product_id', '=', product.id)
        .executeTakeFirstOrThrow();
      throw conflict(
        `Product ${product.id} still has ${Number(n)} install${Number(n) === 1 ? '' : 's'}.`,
        'Uninstall its installs (DELETE /v1/installs/{id}) first.',
        { installs: installs.map((i) => i.id) },
      );
    }
    await trx.deleteFrom('products').where('id', '=', product.id).execute();
  });
}

/** A product of the workspace (what an install references lives in the install's workspace), or undefined. */
export const productOfWorkspace = (db: Db, id: string, workspaceId: string) =>
  db.selectFrom('products').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();

/** The product's current template, its row held against updates (which lock it) until the transaction ends. */
export const heldTemplateOf = async (trx: Db, id: string): Promise<string | undefined> =>
  (await trx.selectFrom('products').select('template_id').where('id', '=', id).forShare().executeTakeFirst())?.template_id;

/** The product, when `templateId` is still its current template (a newer update supersedes a regeneration). */
export const productAtTemplate = (db: Db, id: string, templateId: string) =>
  db.selectFrom('products').selectAll().where('id', '=', id).where('template_id', '=', templateId).executeTakeFirst();

/**
 * The regeneration status of a template, written only while it is the product's current one; its end (succeeded
 * or failed) is told as an event, once.
 */
export async function setRegenerationStatus(
  db: Db,
  id: string,
  templateId: string,
  status: Row<'products'>['regeneration_status'],
  now: number,
): Promise<void> {
  await inTransaction(db, async (trx) => {
    const row = await trx
      .updateTable('products')
      .set({ regeneration_status: status })
      .where('id', '=', id)
      .where('template_id', '=', templateId)
      .where('regeneration_status', '<>', status)
      .returningAll()
      .executeTakeFirst();
    if (!row || (status !== 'succeeded' && status !== 'failed')) return;
    const event = { workspace_id: row.workspace_id, object_type: 'product', object_id: row.id, object: toProduct(row) } as const;
    await recordEvent(trx, { type: `product.regeneration_${status}`, ...event }, now);
  });
}

/** The demo data's products (db/seed.ts), written as they are: no creation's rules, quota or workflow. */
export async function seedProducts(db: Kysely<Database>, rows: NewRow<'products'>[]): Promise<void> {
  await db.insertInto('products').values(rows).execute();
}
