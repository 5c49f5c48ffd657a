// Whether this process can serve: the database and the workflow queue each answer within a deadline, so a hung
// connection makes the readiness probe answer 503 in seconds instead of holding it.
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.ts';

const DEADLINE_MS = 2000;

export type Check = 'ok' | 'unavailable';

async function within(check: () => Promise<unknown>): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('deadline')), DEADLINE_MS);
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
): Promise<{ database: Check; queue: Check | 'not_used' }> {
  const [database, queue] = await Promise.all([
    within(() => sql`SELECT 1`.execute(db)),
    queueReady ? within(queueReady) : Promise.resolve('not_used' as const),
  ]);
  return { database, queue };
}
