// The workflow engine's state. A workflow row is the truth about asynchronous work: its current step, the
// checkpoint data its steps wrote (provider ids), and when it is next due. pg-boss jobs only trigger steps.
// Provisioning backoff lives per cluster, so every worker process sees the same wait.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE workflows
      ADD COLUMN step text NOT NULL DEFAULT 'start',
      ADD COLUMN state jsonb NOT NULL DEFAULT '{}',
      ADD COLUMN attempts integer NOT NULL DEFAULT 0,
      ADD COLUMN run_after bigint,
      ADD COLUMN enqueued_at timestamptz,
      ADD COLUMN job_id uuid,
      ADD COLUMN error text;
    -- Due workflows (the ticker's scan) and unfinished ones (the orphan scan after a worker crash).
    CREATE INDEX workflows_due ON workflows (run_after) WHERE run_after IS NOT NULL;
    CREATE INDEX workflows_unfinished ON workflows (created_at) WHERE status IN ('pending', 'running');
    ALTER TABLE machines ADD COLUMN server_id text;
    ALTER TABLE installs ADD COLUMN template_id text;
    CREATE INDEX machines_cluster_status ON machines (cluster_id, status, created_at);
    CREATE INDEX installs_product_status ON installs (product_id, status);
    CREATE TABLE provisioning_backoff (
      cluster_id text PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
      failures integer NOT NULL,
      backoff_until bigint NOT NULL,
      -- What the cluster could be offered when the failures happened (plan and limit): a change resets them.
      offering text NOT NULL
    );
    -- Provider rate limits (providers/rate-limit.ts): the next free moment per key, in ms.
    CREATE TABLE rate_limit_slots (
      key text PRIMARY KEY,
      next_at_ms bigint NOT NULL
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE rate_limit_slots, provisioning_backoff;
    DROP INDEX installs_product_status;
    DROP INDEX machines_cluster_status;
    ALTER TABLE installs DROP COLUMN template_id;
    ALTER TABLE machines DROP COLUMN server_id;
    DROP INDEX workflows_unfinished;
    DROP INDEX workflows_due;
    ALTER TABLE workflows DROP COLUMN step, DROP COLUMN state, DROP COLUMN attempts, DROP COLUMN run_after,
      DROP COLUMN enqueued_at, DROP COLUMN job_id, DROP COLUMN error;
  `.execute(db);
}
