// The workflow engine. A row of `workflows` is the truth: its kind, its current step, the checkpoints its
// steps wrote, and when it is next due. pg-boss jobs are only triggers ("look at workflow X now"):
//   - a workflow is started in the transaction that creates its subject, with its first job sent in that same
//     transaction (so there is never a row without a trigger, nor a trigger without a row);
//   - a worker runs a workflow's steps while holding a session advisory lock on it, so two deliveries of one
//     job never run it twice at once, and a crashed worker's lock goes with its connection;
//   - a step that must wait (a server booting) records `run_after`; each worker's ticker sends a job for every
//     workflow that is due by the injected clock, and for orphans (unfinished, not locked, not enqueued
//     lately: what a crashed worker held), so nothing depends on one process staying alive.
// Steps are re-entrant: a re-run after a crash adopts what an earlier run created (see the kinds).
import { randomUUID } from 'node:crypto';
import { CompiledQuery, type Kysely, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database, Row, WorkflowKind } from '../db/schema.ts';
import { newId } from '../ids.ts';
import { type ClusterDriver, type ComputeProvider, ProviderError } from '../providers/types.ts';
import type { SecretBox } from '../services/secrets.ts';
import { type DatabaseReading, metrics, observePool } from '../telemetry/metrics.ts';
import { contextOf, currentTraceparent, inSpan } from '../telemetry/tracing.ts';

const QUEUE = 'workflow-step';
/** The advisory lock namespace of running workflows: (LOCK_NAMESPACE, hashtext(id) & 0x7fffffff). */
const LOCK_NAMESPACE = 7291;
/** A workflow runs at most this many steps per job before yielding to others. */
const STEPS_PER_JOB = 20;

export interface StepContext {
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  provider: ComputeProvider;
  driver: ClusterDriver;
  /** Opens BYOM cloud credentials (workflows/credentials.ts); absent without a secrets key. */
  secrets?: SecretBox;
  workflow: Row<'workflows'>;
  /** Checkpoints written by earlier steps of this workflow. */
  state: Record<string, unknown>;
  /** Makes another workflow due now (e.g. the next queued machine when a provisioning slot frees up). */
  wake(trx: Kysely<Database>, workflowId: string): Promise<void>;
}

export type StepResult =
  /** Go on with `next` at once, after saving `state`. */
  | { next: string; state?: Record<string, unknown> }
  /** Look again after `seconds` (at `next`, or the same step). */
  | { wait: number; next?: string; state?: Record<string, unknown>; attempts?: number }
  | { done: true }
  | { failed: string };

/**
 * A step that waits on something outside (a server booting, a node joining, Argo CD syncing) waits at most
 * `seconds` in all, counted from its first wait; then the engine runs `expired` instead of the step, which fails
 * the workflow with the reason or remediates (deletes what hangs, goes back a step).
 */
export interface StepDeadline {
  seconds(ctx: StepContext): number;
  expired(ctx: StepContext, waitedSeconds: number): Promise<StepResult>;
}

export interface WorkflowDefinition {
  steps: Record<string, (ctx: StepContext) => Promise<StepResult>>;
  /** The deadline of each step that waits on something outside. */
  deadlines?: Record<string, StepDeadline>;
  /**
   * Steps that wait without a deadline of their own, each with the reason their wait is bounded all the same
   * (a queued machine waits for a slot, which machines whose boot has a deadline free).
   */
  boundedElsewhere?: Record<string, string>;
  /**
   * A step threw (a provider error, an outage): what now. The default retries with exponential backoff and
   * gives up after a few attempts through `fail`.
   */
  onError?(ctx: StepContext, error: unknown, attempts: number): Promise<StepResult>;
  /**
   * The workflow failed. First what must be undone outside (a server deleted, powered back on): outside any
   * transaction, and re-entrant, as a re-run after a crash does it again. Then it hands back the change that marks
   * the subject failed with a message users see (status_message, an event, a notification): the engine runs it in
   * the transaction that records the workflow failed, so both commit or neither does (never a failed subject beside
   * a running workflow, nor the failure told twice), and not at all for a workflow cancelled meanwhile.
   */
  fail(ctx: StepContext, message: string): Promise<FailureChange>;
}

/** Marks a failed workflow's subject failed, in the transaction that records the workflow failed. */
export type FailureChange = (trx: Transaction<Database>) => Promise<void>;

/** What request handlers need: start a workflow inside the transaction that creates its subject. */
export interface WorkflowStarter {
  /** Rejects when the queue behind the starter does not answer; absent when there is no queue. */
  queueReady?(): Promise<void>;
  start(trx: Transaction<Database> | Kysely<Database>, kind: WorkflowKind, subjectId: string, state?: Record<string, unknown>): Promise<string>;
}

/** A new workflow's row, pending, with the active span's traceparent (its steps' parent). */
const workflowRow = (kind: WorkflowKind, subjectId: string, state: Record<string, unknown>, now: number) => ({
  id: newId('wf'),
  kind,
  subject_id: subjectId,
  status: 'pending' as const,
  state: JSON.stringify(state),
  trace_parent: currentTraceparent(),
  created_at: now,
  updated_at: now,
});

/**
 * A starter without a queue: the row is due at once and the next ticker of any worker sends its job. Used by
 * processes that run no engine (tests of the API alone).
 */
export function rowOnlyStarter(clock: Clock): WorkflowStarter {
  return {
    async start(trx, kind, subjectId, state = {}) {
      const now = clock.now();
      const row = workflowRow(kind, subjectId, state, now);
      await trx
        .insertInto('workflows')
        .values({ ...row, run_after: now })
        .execute();
      return row.id;
    },
  };
}

const DEFAULT_MAX_ATTEMPTS = 5;

/** Cancels unfinished workflows (their subject is going away); a step running now ends without effect. */
export async function cancelWorkflows(trx: Kysely<Database>, subjectIds: string[], reason: string, now: number): Promise<string[]> {
  if (subjectIds.length === 0) return [];
  const rows = await trx
    .updateTable('workflows')
    .set({ status: 'failed', error: reason, run_after: null, updated_at: now })
    .where('subject_id', 'in', subjectIds)
    .where('status', 'in', ['pending', 'running'])
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

/** Forgets the workflows of subjects that are deleted with their history (a cluster). */
export async function deleteWorkflowsOf(trx: Kysely<Database>, subjectIds: string[]): Promise<void> {
  if (subjectIds.length > 0) await trx.deleteFrom('workflows').where('subject_id', 'in', subjectIds).execute();
}

/** Whether a worker is running a step of any of these workflows right now (it holds their lock). */
export async function anyRunning(db: Kysely<Database>, workflowIds: string[]): Promise<boolean> {
  if (workflowIds.length === 0) return false;
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.classid = ${LOCK_NAMESPACE}::int::oid AND l.objsubid = 2
      AND l.objid IN (SELECT (hashtext(id) & 2147483647)::int::oid FROM unnest(${workflowIds}::text[]) AS id)`.execute(db);
  return (rows[0]?.n ?? 0) > 0;
}

/** Where a workflow's state records the step it waits in and since when (clock seconds). */
const WAITING = 'waiting';
type Waiting = { step: string; since: number };

/** How long the workflow has waited in `step` so far; 0 when it is not waiting there. */
export function waitedIn(workflow: Pick<Row<'workflows'>, 'state'>, step: string, now: number): number {
  const waiting = workflow.state[WAITING] as Waiting | undefined;
  return waiting?.step === step ? now - waiting.since : 0;
}

/** The default for a step that threw: retry after 2, 4, 8, 16 s, then fail; a provider error no retry can fix fails now. */
export function retryThenFail(error: unknown, attempts: number): StepResult {
  if (attempts >= DEFAULT_MAX_ATTEMPTS || (error instanceof ProviderError && error.final))
    return { failed: error instanceof Error ? error.message : String(error) };
  return { wait: 2 ** attempts, attempts };
}

/** A workflow's status changed: it began running, succeeded or failed. */
export interface WorkflowTransition {
  workflowId: string;
  kind: WorkflowKind;
  subjectId: string;
  state: Record<string, unknown>;
  status: 'running' | 'succeeded' | 'failed';
}

/** A step's result as a label: next, wait, done or failed. */
const outcomeOf = (result: StepResult): string => ('done' in result ? 'done' : 'failed' in result ? 'failed' : 'wait' in result ? 'wait' : 'next');

const goesOn = (result: StepResult): result is { next: string; state?: Record<string, unknown> } => 'next' in result && !('wait' in result);

export interface EngineOptions {
  db: Kysely<Database>;
  connectionString: string;
  clock: Clock;
  logger: Logger;
  provider: ComputeProvider;
  driver: ClusterDriver;
  secrets?: SecretBox;
  definitions: Record<WorkflowKind, WorkflowDefinition>;
  /** Workflows one process runs at once. */
  concurrency: number;
  /** How often (real ms) the ticker looks for due and orphaned workflows. */
  tickMs: number;
  /** An unfinished, unlocked workflow whose job was sent longer ago than this (real seconds) is resent. */
  orphanAfterSeconds: number;
  /** A pause (real ms) after each step is recorded: lets crash tests kill a worker at every step boundary. */
  stepDelayMs?: number;
  /**
   * Told each transition in the transaction that records it, so what it writes commits with the workflow's row
   * (the composition root records it in the audit log).
   */
  onTransition?: (trx: Kysely<Database>, transition: WorkflowTransition, now: number) => Promise<void>;
}

/** pg-boss statements run on the caller's Kysely transaction. */
export function onTransaction(trx: Kysely<Database>) {
  return {
    async executeSql(text: string, values: unknown[] = []) {
      const result = await trx.executeQuery(CompiledQuery.raw(text, values));
      return { rows: result.rows as Record<string, unknown>[] };
    },
  };
}

export class WorkflowEngine implements WorkflowStarter {
  private readonly options: EngineOptions;
  private readonly boss: PgBoss;
  private readonly lockPool: pg.Pool;
  private ticker: NodeJS.Timeout | undefined;
  private ticking = false;
  private stopped = false;

  constructor(options: EngineOptions) {
    this.options = options;
    // LISTEN/NOTIFY wakes workers when a job is sent (on commit of the sending transaction); polling stays as
    // the fallback.
    this.boss = new PgBoss({ connectionString: options.connectionString, schema: 'pgboss', max: 4, useListenNotify: true });
    // Connections that the database closes while this process shuts down are expected, not errors.
    this.boss.on('error', (error) => {
      // The message and code only: pg's errors carry their whole client object.
      if (!this.stopped) options.logger.error({ err: { message: error.message, code: (error as { code?: string }).code } }, 'pg-boss error');
    });
    // One connection per running workflow holds its advisory lock; the steps use the shared pool.
    // A connection attempt that gets no answer (a server shutting down or starting up) fails instead of waiting forever.
    this.lockPool = new pg.Pool({ connectionString: options.connectionString, max: options.concurrency, connectionTimeoutMillis: 10_000 });
    this.lockPool.on('error', () => {});
    // A lock connection sits idle between the steps it guards: when PostgreSQL goes away it emits 'error' with
    // no query to reject, an uncaught exception without a listener. The run's next query fails and the
    // connection is released as broken (runWorkflow), so the event itself needs nothing more.
    this.lockPool.on('connect', (client) => client.on('error', () => {}));
    observePool('workflow_locks', this.lockPool);
  }

  /** Starts pg-boss (creating its schema once); with `work`, also runs workflows in this process. */
  async run({ work }: { work: boolean }): Promise<void> {
    await this.boss.start();
    await this.boss.createQueue(QUEUE, { policy: 'standard', retryLimit: 0, expireInSeconds: 300, notify: true });
    if (!work) return;
    // Batches keep the worker fetching while there is a backlog (a batch of one would wait a polling interval
    // after every job); the jobs of a batch run side by side.
    const batchSize = Math.min(4, this.options.concurrency);
    await this.boss.work<{ workflow_id: string }>(
      QUEUE,
      {
        batchSize,
        burstWhenBatchFull: batchSize > 1,
        localConcurrency: Math.ceil(this.options.concurrency / batchSize),
        pollingIntervalSeconds: 0.5,
        notifyPollingIntervalSeconds: 2,
      },
      async (jobs) => {
        await Promise.all(jobs.map((job) => this.runWorkflow(job.data.workflow_id)));
      },
    );
    this.ticker = setInterval(() => void this.tick(), this.options.tickMs);
  }

  /**
   * Unfinished workflows by kind and status (every kind, zeros included) and the seconds since the oldest one not
   * yet begun was started: what a metrics scrape reports (the partial index on status reads them).
   */
  async backlog(): Promise<Pick<DatabaseReading, 'workflows' | 'oldestPendingSeconds'>> {
    const rows = await this.options.db
      .selectFrom('workflows')
      .select((eb) => ['kind', 'status', eb.fn.countAll<string>().as('count'), eb.fn.min('created_at').as('oldest')])
      .where('status', 'in', ['pending', 'running'])
      .groupBy(['kind', 'status'])
      .execute();
    const count = (kind: string, status: string) => Number(rows.find((r) => r.kind === kind && r.status === status)?.count ?? 0);
    const oldest = rows.filter((r) => r.status === 'pending').map((r) => Number(r.oldest));
    return {
      workflows: Object.keys(this.options.definitions).flatMap((kind) =>
        ['pending', 'running'].map((status) => ({ kind, status, count: count(kind, status) })),
      ),
      oldestPendingSeconds: oldest.length > 0 ? this.options.clock.now() - Math.min(...oldest) : undefined,
    };
  }

  async queueReady(): Promise<void> {
    // Through pg-boss's own connections, which may fail while the shared pool works.
    const [queue] = await this.boss.getQueues([QUEUE]);
    if (!queue) throw new Error(`no queue ${QUEUE}`);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    await this.boss.stop({ graceful: true, timeout: 10_000 });
    await this.lockPool.end();
  }

  async start(trx: Transaction<Database> | Kysely<Database>, kind: WorkflowKind, subjectId: string, state: Record<string, unknown> = {}): Promise<string> {
    const jobId = randomUUID();
    const row = workflowRow(kind, subjectId, state, this.options.clock.now());
    const { id } = row;
    await trx
      .insertInto('workflows')
      .values({ ...row, run_after: null, enqueued_at: sql<Date>`now()`, job_id: jobId })
      .execute();
    await this.boss.send(QUEUE, { workflow_id: id }, { id: jobId, db: onTransaction(trx) });
    return id;
  }

  /** One beat of the ticker: sends what is due (sendDue); a tick that fails is retried on the next. */
  async tick(): Promise<number> {
    if (this.ticking || this.stopped) return 0;
    this.ticking = true;
    try {
      return await this.sendDue();
    } catch (error) {
      this.options.logger.warn({ err: error }, 'workflow tick failed; retrying on the next tick');
      return 0;
    } finally {
      this.ticking = false;
    }
  }

  /** Sends a job for every due workflow and every orphan, in the transaction that marks them enqueued. */
  private sendDue(): Promise<number> {
    return this.options.db.transaction().execute(async (trx) => {
      // Due by the clock (the partial index on run_after)…
      const due = await sql<{ id: string; job_id: string }>`
          UPDATE workflows w SET run_after = NULL, enqueued_at = now(), job_id = gen_random_uuid()
          FROM (SELECT id FROM workflows WHERE run_after <= ${this.options.clock.now()} ORDER BY run_after LIMIT 500 FOR UPDATE SKIP LOCKED) due
          WHERE w.id = due.id
          RETURNING w.id, w.job_id`.execute(trx);
      // …and orphans (the partial index on status): unfinished, no worker holding them, and their last job no
      // longer waiting in the queue yet not sent just now. A worker that died leaves its job active, not
      // waiting, so its workflow is sent again after orphanAfterSeconds.
      const orphans = await sql<{ id: string; job_id: string }>`
          UPDATE workflows w SET enqueued_at = now(), job_id = gen_random_uuid()
          FROM (
            SELECT id FROM workflows
            WHERE status IN ('pending', 'running') AND run_after IS NULL
              AND (enqueued_at IS NULL OR enqueued_at < now() - make_interval(secs => ${this.options.orphanAfterSeconds}))
              AND NOT EXISTS (
                SELECT 1 FROM pg_locks l
                WHERE l.locktype = 'advisory' AND l.classid = ${LOCK_NAMESPACE}::int::oid
                  AND l.objid = (hashtext(workflows.id) & 2147483647)::int::oid AND l.objsubid = 2)
              AND NOT EXISTS (
                SELECT 1 FROM pgboss.job j
                WHERE j.name = ${QUEUE} AND j.id = workflows.job_id AND j.state IN ('created', 'retry'))
            LIMIT 500
            FOR UPDATE SKIP LOCKED
          ) orphan
          WHERE w.id = orphan.id
          RETURNING w.id, w.job_id`.execute(trx);
      const jobs = [...due.rows, ...orphans.rows].map((r) => ({ id: r.job_id, data: { workflow_id: r.id } }));
      if (jobs.length > 0) await this.boss.insert(QUEUE, jobs, { db: onTransaction(trx) });
      return jobs.length;
    });
  }

  /** Runs a workflow's steps until it waits, ends or has run STEPS_PER_JOB steps. */
  async runWorkflow(id: string): Promise<void> {
    const { db, clock, logger } = this.options;
    const lock = await this.lockPool.connect().catch((error: unknown) => {
      logger.warn({ err: error, workflow: id }, 'workflow run not started: no database connection');
      return undefined;
    });
    if (!lock) return; // the orphan scan sends it again once the database answers
    const key = [LOCK_NAMESPACE, id];
    let broken = false;
    try {
      const { rows } = await lock.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2) & 2147483647) AS ok', key);
      if (!rows[0]?.ok) return; // another worker runs it now, and will schedule what comes next
      try {
        for (let steps = 0; steps < STEPS_PER_JOB; steps++) {
          const workflow = await db.selectFrom('workflows').selectAll().where('id', '=', id).executeTakeFirst();
          if (!workflow || workflow.status === 'succeeded' || workflow.status === 'failed') return;
          if (workflow.run_after !== null && workflow.run_after > clock.now()) return; // not due: a duplicate trigger
          // Due and run now: clear run_after, so that a wake during the step shows as a new one.
          if (workflow.run_after !== null) await db.updateTable('workflows').set({ run_after: null }).where('id', '=', id).execute();
          const definition = this.options.definitions[workflow.kind];
          const step = definition.steps[workflow.step];
          const ctx: StepContext = {
            db,
            clock,
            logger: logger.child({ workflow: id, kind: workflow.kind, step: workflow.step }),
            provider: this.options.provider,
            driver: this.options.driver,
            secrets: this.options.secrets,
            workflow,
            state: workflow.state,
            wake: (trx, other) =>
              trx
                .updateTable('workflows')
                .set({ run_after: clock.now() })
                .where('id', '=', other)
                .where('status', 'in', ['pending', 'running'])
                .execute()
                .then(() => {}),
          };
          const deadline = definition.deadlines?.[workflow.step];
          const waited = waitedIn(workflow, workflow.step, clock.now());
          // A span of the trace that started the workflow (its row keeps the request's traceparent), however
          // long after the request it runs.
          const attributes = { 'workflow.id': id, 'workflow.kind': workflow.kind, 'workflow.step': workflow.step };
          const result = await inSpan(
            `${workflow.kind} ${workflow.step}`,
            attributes,
            async () => {
              const started = performance.now();
              let result: StepResult;
              let threw = false;
              try {
                if (!step) throw new Error(`workflow ${workflow.kind} has no step ${workflow.step}`);
                if (deadline && waited > 0 && waited >= deadline.seconds(ctx)) {
                  ctx.logger.warn({ waited }, 'workflow step past its deadline');
                  result = await deadline.expired(ctx, waited);
                } else {
                  result = await step(ctx);
                }
              } catch (error) {
                threw = true;
                const attempts = workflow.attempts + 1;
                ctx.logger.warn({ err: error, attempts }, 'workflow step failed');
                result = definition.onError ? await definition.onError(ctx, error, attempts) : retryThenFail(error, attempts);
              }
              if (metrics) {
                const labels = { kind: workflow.kind, step: workflow.step };
                if (threw) metrics.stepFailures.inc(labels);
                metrics.stepDuration.observe({ ...labels, outcome: threw ? 'error' : outcomeOf(result) }, (performance.now() - started) / 1000);
              }
              const failure = 'failed' in result ? await definition.fail(ctx, result.failed) : undefined;
              await this.record(workflow, result, failure);
              return result;
            },
            { parent: contextOf(workflow.trace_parent) },
          );
          if (this.options.stepDelayMs) await new Promise((resolve) => setTimeout(resolve, this.options.stepDelayMs));
          if (!goesOn(result)) return;
        }
        // Yield to other workflows; the ticker sends this one again at once.
        await db.updateTable('workflows').set({ run_after: clock.now() }).where('id', '=', id).where('status', 'in', ['pending', 'running']).execute();
      } finally {
        await lock.query('SELECT pg_advisory_unlock($1, hashtext($2) & 2147483647)', key);
      }
    } catch (error) {
      // An outage mid-step: the workflow stays unfinished and unlocked, so the orphan scan resends it.
      broken = true;
      logger.warn({ err: error, workflow: id }, 'workflow run interrupted');
    } finally {
      // A connection that failed is closed rather than reused (closing it also drops any lock it held).
      lock.release(broken);
    }
  }

  private async record(workflow: Row<'workflows'>, result: StepResult, failure?: FailureChange): Promise<void> {
    const now = this.options.clock.now();
    const state: Record<string, unknown> = 'state' in result && result.state ? { ...workflow.state, ...result.state } : { ...workflow.state };
    // A wait keeps the moment the workflow began waiting in that step (its deadline counts from there); anything
    // else ends the wait.
    if ('wait' in result) {
      const step = result.next ?? workflow.step;
      if ((workflow.state[WAITING] as Waiting | undefined)?.step !== step) state[WAITING] = { step, since: now } satisfies Waiting;
    } else delete state[WAITING];
    const update =
      'done' in result
        ? { status: 'succeeded' as const, run_after: null, error: null, attempts: 0 }
        : 'failed' in result
          ? { status: 'failed' as const, run_after: null, error: result.failed }
          : goesOn(result)
            ? { status: 'running' as const, step: result.next, attempts: 0, run_after: null }
            : // A wake that arrived while the step ran (run_after set meanwhile) is kept, not overwritten.
              {
                status: 'running' as const,
                step: result.next ?? workflow.step,
                attempts: result.attempts ?? 0,
                run_after: sql<number>`coalesce(run_after, ${now + result.wait})`,
              };
    // A workflow cancelled while its step ran (its subject deleted) stays cancelled.
    const write = (db: Kysely<Database>) =>
      db
        .updateTable('workflows')
        .set({ ...update, state: JSON.stringify(state), updated_at: now })
        .where('id', '=', workflow.id)
        .where('status', 'in', ['pending', 'running'])
        .returning('id')
        .executeTakeFirst();
    const { onTransition } = this.options;
    const transitions = update.status !== workflow.status && onTransition;
    let written: boolean;
    if (!transitions && !failure) {
      written = (await write(this.options.db)) !== undefined;
    } else {
      const transition = { workflowId: workflow.id, kind: workflow.kind, subjectId: workflow.subject_id, state, status: update.status };
      written = await this.options.db.transaction().execute(async (trx) => {
        if (!(await write(trx))) return false;
        await failure?.(trx);
        if (transitions) await onTransition(trx, transition, now);
        return true;
      });
    }
    if (written && (update.status === 'succeeded' || update.status === 'failed'))
      metrics?.workflowsFinished.inc({ kind: workflow.kind, outcome: update.status });
  }
}
