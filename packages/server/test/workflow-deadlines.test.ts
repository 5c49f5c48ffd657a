// The engine's step deadlines: a step that keeps waiting on something outside is cut off once it has waited its
// deadline in all, counted from its first wait in that step, and the definition's `expired` decides what then.
import { describe, expect, it } from 'vitest';
import type { WorkflowKind } from '../src/db/schema.ts';
import { rowOnlyStarter, type WorkflowDefinition, WorkflowEngine, waitedIn } from '../src/engine/engine.ts';
import type { ClusterDriver, ComputeProvider } from '../src/providers/types.ts';
import { serverLogger, TestClock, useTestDatabase } from './support.ts';

const context = useTestDatabase();
const db = () => context.db;

const failures: string[] = [];

/** start → (waits twice) → boot, which never sees its server come up; boot's deadline is 60 s. */
const hanging: WorkflowDefinition = {
  steps: {
    async start(ctx) {
      const looks = Number(ctx.state.looks ?? 0) + 1;
      return looks < 3 ? { wait: 5, state: { looks } } : { next: 'boot' };
    },
    async boot() {
      return { wait: 10 };
    },
  },
  deadlines: {
    boot: {
      seconds: () => 60,
      expired: async (_ctx, waited) => ({ failed: `the server did not come up within 60 s (waited ${waited} s)` }),
    },
  },
  async fail(_ctx, message) {
    return async () => {
      failures.push(message);
    };
  },
};

function engineFor(clock: TestClock) {
  const definitions = new Proxy({} as Record<WorkflowKind, WorkflowDefinition>, { get: () => hanging });
  return new WorkflowEngine({
    db: db(),
    connectionString: context.database.url,
    clock,
    logger: serverLogger(),
    provider: {} as ComputeProvider,
    driver: {} as ClusterDriver,
    definitions,
    concurrency: 1,
    tickMs: 1000,
    orphanAfterSeconds: 60,
  });
}

const rowOf = (id: string) => db().selectFrom('workflows').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('step deadlines', () => {
  it('fail a step that waits past its deadline, counted from its first wait in that step', async () => {
    const clock = new TestClock();
    const engine = engineFor(clock);
    const id = await rowOnlyStarter(clock).start(db(), 'createCluster', 'subject-1');
    // Two waits in `start` (5 s each) do not count toward boot's deadline.
    await engine.runWorkflow(id);
    clock.advance(5);
    await engine.runWorkflow(id);
    clock.advance(5);
    await engine.runWorkflow(id);
    let row = await rowOf(id);
    expect(row.step).toBe('boot');
    expect(waitedIn(row, 'boot', clock.now())).toBe(0); // it began waiting in boot now
    // Five more looks, 10 s apart: 50 s waited, still under the deadline.
    for (let i = 0; i < 5; i++) {
      clock.advance(10);
      await engine.runWorkflow(id);
      row = await rowOf(id);
      expect(row.status).toBe('running');
    }
    expect(waitedIn(row, 'boot', clock.now())).toBe(50);
    clock.advance(10);
    await engine.runWorkflow(id);
    row = await rowOf(id);
    expect(row.status).toBe('failed');
    expect(row.error).toBe('the server did not come up within 60 s (waited 60 s)');
    expect(failures).toContain(row.error);
    await engine.stop();
  });
});
