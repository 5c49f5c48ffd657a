// A workflow's failure is one change: its subject marked failed (and told) commits in the transaction that records
// the workflow failed, or neither does. A crash between the two left a failed subject beside a running workflow,
// whose re-run then told the failure a second time.
import { describe, expect, it } from 'vitest';
import type { WorkflowKind } from '../src/db/schema.ts';
import { cancelWorkflows, rowOnlyStarter, type WorkflowDefinition, WorkflowEngine, type WorkflowTransition } from '../src/engine/engine.ts';
import type { ClusterDriver, ComputeProvider } from '../src/providers/types.ts';
import { serverLogger, TestClock, useTestDatabase } from './support.ts';

const context = useTestDatabase();
const db = () => context.db;

/** Runs while the step runs (the subject deleted meanwhile, say). */
let during: (workflowId: string) => Promise<void> = async () => {};

/** Fails at once; its failure is told by a row (a stand-in for the subject's status, event and notification). */
const failing: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      await during(ctx.workflow.id);
      return { failed: 'the provider refused the server' };
    },
  },
  async fail(ctx, message) {
    return async (trx) => {
      await trx
        .insertInto('rate_limit_slots')
        .values({ key: `told:${ctx.workflow.id}:${message}:${Math.random()}`, next_at_ms: 0 })
        .execute();
    };
  },
};

function engineFor(clock: TestClock, onTransition: (transition: WorkflowTransition) => void) {
  return new WorkflowEngine({
    db: db(),
    connectionString: context.database.url,
    clock,
    logger: serverLogger(),
    provider: {} as ComputeProvider,
    driver: {} as ClusterDriver,
    definitions: new Proxy({} as Record<WorkflowKind, WorkflowDefinition>, { get: () => failing }),
    concurrency: 1,
    tickMs: 1000,
    orphanAfterSeconds: 60,
    onTransition: async (_trx, transition) => onTransition(transition),
  });
}

const told = async (id: string) => (await db().selectFrom('rate_limit_slots').select('key').where('key', 'like', `told:${id}:%`).execute()).length;

describe('a failed workflow', () => {
  it('records its subject failed and itself failed together: a crash between them leaves neither, and the re-run tells it once', async () => {
    const clock = new TestClock();
    let crashes = 1;
    // The workflow's own record fails once as it is written (an outage, a killed process), after the subject's change.
    const engine = engineFor(clock, (transition) => {
      if (transition.status === 'failed' && crashes-- > 0) throw new Error('connection terminated');
    });
    const id = await rowOnlyStarter(clock).start(db(), 'createCluster', 'subject-1');
    await engine.runWorkflow(id);
    const row = () => db().selectFrom('workflows').select(['status', 'error']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(await row()).toMatchObject({ status: 'pending' });
    expect(await told(id)).toBe(0);
    // The orphan scan runs it again: failed, and told once.
    await engine.runWorkflow(id);
    expect(await row()).toEqual({ status: 'failed', error: 'the provider refused the server' });
    expect(await told(id)).toBe(1);
  });

  it('tells nothing when the workflow was cancelled while its step ran (its subject went)', async () => {
    const clock = new TestClock();
    const engine = engineFor(clock, () => {});
    const id = await rowOnlyStarter(clock).start(db(), 'createCluster', 'subject-2');
    during = async (workflowId) => void (await cancelWorkflows(db(), ['subject-2'], 'The cluster was deleted.', clock.now())).includes(workflowId);
    try {
      await engine.runWorkflow(id);
    } finally {
      during = async () => {};
    }
    expect(await db().selectFrom('workflows').select('error').where('id', '=', id).executeTakeFirstOrThrow()).toEqual({ error: 'The cluster was deleted.' });
    expect(await told(id)).toBe(0);
  });
});
