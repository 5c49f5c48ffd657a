// regenerateProduct, after a product is created or updated: render the new template, then upgrade every running
// install of the product to it. A newer update supersedes an older regeneration, which then ends without effect.

import type { StepContext, WorkflowDefinition } from '../engine/engine.ts';
import { recordRevision } from '../resources/install-revisions.ts';
import { installsBehindTemplate, setInstallTemplate } from '../resources/installs.ts';
import { productAtTemplate, setRegenerationStatus } from '../resources/products.ts';
import { pullSecretsOf } from '../resources/registry-credentials.ts';
import { releasesOf } from './create-install.ts';

/** The product, when the template this workflow regenerates is still its current one. */
const currentProduct = (ctx: StepContext) => productAtTemplate(ctx.db, String(ctx.state.product_id), ctx.workflow.subject_id);

export const regenerateProductWorkflow: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      const product = await currentProduct(ctx);
      if (!product) return { done: true };
      await setRegenerationStatus(ctx.db, product.id, product.template_id, 'running', ctx.clock.now());
      return { next: 'upgrade' };
    },
    async upgrade(ctx) {
      const product = await currentProduct(ctx);
      if (!product) return { done: true };
      const installs = await installsBehindTemplate(ctx.db, product);
      const pullSecrets = installs.length ? await pullSecretsOf(ctx.db, product.workspace_id, ctx.clock.now(), ctx.secrets) : [];
      for (const install of installs) {
        if (!install.cluster_id) continue;
        for (const release of releasesOf({ ...install, cluster_id: install.cluster_id }, product.sources, product.template_id, pullSecrets)) {
          await ctx.driver.upsertRelease(release);
        }
        await setInstallTemplate(ctx.db, install.id, product.template_id, ctx.clock.now());
        // The regeneration does not wait for the releases: its revision is recorded as deployed.
        const deploy = {
          install_id: install.id,
          workflow_id: ctx.workflow.id,
          template_id: product.template_id,
          sources: product.sources,
          overrides: install.overrides,
          status: 'deployed' as const,
        };
        await recordRevision(ctx.db, deploy, ctx.clock.now());
      }
      await setRegenerationStatus(ctx.db, product.id, product.template_id, 'succeeded', ctx.clock.now());
      return { done: true };
    },
  },
  async fail(ctx) {
    await setRegenerationStatus(ctx.db, String(ctx.state.product_id), ctx.workflow.subject_id, 'failed', ctx.clock.now());
  },
};
