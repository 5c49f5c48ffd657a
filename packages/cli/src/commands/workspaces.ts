// `platform workspaces`: the workspaces the caller belongs to, the default one for later commands, members and
// their roles, ownership, invitations (sent and received), leaving and deleting.
import type { Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { readConfig, updateConfig } from '../config.ts';
import { confirm, declined, withYes, type YesFlags } from '../confirm.ts';
import { action, example, type PageFlags, UsageError, withPage } from '../context.ts';
import { type Columns, done, printPage, time } from '../output.ts';

export function registerWorkspaces(program: Command): void {
  const workspaces = program.command('workspaces').description('workspaces you belong to');
  example(workspaces, 'platform workspaces list', 'platform workspaces use ws_01jd2x…', 'platform workspaces members list ws_01jd2x…');

  example(
    withPage(workspaces.command('list').description('list your workspaces')).action(
      action(async ({ api, out, settings }, flags: PageFlags) => {
        const page = await api.GET('/v1/workspaces', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        // The id first, as in every list (`| cut -f1` gives ids); the default's mark last.
        const columns: Columns<Schema<'Workspace'>> = [
          ['ID', (w) => w.id],
          ['NAME', (w) => w.name],
          ['CREATED', (w) => time(w.created_at)],
          ['DEFAULT', (w) => (w.id === settings.workspace ? '*' : '')],
        ];
        printPage(out, page, columns);
      }),
    ),
    'platform workspaces list --json',
  );

  example(
    workspaces
      .command('create')
      .description('create a workspace; you are its owner')
      .requiredOption('--name <name>', 'its name')
      .option('--icon <icon>', 'an emoji or image URL')
      .action(
        action(async ({ api, out }, flags: { name: string; icon?: string }) => {
          const workspace = await api.POST('/v1/workspaces', { body: { name: flags.name, ...(flags.icon ? { icon: flags.icon } : {}) } });
          done(out, `Created workspace ${workspace.name} (${workspace.id})`, workspace);
        }),
      ),
    'platform workspaces create --name "Acme Staging" --icon 🧪',
  );

  example(
    withYes(workspaces.command('delete <id>').description('delete an empty workspace (owner; asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Delete workspace ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId: id } } });
        // A default that no longer exists would make every later command fail.
        if (readConfig(out.io.env).workspace === id) updateConfig(out.io.env, { workspace: undefined });
        done(out, `Deleted workspace ${id}`);
      }),
    ),
    'platform workspaces delete ws_01jd2x8m5r7t9v1w3y5a7c9e1g --yes',
  );

  example(
    workspaces
      .command('rename <id>')
      .description('change a workspace’s name or icon')
      .option('--name <name>', 'the new name')
      .option('--icon <icon>', 'an emoji or image URL; "" removes the icon')
      .action(
        action(async ({ out, api }, id: string, flags: { name?: string; icon?: string }) => {
          const body = { ...(flags.name === undefined ? {} : { name: flags.name }), ...(flags.icon === undefined ? {} : { icon: flags.icon || null }) };
          if (Object.keys(body).length === 0) throw new UsageError('give --name or --icon');
          const workspace = await api.PATCH('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId: id } }, body });
          done(out, `Workspace ${workspace.id}: ${workspace.name}`, workspace);
        }),
      ),
    'platform workspaces rename ws_01jd2x8m5r7t9v1w3y5a7c9e1g --name "Acme Staging" --icon 🧪',
  );

  example(
    workspaces
      .command('use <id>')
      .description('make a workspace the default (sent as X-Workspace-Id)')
      .action(
        action(async ({ api, out }, id: string) => {
          // Checked first, so a typo is not kept.
          const workspace = await api.GET('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId: id } } });
          updateConfig(out.io.env, { workspace: workspace.id });
          done(out, `Default workspace: ${workspace.name} (${workspace.id})`, workspace);
        }),
      ),
    'platform workspaces use ws_01jd2x8m5r7t9v1w3y5a7c9e1g',
  );

  example(
    workspaces
      .command('invite <workspace-id> <email>')
      .description('invite someone by email (the answer is the same whether or not they have an account)')
      .option('--role <role>', 'admin, member or viewer', 'member')
      .action(
        action(async ({ api, out }, workspaceId: string, email: string, flags: { role: 'admin' | 'member' | 'viewer' }) => {
          const invitation = await api.POST('/v1/workspaces/{workspaceId}/invitations', {
            params: { path: { workspaceId } },
            body: { email, role: flags.role },
          });
          done(out, `Invited ${invitation.email} as ${invitation.role} (${invitation.id}), until ${time(invitation.expires_at)}`, invitation);
        }),
      ),
    'platform workspaces invite ws_01jd2x8m5r7t9v1w3y5a7c9e1g dana@acme.example --role viewer',
  );

  example(
    withPage(workspaces.command('invitations').description('list the invitations addressed to you')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/user/invitations', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        const columns: Columns<Schema<'WorkspaceInvitation'>> = [
          ['ID', (i) => i.id],
          ['WORKSPACE', (i) => `${i.workspace_name} (${i.workspace_id})`],
          ['ROLE', (i) => i.role],
          ['EXPIRES', (i) => time(i.expires_at)],
        ];
        printPage(out, page, columns);
      }),
    ),
    'platform workspaces invitations',
  );

  example(
    withPage(workspaces.command('pending <workspace-id>').description('list the invitations a workspace has sent that wait for an answer (admins)')).action(
      action(async ({ api, out }, workspaceId: string, flags: PageFlags) => {
        const page = await api.GET('/v1/workspaces/{workspaceId}/invitations', {
          params: { path: { workspaceId }, query: { limit: flags.limit, cursor: flags.cursor } },
        });
        const columns: Columns<Schema<'WorkspaceInvitation'>> = [
          ['ID', (i) => i.id],
          ['EMAIL', (i) => i.email],
          ['ROLE', (i) => i.role],
          ['EXPIRES', (i) => time(i.expires_at)],
        ];
        printPage(out, page, columns);
      }),
    ),
    'platform workspaces pending ws_01jd2x8m5r7t9v1w3y5a7c9e1g',
  );

  example(
    workspaces
      .command('revoke-invitation <workspace-id> <invitation-id>')
      .description('withdraw an invitation the workspace sent (admins)')
      .action(
        action(async ({ api, out }, workspaceId: string, invitationId: string) => {
          await api.DELETE('/v1/workspaces/{workspaceId}/invitations/{invitationId}', { params: { path: { workspaceId, invitationId } } });
          done(out, `Revoked invitation ${invitationId}`);
        }),
      ),
    'platform workspaces revoke-invitation ws_01jd2x8m5r7t9v1w3y5a7c9e1g inv_01jd3c5d7e9f1g3h5j7k9m1n3p',
  );

  example(
    workspaces
      .command('decline <invitation-id>')
      .description('decline an invitation addressed to you')
      .action(
        action(async ({ api, out }, id: string) => {
          await api.POST('/v1/user/invitations/{id}/decline', { params: { path: { id } } });
          done(out, `Declined invitation ${id}`);
        }),
      ),
    'platform workspaces decline inv_01jd3c5d7e9f1g3h5j7k9m1n3p',
  );

  example(
    workspaces
      .command('accept <invitation-id>')
      .description('accept an invitation and join its workspace')
      .action(
        action(async ({ api, out }, id: string) => {
          const member = await api.POST('/v1/user/invitations/{id}/accept', { params: { path: { id } } });
          done(out, `Joined as ${member.role}`, member);
        }),
      ),
    'platform workspaces accept inv_01jd3c5d7e9f1g3h5j7k9m1n3p',
  );

  example(
    workspaces
      .command('leave <workspace-id>')
      .description('leave a workspace (its owner transfers ownership first)')
      .action(
        action(async ({ api, out }, workspaceId: string) => {
          await api.POST('/v1/workspaces/{workspaceId}/leave', { params: { path: { workspaceId } } });
          done(out, `Left workspace ${workspaceId}`);
        }),
      ),
    'platform workspaces leave ws_01jd2x8m5r7t9v1w3y5a7c9e1g',
  );

  example(
    withYes(
      workspaces.command('transfer <workspace-id> <user-id>').description('make a member the owner; you stay as an admin (owner; asks first unless --yes)'),
    ).action(
      action(async ({ api, out }, workspaceId: string, userId: string, flags: YesFlags) => {
        const what = `Transfer ownership of workspace ${workspaceId} to ${userId}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        const member = await api.POST('/v1/workspaces/{workspaceId}/transfer', { params: { path: { workspaceId } }, body: { user_id: userId } });
        done(out, `${member.email} (${member.user_id}) now owns workspace ${workspaceId}`, member);
      }),
    ),
    'platform workspaces transfer ws_01jd2x8m5r7t9v1w3y5a7c9e1g usr_01jd3b4c6d8e0f2g4h6j8k0m2n --yes',
  );

  registerMembers(workspaces);
}

const ROLES = ['admin', 'member', 'viewer'] as const;
type Role = (typeof ROLES)[number];

function registerMembers(workspaces: Command): void {
  const members = workspaces.command('members').description('the members of a workspace and their roles');
  example(members, 'platform workspaces members list ws_01jd2x…', 'platform workspaces members set-role ws_01jd2x… usr_01jd3b… viewer');

  example(
    withPage(members.command('list <workspace-id>').description('list the members and their roles')).action(
      action(async ({ api, out }, workspaceId: string, flags: PageFlags) => {
        const page = await api.GET('/v1/workspaces/{workspaceId}/members', {
          params: { path: { workspaceId }, query: { limit: flags.limit, cursor: flags.cursor } },
        });
        const columns: Columns<Schema<'WorkspaceMember'>> = [
          ['USER', (m) => m.user_id],
          ['EMAIL', (m) => m.email],
          ['ROLE', (m) => m.role],
          ['SINCE', (m) => time(m.created_at)],
        ];
        printPage(out, page, columns);
      }),
    ),
    'platform workspaces members list ws_01jd2x8m5r7t9v1w3y5a7c9e1g',
  );

  example(
    members
      .command('set-role <workspace-id> <user-id> <role>')
      .description(`change a member's role: ${ROLES.join(', ')} (admins; the owner changes by transfer)`)
      .action(
        action(async ({ api, out }, workspaceId: string, userId: string, role: string) => {
          if (!(ROLES as readonly string[]).includes(role)) throw new UsageError(`role: ${role} is not one of ${ROLES.join(', ')}`);
          const member = await api.PATCH('/v1/workspaces/{workspaceId}/members/{userId}', {
            params: { path: { workspaceId, userId } },
            body: { role: role as Role },
          });
          done(out, `${member.email} (${member.user_id}) is now ${member.role}`, member);
        }),
      ),
    'platform workspaces members set-role ws_01jd2x8m5r7t9v1w3y5a7c9e1g usr_01jd3b4c6d8e0f2g4h6j8k0m2n viewer',
  );

  example(
    withYes(members.command('remove <workspace-id> <user-id>').description('remove a member (admins; asks first unless --yes)')).action(
      action(async ({ api, out }, workspaceId: string, userId: string, flags: YesFlags) => {
        const what = `Remove ${userId} from workspace ${workspaceId}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/workspaces/{workspaceId}/members/{userId}', { params: { path: { workspaceId, userId } } });
        done(out, `Removed ${userId} from workspace ${workspaceId}`);
      }),
    ),
    'platform workspaces members remove ws_01jd2x8m5r7t9v1w3y5a7c9e1g usr_01jd3b4c6d8e0f2g4h6j8k0m2n --yes',
  );
}
