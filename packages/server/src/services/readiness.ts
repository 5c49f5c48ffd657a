// Whether this process can serve: the database and the workflow queue each answer within a deadline
// (READY_TIMEOUT_MS), so a hung connection makes the readiness probe answer 503 in seconds instead of holding it.
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.ts';

export type Check = 'ok' | 'unavailable';

async function within(check: () => Promise<unknown>, deadlineMs: number): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('deadline')), deadlineMs);
  });
  try {
    await Promise.race([check(), late]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

export async function readiness(
  db: Kysely<Database>,
  queueReady: (() => Promise<unknown>) | undefined,
  deadlineMs: number,
): Promise<{ database: Check; queue: Check | 'not_used' }> {
  const [database, queue] = await Promise.all([
    within(() => sql`SELECT 1`.execute(db), deadlineMs),
    queueReady ? within(queueReady, deadlineMs) : Promise.resolve('not_used' as const),
  ]);
  return { database, queue };
}
