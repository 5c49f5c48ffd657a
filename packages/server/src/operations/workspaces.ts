import { releaseWorkspace } from '../resources/workspace-releases.ts';
import * as workspaces from '../resources/workspaces.ts';
import { requireUnrestricted } from '../services/tenancy.ts';
import type { Handler } from './types.ts';

export const listWorkspaces: Handler<'listWorkspaces'> = async ({ query, caller }, { db }) => ({
  status: 200,
  body: await workspaces.listWorkspaces(db, caller, query),
});

export const createWorkspace: Handler<'createWorkspace'> = async ({ body, caller }, { db, clock }) => {
  requireUnrestricted(caller, 'createWorkspace', 'would make a workspace outside them');
  return { status: 201, body: await workspaces.createWorkspace(db, caller.userId, body, clock.now()) };
};

export const getWorkspace: Handler<'getWorkspace'> = async ({ params, caller }, { db }) => ({
  status: 200,
  body: await workspaces.getWorkspace(db, params.workspaceId, caller),
});

export const updateWorkspace: Handler<'updateWorkspace'> = async ({ params, body, caller }, { db }) => ({
  status: 200,
  body: await workspaces.updateWorkspace(db, params.workspaceId, caller, body),
});

export const listWorkspaceMembers: Handler<'listWorkspaceMembers'> = async ({ params, query, caller }, { db }) => ({
  status: 200,
  body: await workspaces.listMembers(db, params.workspaceId, caller, query),
});

export const createWorkspaceInvitation: Handler<'createWorkspaceInvitation'> = async ({ params, body, caller }, { db, clock }) => ({
  status: 201,
  body: await workspaces.invite(db, params.workspaceId, caller, body, clock.now()),
});

export const listUserInvitations: Handler<'listUserInvitations'> = async ({ query, caller }, { db, clock }) => ({
  status: 200,
  body: await workspaces.listInvitations(db, caller, query, clock.now()),
});

export const acceptInvitation: Handler<'acceptInvitation'> = async ({ params, caller }, { db, clock }) => ({
  status: 200,
  body: await workspaces.acceptInvitation(db, caller, params.id, clock.now()),
});

export const declineInvitation: Handler<'declineInvitation'> = async ({ params, caller }, { db, clock }) => {
  await workspaces.declineInvitation(db, caller, params.id, clock.now());
  return { status: 204, body: undefined };
};

export const removeWorkspaceMember: Handler<'removeWorkspaceMember'> = async ({ params, caller }, { db }) => {
  const withdrawn = await workspaces.removeMember(db, params.workspaceId, caller, params.userId);
  return { status: 204, body: undefined, auditTargets: withdrawn };
};

export const updateWorkspaceMember: Handler<'updateWorkspaceMember'> = async ({ params, body, caller }, { db }) => ({
  status: 200,
  body: await workspaces.setMemberRole(db, params.workspaceId, caller, params.userId, body.role),
});

export const transferWorkspaceOwnership: Handler<'transferWorkspaceOwnership'> = async ({ params, body }, { db }) => ({
  status: 200,
  body: await workspaces.transferOwnership(db, params.workspaceId, body.user_id),
});

export const deleteWorkspace: Handler<'deleteWorkspace'> = async ({ params, caller }, { db }) => {
  await workspaces.deleteWorkspace(db, params.workspaceId, caller, releaseWorkspace);
  return { status: 204, body: undefined };
};

export const listWorkspaceInvitations: Handler<'listWorkspaceInvitations'> = async ({ params, query, caller }, { db, clock }) => ({
  status: 200,
  body: await workspaces.listWorkspaceInvitations(db, params.workspaceId, caller, query, clock.now()),
});

export const revokeWorkspaceInvitation: Handler<'revokeWorkspaceInvitation'> = async ({ params, caller }, { db, clock }) => {
  await workspaces.revokeInvitation(db, params.workspaceId, caller, params.invitationId, clock.now());
  return { status: 204, body: undefined };
};

export const leaveWorkspace: Handler<'leaveWorkspace'> = async ({ params, caller }, { db }) => {
  const withdrawn = await workspaces.leave(db, params.workspaceId, caller);
  return { status: 204, body: undefined, auditTargets: withdrawn };
};
