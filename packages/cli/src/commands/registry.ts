// `platform registry credentials`: logins to private helm/OCI registries. The password is write-only.
import type { Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { confirm, declined, withYes, type YesFlags } from '../confirm.ts';
import { action, example, type PageFlags, UsageError, withPage } from '../context.ts';
import { readSecret } from '../files.ts';
import { type Columns, done, printPage, printRecord, time } from '../output.ts';

const columns: Columns<Schema<'RegistryCredential'>> = [
  ['ID', (c) => c.id],
  ['NAME', (c) => c.name],
  ['REGISTRY', (c) => c.registry_url],
  ['ACTIVE', (c) => c.is_active],
  ['CREATED', (c) => time(c.created_at)],
  ['LAST USED', (c) => time(c.last_used_at)],
];

export function registerRegistry(program: Command): void {
  const registry = program.command('registry').description('private chart registries');
  const credentials = registry.command('credentials').description('registry logins used to pull charts');
  example(registry, 'platform registry credentials list');
  example(credentials, 'platform registry credentials create --name ghcr --registry ghcr.io --username bot --password-stdin < token.txt');

  example(
    withPage(credentials.command('list').description('list the registry credentials of the workspace')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/registry/credentials', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, columns);
      }),
    ),
    'platform registry credentials list --json',
  );

  example(
    credentials
      .command('create')
      .description('store a registry login (the password cannot be read back)')
      .requiredOption('--name <name>', 'a name for it')
      .requiredOption('--registry <host>', 'registry host (and port), e.g. ghcr.io')
      .requiredOption('--username <username>', 'user name')
      .option('--password <password>', 'password or token (visible in the process list: prefer --password-stdin)')
      .option('--password-stdin', 'read the password from standard input')
      .option('--inactive', 'store it switched off')
      .action(
        action(
          async ({ api, out }, flags: { name: string; registry: string; username: string; password?: string; passwordStdin?: boolean; inactive?: boolean }) => {
            const password = flags.passwordStdin ? await readSecret(out.io, '-', '--password-stdin') : flags.password;
            if (password === undefined) throw new UsageError('give --password or --password-stdin');
            const body = { name: flags.name, registry_url: flags.registry, username: flags.username, password, is_active: !flags.inactive };
            printRecord(out, await api.POST('/v1/registry/credentials', { body }), columns);
          },
        ),
      ),
    'echo "$REGISTRY_TOKEN" | platform registry credentials create --name ghcr --registry ghcr.io --username bot --password-stdin',
  );

  example(
    credentials
      .command('get <id>')
      .description('show one registry credential (without its password)')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.GET('/v1/registry/credentials/{id}', { params: { path: { id } } }), columns);
        }),
      ),
    'platform registry credentials get rc_01jd2xe8j0m2p4r6t8w0y2a4c6',
  );

  example(
    credentials
      .command('rotate <id>')
      .description('replace the password (the old one is gone at once), or change the name, user name or whether it is active')
      .option('--password <password>', 'the new password or token (visible in the process list: prefer --password-stdin)')
      .option('--password-stdin', 'read the new password from standard input')
      .option('--username <username>', 'a new user name')
      .option('--name <name>', 'a new name')
      .option('--active', 'switch it on')
      .option('--inactive', 'switch it off')
      .action(
        action(
          async (
            { api, out },
            id: string,
            flags: { password?: string; passwordStdin?: boolean; username?: string; name?: string; active?: boolean; inactive?: boolean },
          ) => {
            if (flags.active && flags.inactive) throw new UsageError('give --active or --inactive, not both');
            const password = flags.passwordStdin ? await readSecret(out.io, '-', '--password-stdin') : flags.password;
            const body = {
              ...(password === undefined ? {} : { password }),
              ...(flags.username === undefined ? {} : { username: flags.username }),
              ...(flags.name === undefined ? {} : { name: flags.name }),
              ...(flags.active || flags.inactive ? { is_active: Boolean(flags.active) } : {}),
            };
            if (Object.keys(body).length === 0) throw new UsageError('give what to change: --password-stdin, --username, --name, --active or --inactive');
            printRecord(out, await api.PATCH('/v1/registry/credentials/{id}', { params: { path: { id } }, body }), columns);
          },
        ),
      ),
    'echo "$NEW_REGISTRY_TOKEN" | platform registry credentials rotate rc_01jd2xe8j0m2p4r6t8w0y2a4c6 --password-stdin',
    'platform registry credentials rotate rc_01jd2xe8j0m2p4r6t8w0y2a4c6 --inactive',
  );

  example(
    withYes(credentials.command('delete <id>').description('delete a registry credential (asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Delete registry credential ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/registry/credentials/{id}', { params: { path: { id } } });
        done(out, `Deleted registry credential ${id}`);
      }),
    ),
    'platform registry credentials delete rc_01jd2x8m5r7t9v1w3y5a7c9e1g --yes',
  );
}
