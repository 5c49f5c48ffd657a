// `platform workspaces`: the workspaces the caller belongs to, and the default one for later commands.
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
}
