// Quota overrides: the only writer of `quota_overrides` (set by `pnpm admin`; read by services/quotas.ts).
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';

export type OverrideScope = { user_id: string; workspace_id: null } | { user_id: null; workspace_id: string };

/** Replaces the override of one metric for a user or a workspace. */
export async function setQuotaOverride(db: Kysely<Database>, scope: OverrideScope, metric: string, limit: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const existing = trx.deleteFrom('quota_overrides').where('metric', '=', metric);
    await (scope.user_id !== null ? existing.where('user_id', '=', scope.user_id) : existing.where('workspace_id', '=', scope.workspace_id)).execute();
    await trx.insertInto('quota_overrides').values({ ...scope, metric, limit }).execute();
  });
}
