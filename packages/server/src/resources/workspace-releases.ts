// What a workspace's deletion asks of each resource that refers to the workspace without a foreign key that
// cascades: the one hook deleteWorkspace (workspaces.ts) calls in its transaction. A new such resource adds its
// step here, and workspaces.ts imports none of them (they use it: notifications name a workspace's members).
import { forgetWorkspace } from './tokens.ts';
import { removeWorkspaceEndpoints } from './webhook-endpoints.ts';
import type { WorkspaceRelease } from './workspaces.ts';

export const releaseWorkspace: WorkspaceRelease = async (trx, workspaceId) => {
  await forgetWorkspace(trx, workspaceId);
  await removeWorkspaceEndpoints(trx, workspaceId);
};
