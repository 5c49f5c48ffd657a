// Workspace roles, enforced by the binding: each operation's `x-required-role` in the contract is the least role
// it needs in the workspace it acts in, which is the `{workspaceId}` of its path, the workspace holding the
// resource its path addresses by id, or its X-Workspace-Id. Handlers check no roles. A workspace named by the
// path or the header outside the token's restriction is refused here too, for every operation (403); a resource
// addressed by id in such a workspace is not found by the operation (tenancy.ts).
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { ApiError, notFound } from '../errors.ts';
import type { Caller } from '../operations/types.ts';
import { allows, type Membership, membershipOf, membershipOfResource } from '../services/roles.ts';
import { requireAllowedWorkspace } from '../services/tenancy.ts';
import type { OperationMeta } from './contract.ts';
import { type WorkspaceSource, workspaceSourceOf } from './workspace.ts';

type Target = Exclude<WorkspaceSource, { kind: 'none' }>;

/** Where an operation's workspace comes from; a role on an operation that names no workspace is a contract error. */
function targetOf(meta: OperationMeta): Target {
  const source = workspaceSourceOf(meta);
  if (source.kind === 'header' && meta.path.includes('{')) {
    throw new Error(`${meta.operationId}: services/roles.ts (ADDRESSED) knows no resource for ${meta.path}`);
  }
  if (source.kind === 'none') throw new Error(`${meta.operationId} declares x-required-role but acts in no workspace`);
  return source;
}

/**
 * Checks the caller's role. `found` is told the caller's membership of the workspace the operation acts in
 * whenever it was looked up, also when the role falls short (the audit log records the refusal in that workspace).
 */
export type Authorizer = (
  meta: OperationMeta,
  params: Record<string, string>,
  caller: Caller | undefined,
  workspaceHeader: string | undefined,
  found?: (membership: Membership) => void,
) => Promise<void>;

export function createAuthorizer(db: Kysely<Database>, operations: Iterable<OperationMeta>): Authorizer {
  const targets = new Map<string, Target>();
  for (const meta of operations) {
    if (!meta.requiredRole) {
      if (meta.path.includes('{workspaceId}')) throw new Error(`${meta.operationId} acts in the workspace of its path but declares no x-required-role`);
      continue;
    }
    // A viewer's operation on a resource addressed by id or in X-Workspace-Id needs no look-up: the operation finds
    // its resources among the caller's workspaces. Under a path's `{workspaceId}` the membership is looked up for every
    // role, so an operation there answers a non-member 404 even if it reads the workspace's rows without asking.
    const viewer = meta.requiredRole === 'viewer';
    if (viewer && !meta.path.includes('{workspaceId}')) continue;
    if (!viewer && !meta.responses.has('403')) throw new Error(`${meta.operationId} requires a role but declares no 403`);
    targets.set(meta.operationId, targetOf(meta));
  }

  /** The caller's membership of the operation's workspace; undefined where the operation itself answers a non-member. */
  async function membership(target: Target, caller: Caller, params: Record<string, string>, header: string | undefined): Promise<Membership | undefined> {
    switch (target.kind) {
      case 'path': {
        const workspaceId = params.workspaceId!;
        const found = await membershipOf(db, caller, workspaceId);
        // As the operation would answer it: a workspace the caller is not a member of is not there.
        if (!found) throw notFound('Workspace', workspaceId);
        return found;
      }
      // No such resource, or one of a workspace the caller is not a member of: the operation answers 404.
      case 'resource':
        return membershipOfResource(db, caller, target.resource, params[target.param]!);
      // Without the header the caller acts in their default workspace, which they own; a workspace they are not a
      // member of is the operation's 403.
      case 'header':
        return header === undefined ? undefined : membershipOf(db, caller, header);
    }
  }

  return async (meta, params, caller, header, onFound) => {
    if (caller && params.workspaceId !== undefined && meta.path.includes('{workspaceId}')) requireAllowedWorkspace(caller, params.workspaceId, 'workspaceId');
    if (caller && header !== undefined && meta.headerNames.has('x-workspace-id')) requireAllowedWorkspace(caller, header, 'X-Workspace-Id');
    const target = targets.get(meta.operationId);
    const required = meta.requiredRole;
    if (!target || !required || !caller) return;
    const found = await membership(target, caller, params, header);
    if (found) onFound?.(found);
    if (!found || allows(found.role, required)) return;
    throw new ApiError('forbidden', `${meta.operationId} needs the ${required} role in workspace ${found.workspaceId}; your role is ${found.role}.`, {
      suggestion: `Ask an admin or the owner of the workspace for the ${required} role.`,
      details: { required_role: required, role: found.role },
    });
  };
}
