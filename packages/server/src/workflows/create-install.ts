// Install a product: choose a running cluster of the product in the install's region, install one helm
// release per product source with the install's overrides, wait for the pods, then `running` (or `failed`
// with a status_message). Re-entrant: `helm upgrade --install` of the same release is the same release.
// updateInstall and rollbackInstall run the same steps on a placed install; a rollback deploys its revision's
// template and sources. Each deploy is recorded as a revision, and uninstalls the install's releases of sources it no
// longer has (uninstallReleasesNotIn). The wait for the releases has a deadline (INSTALL_SYNC_TIMEOUT_SECONDS); an
// error the deployer reports meanwhile fails it sooner, once it has lasted.
import type { ProductSource } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { StepContext, WorkflowDefinition } from '../engine/engine.ts';
import type { HelmRelease, HelmReleaseRequest } from '../providers/types.ts';
import { clusterInWorkspace, placementCandidates } from '../resources/clusters.ts';
import { finishRevision, recordRevision, revisionOf, sourcesEverDeployed } from '../resources/install-revisions.ts';
import { finishInstall, installById, placeInstall, setInstallTemplate } from '../resources/installs.ts';
import { heldTemplateOf, productOfWorkspace } from '../resources/products.ts';
import { pullSecretsOf } from '../resources/registry-credentials.ts';

/** How long an install waits for a cluster of its region that is still being created. */
const PLACEMENT_WAIT = 10;

/**
 * How long an error the deployer reports (an Argo CD condition) may last before the deploy fails with it: long
 * enough for one that clears by itself (a cluster Secret not yet in Argo CD's cache), short beside the deadline.
 */
export const CONDITION_GRACE_SECONDS = 30;

const installOf = (ctx: StepContext) => installById(ctx.db, ctx.workflow.subject_id);

/** The install's product, only when it is of the install's workspace (what an install references lives there). */
const productOf = (ctx: StepContext, install: { product_id: string; workspace_id: string }) =>
  productOfWorkspace(ctx.db, install.product_id, install.workspace_id);

/** Values merged key by key; an override's value replaces the chart's where both are plain objects' leaves. */
export function mergeValues(base: Record<string, unknown>, override: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key];
    const bothObjects = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
    merged[key] = bothObjects(current) && bothObjects(value) ? mergeValues(current, value) : value;
  }
  return merged;
}

/**
 * Where a deploy's releases stand, for every step that waits for them (an install's, a product regeneration's):
 * failed (one release failed, or has reported an error condition for CONDITION_GRACE_SECONDS, counted from
 * `conditionSince`, when it was first seen), all deployed, or still to wait for, with the moment to keep.
 */
function releasesProgress(
  releases: (HelmRelease | undefined)[],
  conditionSince: number | undefined,
  now: number,
): { failed: string } | { deployed: true } | { waiting: true; conditionSince: number | undefined } {
  const failed = releases.find((r) => r?.status === 'failed');
  if (failed) return { failed: failed.message ?? `Release ${failed.release} failed.` };
  if (releases.every((r) => r?.status === 'deployed')) return { deployed: true };
  const stalled = releases.find((r) => r?.condition);
  if (!stalled?.condition) return { waiting: true, conditionSince: undefined };
  const since = conditionSince ?? now;
  if (now - since >= CONDITION_GRACE_SECONDS) return { failed: `Release ${stalled.release}: ${stalled.condition}` };
  return { waiting: true, conditionSince: since };
}

/** What the deployer reports of a deploy's releases, by name (undefined: it has none of that name). */
function namedReleases(ctx: StepContext, install: { id: string; cluster_id: string }, names: string[]) {
  return Promise.all(names.map(async (name) => ({ name, release: await ctx.driver.getRelease(install.cluster_id, install.id, name) })));
}

/**
 * Why a deploy failed at its deadline: what the deployer reports of the first release not deployed (its error
 * condition, else its own message), or that it is missing; undefined when all are deployed after all.
 */
function notDeployed(releases: { name: string; release: HelmRelease | undefined }[], waited: number): string | undefined {
  const stuck = releases.find(({ release }) => release?.status !== 'deployed');
  if (!stuck) return undefined;
  const reason = !stuck.release ? 'it is missing' : (stuck.release.condition ?? stuck.release.message ?? `it is still ${stuck.release.status}`);
  return `Release ${stuck.name} was not deployed within ${waited} s: ${reason}`;
}

/** The releases of `names` the deployer still has, for a wait to see them gone. */
export async function releasesLeft(ctx: StepContext, install: { id: string; cluster_id: string }, names: string[]) {
  return (await namedReleases(ctx, install, names)).filter(({ release }) => release !== undefined);
}

/** Why releases that were uninstalled are still there at a deadline: what the deployer reports of the first one. */
export function notRemoved(left: { name: string; release: HelmRelease | undefined }[], waited: number): string | undefined {
  const stuck = left[0];
  if (!stuck) return undefined;
  const reason = stuck.release?.condition ?? stuck.release?.message ?? 'its deployer has not removed what it deployed';
  return `Release ${stuck.name} was not removed within ${waited} s: ${reason}`;
}

/**
 * What a deploy of an install waits for: its releases (by name) deployed, and the releases it uninstalled as no
 * longer deployed (`removed`; absent in a workflow written before they were) gone.
 */
export interface DeployWait {
  releases: string[];
  removed?: string[];
}

/**
 * Uninstalls the install's releases of sources a deploy of `sources` no longer has (a product update replaced or
 * dropped them, a rollback went back before them): every source a revision of the install rendered, by release
 * name, that is not one of the deploy's. Called once the deploy's releases were sent, so the install is never left
 * without what it runs; uninstalling what is gone succeeds, so a re-run is safe. Returns the names, for the wait.
 */
export async function uninstallReleasesNotIn(ctx: StepContext, install: { id: string; cluster_id: string }, sources: ProductSource[]): Promise<string[]> {
  const deployed = new Set(sources.map(releaseName));
  const dropped = new Set((await sourcesEverDeployed(ctx.db, install.id)).map(releaseName).filter((name) => !deployed.has(name)));
  for (const name of dropped) await ctx.driver.uninstallRelease(install.cluster_id, install.id, name);
  return [...dropped];
}

/**
 * Where a deploy stands (`releasesProgress`), counting as deployed only once the releases it uninstalled are gone
 * too: an install reads running when it runs its sources and no others. A driver that removes them asynchronously
 * (Argo CD, through the Application's finalizer) is waited for within the deploy's own deadline, whose reason then
 * names the release left (`deployShortfall`).
 */
export async function deployProgress(
  ctx: StepContext,
  install: { id: string; cluster_id: string },
  wait: DeployWait,
  conditionSince: number | undefined,
  now: number,
): Promise<ReturnType<typeof releasesProgress>> {
  const progress = releasesProgress(
    (await namedReleases(ctx, install, wait.releases)).map((r) => r.release),
    conditionSince,
    now,
  );
  if ('deployed' in progress && (await releasesLeft(ctx, install, wait.removed ?? [])).length) return { waiting: true, conditionSince: undefined };
  return progress;
}

/** Why a deploy did not land by its deadline: a release not deployed, else one it uninstalled not gone; undefined when it landed. */
export async function deployShortfall(ctx: StepContext, install: { id: string; cluster_id: string }, wait: DeployWait, waited: number) {
  return notDeployed(await namedReleases(ctx, install, wait.releases), waited) ?? notRemoved(await releasesLeft(ctx, install, wait.removed ?? []), waited);
}

/** The deploy an install workflow's state waits for (written by its `release` step). */
const deployWaitOf = (ctx: StepContext): DeployWait => ({
  releases: (ctx.state.releases as string[] | undefined) ?? [],
  removed: ctx.state.removed as string[] | undefined,
});

/** The install workflow, its releases' wait bounded by `syncTimeoutSeconds`. */
export function createInstallWorkflow(syncTimeoutSeconds: number): WorkflowDefinition {
  return {
    ...installSteps,
    deadlines: {
      await: {
        seconds: () => syncTimeoutSeconds,
        async expired(ctx, waited) {
          const install = await installOf(ctx);
          if (!install?.cluster_id) return { done: true }; // as the step: nothing of it is left to wait for
          const reason = await deployShortfall(ctx, { id: install.id, cluster_id: install.cluster_id }, deployWaitOf(ctx), waited);
          return reason ? { failed: reason } : { next: 'running' };
        },
      },
    },
  };
}

/** The release name of a product source in an install's namespace. */
export const releaseName = (source: ProductSource) => `${(source.chart.chart || 'app').replace(/[^a-z0-9-]/g, '-').slice(0, 40)}-${source.id.slice(-6)}`;

/**
 * The helm releases of an install at a product template: one per source, with the install's overrides, pulling
 * their images with the install's workspace's active registry credentials.
 */
export function releasesOf(
  install: { id: string; cluster_id: string; overrides: { template_helm_source_id: string; values: Record<string, unknown> }[] },
  sources: ProductSource[],
  templateId: string,
  pullSecrets: HelmReleaseRequest['pull_secrets'] = [],
): HelmReleaseRequest[] {
  return sources.map((source) => {
    const override = install.overrides.find((o) => o.template_helm_source_id === source.id);
    return {
      cluster_id: install.cluster_id,
      namespace: install.id,
      release: releaseName(source),
      chart: source.chart,
      values: mergeValues(source.values, override?.values ?? {}),
      template_id: templateId,
      ...(pullSecrets.length ? { pull_secrets: pullSecrets } : {}),
    };
  });
}

const installSteps: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      const install = await installOf(ctx);
      if (!install) return { done: true };
      if (install.cluster_id) return { next: 'release' };
      const product = await productOf(ctx, install);
      if (!product) return { failed: `Product ${install.product_id} is not in the install's workspace.` };
      // Placed only on a cluster of the install's own workspace, checked again here: a product's cluster list is
      // checked when it is written, and this is where the workflow acts on it.
      const clusters = await placementCandidates(ctx.db, install.workspace_id, install.region_id, product.cluster_ids);
      const running = clusters.find((c) => c.status === 'RUNNING');
      if (!running) {
        if (clusters.some((c) => c.status === 'PROVISIONING') && ctx.workflow.attempts < 30) {
          return { wait: PLACEMENT_WAIT, attempts: ctx.workflow.attempts + 1 };
        }
        return { failed: `No running cluster of the product in region ${install.region_id}.` };
      }
      await placeInstall(ctx.db, install.id, running.id, ctx.clock.now());
      return { next: 'release' };
    },

    async release(ctx) {
      const install = await installOf(ctx);
      if (!install?.cluster_id) return { done: true };
      const product = await productOf(ctx, install);
      if (!product) return { failed: `Product ${install.product_id} is not in the install's workspace.` };
      if (!(await clusterInWorkspace(ctx.db, install.cluster_id, install.workspace_id))) {
        return { failed: `Cluster ${install.cluster_id} is not in the install's workspace.` };
      }
      // A rollback redeploys what its revision rendered; the others, the product's current template.
      const target = typeof ctx.state.revision === 'number' ? await revisionOf(ctx.db, install.id, ctx.state.revision) : product;
      if (!target) return { failed: `Install ${install.id} has no revision ${String(ctx.state.revision)}.` };
      const pullSecrets = await pullSecretsOf(ctx.db, install.workspace_id, ctx.clock.now(), ctx.secrets);
      const placed = { ...install, cluster_id: install.cluster_id };
      for (const release of releasesOf(placed, target.sources, target.template_id, pullSecrets)) {
        await ctx.driver.upsertRelease(release);
      }
      const removed = await uninstallReleasesNotIn(ctx, placed, target.sources);
      await setInstallTemplate(ctx.db, install.id, target.template_id);
      const deploy = {
        install_id: install.id,
        workflow_id: ctx.workflow.id,
        template_id: target.template_id,
        sources: target.sources,
        overrides: install.overrides,
      };
      await recordRevision(ctx.db, { ...deploy, status: 'deploying' }, ctx.clock.now());
      return { next: 'await', state: { ...ctx.state, releases: target.sources.map(releaseName), removed, condition_since: undefined } };
    },

    async await(ctx) {
      const install = await installOf(ctx);
      if (!install?.cluster_id) return { done: true };
      const since = typeof ctx.state.condition_since === 'number' ? ctx.state.condition_since : undefined;
      const progress = await deployProgress(ctx, { id: install.id, cluster_id: install.cluster_id }, deployWaitOf(ctx), since, ctx.clock.now());
      if ('failed' in progress) return { failed: progress.failed };
      if ('deployed' in progress) return { next: 'running' };
      return { wait: 2, state: { ...ctx.state, condition_since: progress.conditionSince } };
    },

    async running(ctx) {
      const install = await installOf(ctx);
      if (!install) return { done: true };
      const now = ctx.clock.now();
      // A product regeneration upgrades only running installs: one that landed while this install was being
      // installed sends it back to release the new template. The product row is held until this commits, so an
      // update after this check waits, and its regeneration then finds the install running.
      const behind = await ctx.db.transaction().execute(async (trx) => {
        const template = await heldTemplateOf(trx, install.product_id);
        // A rollback deploys an older template on purpose; every other deploy ends on the product's current one.
        const rollback = typeof ctx.state.revision === 'number';
        if (!rollback && template !== undefined && template !== install.template_id) return true;
        await finishRevision(trx, install.id, ctx.workflow.id, 'deployed', now);
        // Told (event and notification) by the change itself, by the run that makes it (a re-run after a crash finds it made).
        await finishInstall(trx, install.id, { status: 'running' }, now);
        return false;
      });
      return behind ? { next: 'release' } : { done: true };
    },
  },

  async fail(ctx, message) {
    const install = await installOf(ctx);
    return async (trx) => {
      if (install) await failDeploy({ ...ctx, db: trx }, install, message);
    };
  },
};

/**
 * A deploy of this workflow that did not land: its revision and the install fail with `message`, together; the
 * install's change is told (event and notification) by itself.
 */
export async function failDeploy(ctx: StepContext, install: { id: string }, message: string): Promise<void> {
  const now = ctx.clock.now();
  await inTransaction(ctx.db, async (trx) => {
    await finishRevision(trx, install.id, ctx.workflow.id, 'failed', now);
    await finishInstall(trx, install.id, { status: 'failed', message }, now);
  });
}
