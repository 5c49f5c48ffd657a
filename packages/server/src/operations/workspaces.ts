import * as workspaces from '../resources/workspaces.ts';
import type { Handler } from './types.ts';

export const listWorkspaces: Handler<'listWorkspaces'> = async ({ query, caller }, { db }) => ({
  status: 200,
  body: await workspaces.listWorkspaces(db, caller.userId, query),
});

export const createWorkspace: Handler<'createWorkspace'> = async ({ body, caller }, { db, clock }) => ({
  status: 201,
  body: await workspaces.createWorkspace(db, caller.userId, body, clock.now()),
});

export const getWorkspace: Handler<'getWorkspace'> = async ({ params, caller }, { db }) => ({
  status: 200,
  body: await workspaces.getWorkspace(db, params.workspaceId, caller.userId),
});

export const updateWorkspace: Handler<'updateWorkspace'> = async ({ params, body, caller }, { db }) => ({
  status: 200,
  body: await workspaces.updateWorkspace(db, params.workspaceId, caller.userId, body),
});

export const listWorkspaceMembers: Handler<'listWorkspaceMembers'> = async ({ params, query, caller }, { db }) => ({
  status: 200,
  body: await workspaces.listMembers(db, params.workspaceId, caller.userId, query),
});

export const createWorkspaceInvitation: Handler<'createWorkspaceInvitation'> = async ({ params, body, caller }, { db, clock }) => ({
  status: 202,
  body: await workspaces.invite(db, params.workspaceId, caller.userId, body, clock.now()),
});

export const listUserInvitations: Handler<'listUserInvitations'> = async ({ query, caller }, { db, clock }) => ({
  status: 200,
  body: await workspaces.listInvitations(db, caller.userId, query, clock.now()),
});

export const acceptInvitation: Handler<'acceptInvitation'> = async ({ params, caller }, { db, clock }) => ({
  status: 200,
  body: await workspaces.acceptInvitation(db, caller.userId, params.id, clock.now()),
});

export const declineInvitation: Handler<'declineInvitation'> = async ({ params, caller }, { db, clock }) => {
  await workspaces.declineInvitation(db, caller.userId, params.id, clock.now());
  return { status: 204, body: undefined };
};

export const removeWorkspaceMember: Handler<'removeWorkspaceMember'> = async ({ params, caller }, { db }) => {
  await workspaces.removeMember(db, params.workspaceId, caller.userId, params.userId);
  return { status: 204, body: undefined };
};

export const updateWorkspaceMember: Handler<'updateWorkspaceMember'> = async ({ params, body, caller }, { db }) => ({
  status: 200,
  body: await workspaces.setMemberRole(db, params.workspaceId, caller.userId, params.userId, body.role),
});

export const transferWorkspaceOwnership: Handler<'transferWorkspaceOwnership'> = async ({ params, body }, { db }) => ({
  status: 200,
  body: await workspaces.transferOwnership(db, params.workspaceId, body.user_id),
});

export const leaveWorkspace: Handler<'leaveWorkspace'> = async ({ params, caller }, { db }) => {
  await workspaces.leave(db, params.workspaceId, caller.userId);
  return { status: 204, body: undefined };
};
