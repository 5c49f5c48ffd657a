// `platform tokens`: personal access tokens for scripts and CI.
import type { Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { confirm, declined, withYes, type YesFlags } from '../confirm.ts';
import { action, example, type PageFlags, UsageError, withPage } from '../context.ts';
import { type Columns, done, printPage, printRecord, time } from '../output.ts';

/** Unix seconds, or any date `Date.parse` reads (2027-01-31, 2027-01-31T12:00:00Z). */
function expiry(value: string): number {
  if (/^\d+$/.test(value)) return Number(value);
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new UsageError(`--expires-at: ${value} is neither Unix seconds nor a date`);
  return Math.floor(ms / 1000);
}

type Scope = NonNullable<Schema<'TokenCreate'>['scopes']>[number];

/** `--scope` repeated or comma-separated: every value, in order (the server refuses an unknown scope with 422). */
function collect(value: string, previous: Scope[] | undefined): Scope[] {
  return [...(previous ?? []), ...(value.split(',').filter(Boolean) as Scope[])];
}

/** `--workspace-ids` repeated or comma-separated. */
function collectIds(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...value.split(',').filter(Boolean)];
}

const workspacesOf = (t: { workspace_ids: string[] | null }) => (t.workspace_ids === null ? 'all' : t.workspace_ids.join(' ') || 'none');

const TOKEN_COLUMNS: Columns<Schema<'Token'>> = [
  ['ID', (t) => t.id],
  ['NAME', (t) => t.name],
  ['PREFIX', (t) => t.prefix],
  ['CREATED', (t) => time(t.created_at)],
  ['LAST USED', (t) => time(t.last_used_at)],
  ['EXPIRES', (t) => time(t.expires_at)],
  ['SCOPES', (t) => t.scopes.join(' ')],
  ['WORKSPACES', workspacesOf],
];

export function registerTokens(program: Command): void {
  const tokens = program.command('tokens').description('personal access tokens');
  example(
    tokens,
    'platform tokens create --name ci --scope clusters:read --scope installs:write',
    'platform tokens create --name staging --scope installs:write --workspace-ids ws_01jd2x…',
    'platform tokens list',
  );

  example(
    tokens
      .command('create')
      .description('create a token; its secret is shown once')
      .requiredOption('--name <name>', 'what it is for')
      .option('--expires-at <when>', 'Unix seconds or a date; default: never')
      .option('--scope <scopes>', 'what it may do, repeatable or comma-separated (clusters:read, installs:write, …); default: every scope of yours', collect)
      .option('--workspace-ids <ids>', 'the only workspaces it may act in, repeatable or comma-separated; default: those of your token', collectIds)
      .action(
        action(async ({ api, out }, flags: { name: string; expiresAt?: string; scope?: Scope[]; workspaceIds?: string[] }) => {
          const created = await api.POST('/v1/user/tokens', {
            body: {
              name: flags.name,
              expires_at: flags.expiresAt === undefined ? null : expiry(flags.expiresAt),
              ...(flags.scope ? { scopes: flags.scope } : {}),
              ...(flags.workspaceIds ? { workspace_ids: flags.workspaceIds } : {}),
            },
          });
          printRecord(out, created, [
            ['ID', (t) => t.id],
            ['NAME', (t) => t.name],
            ['TOKEN', (t) => t.token],
            ['EXPIRES', (t) => time(t.expires_at)],
            ['SCOPES', (t) => t.scopes.join(' ')],
            ['WORKSPACES', workspacesOf],
          ]);
          if (!out.json) out.io.stderr.write('Store the token now: it cannot be shown again.\n');
        }),
      ),
    'platform tokens create --name ci --scope clusters:read --expires-at 2027-01-31 --json | jq -r .token',
  );

  example(
    withPage(tokens.command('list').description('list your tokens (never their secrets)')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/user/tokens', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, TOKEN_COLUMNS);
      }),
    ),
    'platform tokens list',
  );

  example(
    tokens
      .command('get <id>')
      .description('show one of your tokens (never its secret)')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.GET('/v1/user/tokens/{id}', { params: { path: { id } } }), TOKEN_COLUMNS);
        }),
      ),
    'platform tokens get tok_01jd2xf9k1n3q5s7v9x1z3b5d7',
  );

  example(
    withYes(tokens.command('revoke <id>').description('revoke a token at once (asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Revoke token ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/user/tokens/{id}', { params: { path: { id } } });
        done(out, `Revoked token ${id}`);
      }),
    ),
    'platform tokens revoke tok_01jd2xf9k1n3q5s7v9x1z3b5d7 --yes',
  );
}
