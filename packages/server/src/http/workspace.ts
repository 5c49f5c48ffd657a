// The workspace a request acts in, worked out by the binding once a request and handed to its handler
// (`input.workspace`): handlers resolve and check no workspace. Where it comes from is read from the contract once
// per operation: the path's `{workspaceId}`, the resource the path addresses by id (services/roles.ts, ADDRESSED),
// or X-Workspace-Id.
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { Caller } from '../operations/types.ts';
import { ADDRESSED, type AddressedResource } from '../services/roles.ts';
import { type ActingWorkspace, noWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import type { OperationMeta } from './contract.ts';

/** `required`: the operation acts in a workspace (`x-requires-workspace`), so acting in none is a 422. */
export type WorkspaceSource =
  | { kind: 'path' }
  | { kind: 'resource'; resource: AddressedResource; param: string }
  | { kind: 'header'; required: boolean }
  | { kind: 'none' };

export function workspaceSourceOf(meta: OperationMeta): WorkspaceSource {
  const source = sourceOf(meta);
  if (meta.requiresWorkspace && source.kind !== 'header') {
    throw new Error(`${meta.operationId}: x-requires-workspace is for operations that act in the workspace X-Workspace-Id names`);
  }
  return source;
}

function sourceOf(meta: OperationMeta): WorkspaceSource {
  if (meta.path.includes('{workspaceId}')) return { kind: 'path' };
  const param = /\{(\w+)\}/.exec(meta.path);
  const prefix = param && meta.path.slice(0, param.index);
  if (param && prefix && prefix in ADDRESSED) return { kind: 'resource', resource: prefix as AddressedResource, param: param[1]! };
  if (meta.headerNames.has('x-workspace-id')) return { kind: 'header', required: meta.requiresWorkspace };
  return { kind: 'none' };
}

/**
 * The workspace X-Workspace-Id names (403 when the caller may not act in it), else, for an operation that
 * addresses no resource by id, the caller's default workspace; undefined when there is none, or a 422 naming the
 * header for an operation that acts in one. An operation on a
 * resource addressed by id finds the resource among the caller's workspaces itself (404 otherwise), and a path's
 * `{workspaceId}` is the operation's own parameter.
 */
export async function actingWorkspace(
  db: Kysely<Database>,
  source: WorkspaceSource,
  caller: Caller,
  header: string | undefined,
): Promise<ActingWorkspace | undefined> {
  if (source.kind === 'header') {
    const workspace = await resolveWorkspace(db, caller, header);
    if (!workspace && source.required) throw noWorkspace();
    return workspace;
  }
  if (source.kind === 'resource' && header !== undefined) return resolveWorkspace(db, caller, header, { onlyWhenNamed: true });
  return undefined;
}
