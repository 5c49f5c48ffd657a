// Workflow kinds are named by the operation that starts them (the operationId), and the template regeneration,
// which two operations start, by its resource verb. Rows written under the old names are renamed both ways.
import { type Kysely, sql } from 'kysely';

const RENAMES: [old: string, renamed: string][] = [
  ['cluster_create', 'createCluster'],
  ['provision', 'requestMachine'],
  ['deprovision', 'deleteMachine'],
  ['suspend', 'suspendMachine'],
  ['resume', 'resumeSuspension'],
  ['install', 'createInstall'],
  ['regeneration', 'regenerateProduct'],
];

async function rename(db: Kysely<unknown>, pairs: [from: string, to: string][]): Promise<void> {
  for (const [from, to] of pairs) await sql`UPDATE workflows SET kind = ${to} WHERE kind = ${from}`.execute(db);
}

export const up = (db: Kysely<unknown>): Promise<void> => rename(db, RENAMES);

export const down = (db: Kysely<unknown>): Promise<void> =>
  rename(
    db,
    RENAMES.map(([old, renamed]) => [renamed, old]),
  );
