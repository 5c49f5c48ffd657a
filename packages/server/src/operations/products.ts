import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import { toProduct } from '../db/mappers.ts';
import type { Database, ProductSource } from '../db/schema.ts';
import { validationError } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { workspacePage } from '../services/lists.ts';
import { forbiddenSourceUrl, type Resolver } from '../services/ssrf.ts';
import { requireWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import { visibleProduct } from '../services/visibility.ts';
import type { Handler } from './types.ts';

type Configuration = Schema<'ProductUpdate'>;

/** Refuses a helm source the service must not fetch from (SSRF): see services/ssrf.ts. Runs before any transaction. */
async function checkSourceUrls(body: Configuration, resolveHost: Resolver): Promise<void> {
  for (const [i, source] of body.sources.entries()) {
    const reason = await forbiddenSourceUrl(source.chart.repo_url, resolveHost);
    if (reason) {
      throw validationError(`sources[${i}].chart.repo_url`, `${source.chart.repo_url} ${reason}.`, 'Use the public https:// (or oci://) address of the chart or Git repository.');
    }
  }
}

/**
 * Checks a product configuration (create or full replacement) and returns the columns it sets. Its clusters must
 * be clusters of the product's own workspace: membership of another workspace gives no right to place installs
 * of this workspace's products there (nor the reverse).
 */
async function configurationColumns(db: Kysely<Database>, workspaceId: string, body: Configuration, existingSourceIds: ReadonlySet<string>) {
  const sources: ProductSource[] = body.sources.map((source, i) => {
    if (source.id !== undefined && !existingSourceIds.has(source.id)) {
      throw validationError(`sources[${i}].id`, `The product has no helm source ${source.id}.`, 'Omit id for a new source, or send the id of one of its sources.');
    }
    if ((source.chart.chart === undefined) === (source.chart.path === undefined)) {
      throw validationError(`sources[${i}].chart`, 'A helm source names exactly one of chart (a chart repository) or path (a Git repository).', 'Send chart for a chart repository, or path for a Git repository.');
    }
    return { id: source.id ?? newId('src'), chart: source.chart, values: source.values ?? {}, metadata: source.metadata ?? {} };
  });
  const own = await db.selectFrom('clusters').select('id').where('id', 'in', body.cluster_ids).where('workspace_id', '=', workspaceId).execute();
  const ownIds = new Set(own.map((c) => c.id));
  body.cluster_ids.forEach((id, i) => {
    if (!ownIds.has(id)) {
      throw validationError(`cluster_ids[${i}]`, `Cluster ${id} was not found in the product's workspace ${workspaceId}.`, "List the workspace's clusters with GET /v1/clusters (same X-Workspace-Id) and use their ids.");
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

export const listProducts: Handler<'listProducts'> = async (input, { db }) => ({
  status: 200,
  body: await workspacePage(db, input, 'products', toProduct),
});

export const createProduct: Handler<'createProduct'> = async ({ body, headers, caller }, { db, clock, workflows, resolveHost }) => {
  const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
  await checkSourceUrls(body, resolveHost);
  const now = clock.now();
  const row = await db.transaction().execute(async (trx) => {
    const columns = await configurationColumns(trx, workspace.id, body, new Set());
    const id = newId('prd');
    await workflows.start(trx, 'regenerateProduct', columns.template_id, { product_id: id });
    return trx.insertInto('products').values({ id, workspace_id: workspace.id, ...columns, created_at: now, updated_at: now }).returningAll().executeTakeFirstOrThrow();
  });
  return { status: 201, body: toProduct(row) };
};

export const getProduct: Handler<'getProduct'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: toProduct(await visibleProduct(db, caller.userId, params.id)) };
};

export const updateProduct: Handler<'updateProduct'> = async ({ params, headers, body, caller }, { db, clock, workflows, resolveHost }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  await visibleProduct(db, caller.userId, params.id);
  await checkSourceUrls(body, resolveHost);
  const now = clock.now();
  const result = await db.transaction().execute(async (trx) => {
    const product = await visibleProduct(trx, caller.userId, params.id);
    await trx.selectFrom('products').select('id').where('id', '=', product.id).forUpdate().execute();
    const columns = await configurationColumns(trx, product.workspace_id, body, new Set(product.sources.map((s) => s.id)));
    await trx.updateTable('products').set({ ...columns, updated_at: now }).where('id', '=', product.id).execute();
    await workflows.start(trx, 'regenerateProduct', columns.template_id, { product_id: product.id });
    return { product_id: product.id, template_id: columns.template_id };
  });
  return { status: 200, body: result };
};
