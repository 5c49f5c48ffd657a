// Workspace roles, enforced by the binding: each operation's `x-required-role` in the contract is the least role
// it needs in the workspace it acts in, which is the `{workspaceId}` of its path, the workspace holding the
// resource its path addresses by id, or its X-Workspace-Id. Handlers check no roles. A workspace named by the
// path or the header outside the token's restriction is refused here too, for every operation (403); a resource
// addressed by id in such a workspace is not found by the operation (tenancy.ts).
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { ApiError, notFound } from '../errors.ts';
import type { Caller } from '../operations/types.ts';
import { type AddressedResource, allows, type Membership, membershipOf, membershipOfResource } from '../services/roles.ts';
import { requireAllowedWorkspace } from '../services/tenancy.ts';
import type { OperationMeta } from './contract.ts';

/** The collection a path's first id names, by the path up to that id. */
const ADDRESSED: Record<string, AddressedResource> = {
  '/v1/clusters/': 'clusters',
  '/v1/compute/configs/': 'compute_configs',
  '/v1/compute/cloud_credentials/': 'cloud_credentials',
  '/v1/compute/machines/': 'machines',
  '/v1/compute/suspensions/': 'suspensions',
  '/v1/registry/credentials/': 'registry_credentials',
  '/v1/products/': 'products',
  '/v1/installs/': 'installs',
  '/v1/webhook_endpoints/': 'webhook_endpoints',
};

type Target = { kind: 'path' } | { kind: 'resource'; resource: AddressedResource; param: string } | { kind: 'header' };

/** Where an operation's workspace comes from; a role on an operation that names no workspace is a contract error. */
function targetOf(meta: OperationMeta): Target {
  if (meta.path.includes('{workspaceId}')) return { kind: 'path' };
  const param = /\{(\w+)\}/.exec(meta.path);
  if (param) {
    const resource = ADDRESSED[meta.path.slice(0, param.index)];
    if (!resource) throw new Error(`${meta.operationId}: authorize.ts knows no resource for ${meta.path}`);
    return { kind: 'resource', resource, param: param[1]! };
  }
  if (meta.headerNames.has('x-workspace-id')) return { kind: 'header' };
  throw new Error(`${meta.operationId} declares x-required-role but acts in no workspace`);
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
    // Viewers' operations need no look-up: every member may call them, and the operation checks membership.
    if (!meta.requiredRole || meta.requiredRole === 'viewer') continue;
    if (!meta.responses.has('403')) throw new Error(`${meta.operationId} requires a role but declares no 403`);
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
