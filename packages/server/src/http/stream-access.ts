// Whether the caller of an open stream may still read it: the checks the request passed when the stream opened
// (its token, the operation's scope, its membership and role in the stream's workspace within the token's
// restriction), made again on the state of now. Used by writeStream (event-stream.ts) for every stream alike.
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { ApiError } from '../errors.ts';
import type { Caller } from '../operations/types.ts';
import { allows, membershipOf } from '../services/roles.ts';
import { holds } from '../services/scopes.ts';
import type { OperationMeta } from './contract.ts';

export type AccessEnded = Schema<'StreamAccessEnded'>;

/** Resolves undefined while the caller may still read the stream, else why not. */
export type StreamAccessCheck = () => Promise<AccessEnded | undefined>;

export function streamAccessCheck(
  db: Kysely<Database>,
  meta: OperationMeta,
  workspaceId: string,
  /** Authenticates the request's token again (a 401 ApiError when it is no longer valid). */
  authenticate: () => Promise<Caller>,
): StreamAccessCheck {
  return async () => {
    let caller: Caller;
    try {
      caller = await authenticate();
    } catch (error) {
      if (error instanceof ApiError && error.code === 'unauthorized') {
        return { reason: 'unauthenticated', message: 'The token this stream was opened with was revoked or has expired, or its session was logged out.' };
      }
      throw error;
    }
    if (meta.requiredScope !== undefined && !holds(caller.scopes, meta.requiredScope)) {
      return { reason: 'scope_missing', message: `The token no longer holds the scope ${meta.requiredScope}, which ${meta.operationId} needs.` };
    }
    const membership = await membershipOf(db, caller, workspaceId);
    if (!membership) {
      return { reason: 'membership_ended', message: `You are no longer a member of workspace ${workspaceId}, or your token may not act in it.` };
    }
    const required = meta.requiredRole ?? 'viewer';
    if (!allows(membership.role, required)) {
      return {
        reason: 'role_lowered',
        message: `${meta.operationId} needs the ${required} role in workspace ${workspaceId}; your role is now ${membership.role}.`,
      };
    }
    return undefined;
  };
}
