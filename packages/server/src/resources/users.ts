// Users: the only writer of `users`. There is no public sign-up: users are made by `pnpm admin` and the demo seed.
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Database, Plan } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { newId } from '../ids.ts';
import { createToken } from './tokens.ts';
import { createWorkspace } from './workspaces.ts';

/** A user with a workspace of their own and a first personal access token. */
export async function createUser(
  db: Kysely<Database>,
  clock: Clock,
  email: string,
  plan: Plan,
): Promise<{ userId: string; workspaceId: string; token: string }> {
  return inTransaction(db, async (trx) => {
    const now = clock.now();
    const userId = newId('usr');
    await trx.insertInto('users').values({ id: userId, email, plan, created_at: now }).execute();
    const workspace = await createWorkspace(trx, userId, { name: 'Personal workspace' }, now);
    const { secret } = await createToken(trx, clock, { userId, kind: 'pat', name: 'initial', expiresAt: null });
    return { userId, workspaceId: workspace.id, token: secret };
  });
}

export const findUserByEmail = (db: Kysely<Database>, email: string) => db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();

export const anyUser = async (db: Kysely<Database>): Promise<boolean> => (await db.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;

export const userExists = async (db: Kysely<Database>, userId: string): Promise<boolean> =>
  (await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst()) !== undefined;

/** Moves a user to another plan; false when there is no such user. */
export async function setPlan(db: Kysely<Database>, userId: string, plan: Plan): Promise<boolean> {
  const result = await db.updateTable('users').set({ plan }).where('id', '=', userId).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
