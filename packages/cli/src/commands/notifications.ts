// `platform notifications`: what the workflows told the workspace (clusters ready, installs failed, quotas…).
import type { Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { action, example, type PageFlags, withPage } from '../context.ts';
import { type Columns, printPage, printRecord, time } from '../output.ts';

const columns: Columns<Schema<'Notification'>> = [
  ['ID', (n) => n.id],
  ['CREATED', (n) => time(n.created_at)],
  ['SEVERITY', (n) => n.severity],
  ['TYPE', (n) => n.type],
  ['TITLE', (n) => n.title],
  ['RESOURCE', (n) => n.resource_id],
  ['READ', (n) => (n.read_at === null ? 'no' : time(n.read_at))],
];

export function registerNotifications(program: Command): void {
  const notifications = program.command('notifications').description('notifications of your workspaces');
  example(notifications, 'platform notifications list --unread', 'platform notifications read ntf_01jd…');

  example(
    withPage(notifications.command('list').description('list notifications, newest first').option('--unread', 'only those not read yet')).action(
      action(async ({ api, out }, flags: PageFlags & { unread?: boolean }) => {
        const page = await api.GET('/v1/notifications', { params: { query: { unread: flags.unread, limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, columns);
      }),
    ),
    'platform notifications list --unread --json',
  );

  example(
    notifications
      .command('read <id>')
      .description('mark a notification read')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.PATCH('/v1/notifications/{id}/read', { params: { path: { id } } }), columns);
        }),
      ),
    'platform notifications read ntf_01jd2xf9k1n3q5s7v9x1z3b5d7',
  );
}
