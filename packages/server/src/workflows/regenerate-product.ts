// regenerateProduct, after a product is created or updated: render the new template, then upgrade every running
// install of the product to it, uninstalling each install's releases of sources the new template no longer has (a
// source replaced or dropped). A newer update supersedes an older regeneration, which then ends without effect.
// Where the deployer syncs after the fact (Argo CD; `regenerationWaits`), it then waits for each install's releases
// as an update does, with the install deadline: an install whose releases fail, keep an error condition past its
// grace period, or are not deployed (or those uninstalled not gone) by the deadline fails with the deployer's words,
// and the others go on. The simulation's regeneration records its releases deployed as they are sent.
import type { WorkflowDeadlines } from '../config.ts';
import { inTransaction } from '../db/transaction.ts';
import type { StepContext, StepResult, WorkflowDefinition } from '../engine/engine.ts';
import { finishRevision, recordRevision } from '../resources/install-revisions.ts';
import { installById, installsBehindTemplate, setInstallTemplate } from '../resources/installs.ts';
import { productAtTemplate, setRegenerationStatus } from '../resources/products.ts';
import { pullSecretsOf } from '../resources/registry-credentials.ts';
import { type DeployWait, deployProgress, deployShortfall, failDeploy, releaseName, releasesOf, uninstallReleasesNotIn } from './create-install.ts';

/** The product, when the template this workflow regenerates is still its current one. */
const currentProduct = (ctx: StepContext) => productAtTemplate(ctx.db, String(ctx.state.product_id), ctx.workflow.subject_id);

/**
 * An install whose regenerated releases are awaited: its cluster, the releases sent and those uninstalled, and since
 * when one reports an error.
 */
interface Pending extends DeployWait {
  id: string;
  cluster_id: string;
  condition_since?: number;
}

const pendingOf = (ctx: StepContext) => (ctx.state.pending as Pending[] | undefined) ?? [];
const failuresOf = (ctx: StepContext) => (ctx.state.failures as string[] | undefined) ?? [];

/** Fails one install of this regeneration (not the others); the message is kept for the regeneration's own. */
async function failOne(ctx: StepContext, installId: string, message: string): Promise<string> {
  const install = await installById(ctx.db, installId);
  if (install) await failDeploy(ctx, install, message);
  return `Install ${installId}: ${message}`;
}

/** The regeneration ends: succeeded when every install's releases landed, else failed naming the installs that did not. */
async function finish(ctx: StepContext, failures: string[]): Promise<StepResult> {
  if (failures.length) return { failed: failures.join('; ') };
  await setRegenerationStatus(ctx.db, String(ctx.state.product_id), ctx.workflow.subject_id, 'succeeded', ctx.clock.now());
  return { done: true };
}

export function regenerateProductWorkflow(deadlines: Pick<WorkflowDeadlines, 'installSyncSeconds' | 'regenerationWaits'>): WorkflowDefinition {
  return {
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
        const pending: Pending[] = [];
        for (const install of installs) {
          if (!install.cluster_id) continue;
          const placed = { ...install, cluster_id: install.cluster_id };
          for (const release of releasesOf(placed, product.sources, product.template_id, pullSecrets)) {
            await ctx.driver.upsertRelease(release);
          }
          // Before the install is moved to the template: a re-run of this step after a failed uninstall finds it
          // still behind and sends it all again.
          const removed = await uninstallReleasesNotIn(ctx, placed, product.sources);
          const deploy = {
            install_id: install.id,
            workflow_id: ctx.workflow.id,
            template_id: product.template_id,
            sources: product.sources,
            overrides: install.overrides,
            status: deadlines.regenerationWaits ? ('deploying' as const) : ('deployed' as const),
          };
          // The install moves to the template with its revision, or not at all: a re-run of this step takes only the
          // installs still behind, so one moved without its revision would never get it.
          await inTransaction(ctx.db, async (trx) => {
            await setInstallTemplate(trx, install.id, product.template_id, ctx.clock.now());
            await recordRevision(trx, deploy, ctx.clock.now());
          });
          pending.push({ id: install.id, cluster_id: install.cluster_id, releases: product.sources.map(releaseName), removed });
        }
        if (!deadlines.regenerationWaits || !pending.length) return finish(ctx, []);
        return { next: 'await', state: { ...ctx.state, pending, failures: [] } };
      },
      async await(ctx) {
        if (!(await currentProduct(ctx))) return { done: true }; // a newer regeneration took the installs over
        const now = ctx.clock.now();
        const failures = failuresOf(ctx);
        const still: Pending[] = [];
        for (const install of pendingOf(ctx)) {
          // One deleted, uninstalling or redeployed by its own workflow meanwhile is no longer this one's to settle.
          if ((await installById(ctx.db, install.id))?.status !== 'running') continue;
          const progress = await deployProgress(ctx, install, install, install.condition_since, now);
          if ('failed' in progress) failures.push(await failOne(ctx, install.id, progress.failed));
          else if ('deployed' in progress) await finishRevision(ctx.db, install.id, ctx.workflow.id, 'deployed', now);
          else still.push({ ...install, condition_since: progress.conditionSince });
        }
        if (!still.length) return finish(ctx, failures);
        return { wait: 2, state: { ...ctx.state, pending: still, failures } };
      },
    },
    deadlines: {
      // Every install's releases were sent together, so the install deadline is the step's.
      await: {
        seconds: () => deadlines.installSyncSeconds,
        async expired(ctx, waited) {
          if (!(await currentProduct(ctx))) return { done: true };
          const failures = failuresOf(ctx);
          for (const install of pendingOf(ctx)) {
            // As in the step: one deleted, uninstalling or redeployed by its own workflow is not this one's to fail.
            if ((await installById(ctx.db, install.id))?.status !== 'running') continue;
            const reason = await deployShortfall(ctx, install, install, waited);
            if (reason) failures.push(await failOne(ctx, install.id, reason));
            else await finishRevision(ctx.db, install.id, ctx.workflow.id, 'deployed', ctx.clock.now());
          }
          return finish(ctx, failures);
        },
      },
    },
    async fail(ctx) {
      return (trx) => setRegenerationStatus(trx, String(ctx.state.product_id), ctx.workflow.subject_id, 'failed', ctx.clock.now()).then(() => {});
    },
  };
}
