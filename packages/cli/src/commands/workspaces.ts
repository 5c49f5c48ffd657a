// `platform workspaces`: the workspaces the caller belongs to, the default one for later commands, invitations
// and leaving.
import type { Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { updateConfig } from '../config.ts';
import { action, example, type PageFlags, UsageError, withPage } from '../context.ts';
import { type Columns, done, printPage, time } from '../output.ts';

export function registerWorkspaces(program: Command): void {
  const workspaces = program.command('workspaces').description('workspaces you belong to');
  example(workspaces, 'platform workspaces list', 'platform workspaces use ws_01jd2x…');

  example(
    withPage(workspaces.command('list').description('list your workspaces')).action(
      action(async ({ api, out, settings }, flags: PageFlags) => {
        const page = await api.GET('/v1/workspaces', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        const columns: Columns<Schema<'Workspace'>> = [
          ['', (w) => (w.id === settings.workspace ? '*' : '')],
          ['ID', (w) => w.id],
          ['NAME', (w) => w.name],
          ['CREATED', (w) => time(w.created_at)],
        ];
        printPage(out, page, columns);
      }),
    ),
    'platform workspaces list --json',
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
          updateConfig({ workspace: workspace.id });
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
}
