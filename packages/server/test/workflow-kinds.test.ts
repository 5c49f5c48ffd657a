// Workflow kinds are named by the operation that starts them; the migration renames rows written under the old
// names (and back on down), and every kind has a definition.
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { down, up } from '../src/db/migrations/20261123_0010_workflow_kinds_by_operation.ts';
import type { Database } from '../src/db/schema.ts';
import { newId } from '../src/ids.ts';
import { workflowDefinitions } from '../src/workflows/index.ts';
import { useTestDatabase } from './support.ts';

const OLD_TO_NEW = {
  cluster_create: 'createCluster',
  provision: 'requestMachine',
  deprovision: 'deleteMachine',
  suspend: 'suspendMachine',
  resume: 'resumeSuspension',
  install: 'createInstall',
  regeneration: 'regenerateProduct',
};

/** Kinds added after the rename, named by their operation from the start. */
const NEWER_KINDS = ['updateInstall', 'rollbackInstall', 'deleteInstall'];

const database = useTestDatabase();

const kinds = async (db: Kysely<Database>, ids: string[]) => {
  const rows = await db.selectFrom('workflows').select(['id', 'kind']).where('id', 'in', ids).execute();
  return Object.fromEntries(rows.map((r) => [r.id, r.kind as string]));
};

describe('workflow kinds', () => {
  it('are the operations that start them, each with a definition', () => {
    expect(Object.keys(workflowDefinitions(loadConfig({}).deadlines)).sort()).toEqual([...Object.values(OLD_TO_NEW), ...NEWER_KINDS].sort());
  });

  it('renames rows of the old names on up, and back on down', async () => {
    const { db } = database;
    const ids = Object.keys(OLD_TO_NEW).map(() => newId('wf'));
    const old = Object.keys(OLD_TO_NEW);
    // Rows as an earlier version wrote them (their kinds are not of today's type).
    await db
      .insertInto('workflows')
      .values(ids.map((id, i) => ({ id, kind: old[i] as never, subject_id: `s${i}`, status: 'succeeded' as const, created_at: 1, updated_at: 1 })))
      .execute();
    await up(db as Kysely<unknown>);
    expect(await kinds(db, ids)).toEqual(Object.fromEntries(ids.map((id, i) => [id, OLD_TO_NEW[old[i] as keyof typeof OLD_TO_NEW]])));
    await down(db as Kysely<unknown>);
    expect(await kinds(db, ids)).toEqual(Object.fromEntries(ids.map((id, i) => [id, old[i]])));
  });
});
