import { newId } from '../ids.ts';
import { validationError } from '../http/errors.ts';
import type { ProductSource } from '../db/schema.ts';
import { memberWorkspaces, resolveWorkspace } from '../services/tenancy.ts';
import { visibleProduct } from '../services/visibility.ts';
import type { Handler } from './types.ts';

export const updateProduct: Handler<'updateProduct'> = async ({ params, headers, body, caller }, { db, clock }) => {
  if (headers['X-Workspace-Id'] !== undefined) await resolveWorkspace(db, caller.userId, headers['X-Workspace-Id']);
  const now = clock.now();
  const result = await db.transaction().execute(async (trx) => {
    const product = await visibleProduct(trx, caller.userId, params.id);
    await trx.selectFrom('products').select('id').where('id', '=', product.id).forUpdate().execute();

    const known = new Set(product.sources.map((s) => s.id));
    const sources: ProductSource[] = body.sources.map((source, i) => {
      if (source.id !== undefined && !known.has(source.id)) {
        throw validationError(`sources[${i}].id`, `The product has no helm source ${source.id}.`, 'Omit id for a new source, or send the id of one of its sources.');
      }
      if ((source.chart.chart === undefined) === (source.chart.path === undefined)) {
        throw validationError(`sources[${i}].chart`, 'A helm source names exactly one of chart (a chart repository) or path (a Git repository).', 'Send chart for a chart repository, or path for a Git repository.');
      }
      return { id: source.id ?? newId('src'), chart: source.chart, values: source.values ?? {}, metadata: source.metadata ?? {} };
    });

    const visible = await trx.selectFrom('clusters').select('id').where('id', 'in', body.cluster_ids).where('workspace_id', 'in', memberWorkspaces(trx, caller.userId)).execute();
    const visibleIds = new Set(visible.map((c) => c.id));
    body.cluster_ids.forEach((id, i) => {
      if (!visibleIds.has(id)) throw validationError(`cluster_ids[${i}]`, `Cluster ${id} was not found.`, 'List your clusters with GET /v1/clusters and use their ids.');
    });

    const templateId = newId('tpl');
    await trx
      .updateTable('products')
      .set({
        name: body.name,
        template_id: templateId,
        sources: JSON.stringify(sources),
        cluster_ids: JSON.stringify(body.cluster_ids),
        stripe_price_ids: JSON.stringify(body.stripe_price_ids ?? []),
        settings: JSON.stringify(body.settings ?? {}),
        regeneration_status: 'pending',
        updated_at: now,
      })
      .where('id', '=', product.id)
      .execute();
    // Chart regeneration is a workflow; its row records the intent for the workers.
    await trx.insertInto('workflows').values({ id: newId('wf'), kind: 'regeneration', subject_id: templateId, status: 'pending', created_at: now, updated_at: now }).execute();
    return { product_id: product.id, template_id: templateId };
  });
  return { status: 200, body: result };
};
