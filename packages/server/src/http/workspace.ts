// The workspace a request acts in, worked out by the binding once a request and handed to its handler
// (`input.workspace`): handlers resolve and check no workspace. Where it comes from is read from the contract once
// per operation: the path's `{workspaceId}`, the resource the path addresses by id (services/roles.ts, ADDRESSED),
// or X-Workspace-Id.
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { Caller } from '../operations/types.ts';
import { ADDRESSED, type AddressedResource } from '../services/roles.ts';
import { type ActingWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import type { OperationMeta } from './contract.ts';

export type WorkspaceSource = { kind: 'path' } | { kind: 'resource'; resource: AddressedResource; param: string } | { kind: 'header' } | { kind: 'none' };

export function workspaceSourceOf(meta: OperationMeta): WorkspaceSource {
  if (meta.path.includes('{workspaceId}')) return { kind: 'path' };
  const param = /\{(\w+)\}/.exec(meta.path);
  const prefix = param && meta.path.slice(0, param.index);
  if (param && prefix && prefix in ADDRESSED) return { kind: 'resource', resource: prefix as AddressedResource, param: param[1]! };
  if (meta.headerNames.has('x-workspace-id')) return { kind: 'header' };
  return { kind: 'none' };
}

/**
 * The workspace X-Workspace-Id names (403 when the caller may not act in it), else, for an operation that
 * addresses no resource by id, the caller's default workspace; undefined when there is none. An operation on a
 * resource addressed by id finds the resource among the caller's workspaces itself (404 otherwise), and a path's
 * `{workspaceId}` is the operation's own parameter.
 */
export function actingWorkspace(
  db: Kysely<Database>,
  source: WorkspaceSource,
  caller: Caller,
  header: string | undefined,
): Promise<ActingWorkspace | undefined> | undefined {
  if (source.kind === 'header') return resolveWorkspace(db, caller, header);
  if (source.kind === 'resource' && header !== undefined) return resolveWorkspace(db, caller, header, { onlyWhenNamed: true });
  return undefined;
}
