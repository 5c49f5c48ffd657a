// Chart regeneration after a product update: render the new template, then upgrade every running install of
// the product to it. A newer update supersedes an older regeneration, which then ends without effect.
import { releasesOf } from './install.ts';
import type { StepContext, WorkflowDefinition } from './engine.ts';

/** The product, when the template this workflow regenerates is still its current one. */
const currentProduct = (ctx: StepContext) =>
  ctx.db.selectFrom('products').selectAll().where('id', '=', String(ctx.state.product_id)).where('template_id', '=', ctx.workflow.subject_id).executeTakeFirst();

export const regeneration: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      const product = await currentProduct(ctx);
      if (!product) return { done: true };
      await ctx.db.updateTable('products').set({ regeneration_status: 'running' }).where('id', '=', product.id).where('template_id', '=', product.template_id).execute();
      return { next: 'upgrade' };
    },
    async upgrade(ctx) {
      const product = await currentProduct(ctx);
      if (!product) return { done: true };
      const installs = await ctx.db
        .selectFrom('installs')
        .selectAll('installs')
        // Only installs of the product's workspace on clusters of that workspace (checked again as the workflow acts).
        .innerJoin('clusters', (join) => join.onRef('clusters.id', '=', 'installs.cluster_id').on('clusters.workspace_id', '=', product.workspace_id))
        .where('installs.workspace_id', '=', product.workspace_id)
        .where('product_id', '=', product.id)
        .where('installs.status', '=', 'running')
        .where((eb) => eb.or([eb('installs.template_id', 'is', null), eb('installs.template_id', '!=', product.template_id)]))
        .execute();
      for (const install of installs) {
        if (!install.cluster_id) continue;
        for (const release of releasesOf({ ...install, cluster_id: install.cluster_id }, product.sources, product.template_id)) {
          await ctx.driver.upsertRelease(release);
        }
        await ctx.db.updateTable('installs').set({ template_id: product.template_id, updated_at: ctx.clock.now() }).where('id', '=', install.id).execute();
      }
      await ctx.db.updateTable('products').set({ regeneration_status: 'succeeded' }).where('id', '=', product.id).where('template_id', '=', product.template_id).execute();
      return { done: true };
    },
  },
  async fail(ctx) {
    await ctx.db.updateTable('products').set({ regeneration_status: 'failed' }).where('id', '=', String(ctx.state.product_id)).where('template_id', '=', ctx.workflow.subject_id).execute();
  },
};
