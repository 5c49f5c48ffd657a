// Users: the only writer of `users`. There is no public sign-up: users are made by `pnpm admin` and the demo seed.
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Database, Plan } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { newId } from '../ids.ts';
import { ALL_SCOPES, type Scopes } from '../services/scopes.ts';
import type { ActingWorkspace, WorkspaceCaller } from '../services/tenancy.ts';
import { createToken, describeToken } from './tokens.ts';
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

const TOKEN_KINDS = { pat: 'personal_access_token', session: 'session', jwt: 'oauth2_jwt' } as const;

/** Who the caller is and what the token of their request may do (never its secret): `GET /v1/user`. */
export async function describeCaller(
  db: Kysely<Database>,
  caller: WorkspaceCaller & { kind: keyof typeof TOKEN_KINDS; tokenId: string | null; scopes: Scopes },
  workspace: ActingWorkspace | undefined,
): Promise<Schema<'CurrentUser'>> {
  const user = await db.selectFrom('users').select(['id', 'email', 'plan']).where('id', '=', caller.userId).executeTakeFirstOrThrow();
  const token = caller.tokenId ? await describeToken(db, caller.tokenId) : undefined;
  return {
    id: user.id,
    email: user.email,
    plan: user.plan,
    workspace_id: workspace?.id ?? null,
    token: {
      kind: TOKEN_KINDS[caller.kind],
      id: caller.tokenId,
      name: token?.name ?? null,
      scopes: caller.scopes === 'all' ? [...ALL_SCOPES] : (caller.scopes as Schema<'Scope'>[]),
      workspace_ids: caller.workspaceIds === null ? null : [...caller.workspaceIds],
      expires_at: token?.expires_at ?? null,
    },
  };
}
