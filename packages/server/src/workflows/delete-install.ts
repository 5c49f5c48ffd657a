// Uninstall an install: wait for any step of its other workflows that is running now (they were cancelled, but a
// release may be in flight), uninstall the release of every product source from its cluster, then remove the
// install. It reads as `uninstalling` until then; its cluster can be deleted after. The wait for the releases to
// go has a deadline (INSTALL_SYNC_TIMEOUT_SECONDS): then the uninstall fails with the deployer's reason.

import { anyRunning, type StepContext, type WorkflowDefinition } from '../engine/engine.ts';
import { sourcesEverDeployed } from '../resources/install-revisions.ts';
import { failUninstall, installById, removeInstall } from '../resources/installs.ts';
import { productOfWorkspace } from '../resources/products.ts';
import { notRemoved, releaseName, releasesLeft } from './create-install.ts';

const installOf = (ctx: StepContext) => installById(ctx.db, ctx.workflow.subject_id);

/** The releases an uninstall waits to see gone, with what is left of them. */
async function uninstalledLeft(ctx: StepContext) {
  const install = await installOf(ctx);
  if (!install?.cluster_id) return [];
  return releasesLeft(ctx, { id: install.id, cluster_id: install.cluster_id }, (ctx.state.releases as string[] | undefined) ?? []);
}

/** The uninstall workflow, the wait for its releases to go bounded by `timeoutSeconds`. */
export const deleteInstallWorkflow = (timeoutSeconds: number): WorkflowDefinition => ({
  ...deleteInstall,
  deadlines: {
    await_gone: {
      seconds: () => timeoutSeconds,
      async expired(ctx, waited) {
        const reason = notRemoved(await uninstalledLeft(ctx), waited);
        return reason ? { failed: reason } : { next: 'remove' };
      },
    },
  },
  boundedElsewhere: { start: "it waits for steps of the install's other workflows running now, each bounded by its own deadline" },
});

const deleteInstall: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      const cancelled = (ctx.state.cancelled as string[] | undefined) ?? [];
      if (await anyRunning(ctx.db, cancelled)) return { wait: 1 };
      return { next: 'uninstall' };
    },
    async uninstall(ctx) {
      const install = await installOf(ctx);
      if (!install) return { done: true };
      // Never placed: nothing was released. The product's sources and every source a revision rendered (a rollback
      // may have deployed older ones); uninstalling what is gone succeeds, so a re-run repeats it safely.
      if (install.cluster_id) {
        const product = await productOfWorkspace(ctx.db, install.product_id, install.workspace_id);
        const names = new Set([...(product?.sources ?? []), ...(await sourcesEverDeployed(ctx.db, install.id))].map(releaseName));
        for (const name of names) await ctx.driver.uninstallRelease(install.cluster_id, install.id, name);
        return { next: 'await_gone', state: { ...ctx.state, releases: [...names] } };
      }
      return { next: 'remove' };
    },
    // The releases go when their deployer has removed what they deployed (Argo CD drops the Application's
    // resources finalizer then): until then the install reads `uninstalling`.
    async await_gone(ctx) {
      return (await uninstalledLeft(ctx)).length > 0 ? { wait: 2 } : { next: 'remove' };
    },
    async remove(ctx) {
      await removeInstall(ctx.db, ctx.workflow.subject_id, ctx.clock.now());
      return { done: true };
    },
  },
  async fail(ctx, message) {
    return (trx) => failUninstall(trx, ctx.workflow.subject_id, message, ctx.clock.now());
  },
};
