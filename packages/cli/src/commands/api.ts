// `platform api <path>`: a GET of any path of the API, its JSON printed as it is, as `gh api` and `stripe get` do.
// A list with no command of its own is read with it, page by page or whole (--limit, --cursor, --all, as every
// list command takes them); test/coverage.test.ts counts such a list as covered by it.
import type { Command } from 'commander';
import { action, example, type PageFlags, UsageError, withPage } from '../context.ts';
import { json } from '../output.ts';

const isPage = (value: unknown): value is { pagination: { has_more: boolean; cursor: string } } =>
  typeof value === 'object' && value !== null && 'pagination' in value && typeof value.pagination === 'object' && value.pagination !== null;

export function registerApi(program: Command): void {
  example(
    withPage(
      program
        .command('api <path>')
        .description('GET a path of the API (/v1/…, with its query) and print the JSON answer as it is; reads the lists that have no command of their own'),
    ).action(
      action(async ({ api, out }, path: string, flags: PageFlags) => {
        // A path as the reference writes it: its parameters are for the caller to fill in.
        const template = /\{[^}/]+\}/.exec(path);
        if (template) throw new UsageError(`api: put the value of ${template[0]} in the path`);
        const url = new URL(path.startsWith('/') ? path : `/${path}`, 'http://api.invalid');
        if (!url.pathname.startsWith('/v1/')) throw new UsageError(`api: ${path} is not a path of the API, which all start with /v1/`);
        const query = {
          ...Object.fromEntries(url.searchParams),
          ...(flags.limit === undefined ? {} : { limit: flags.limit }),
          ...(flags.cursor === undefined ? {} : { cursor: flags.cursor }),
        };
        // Any path: the client's typed GET names the paths of the contract, and the server answers one that is none.
        const answer: unknown = await api.GET(url.pathname as never, { params: { query } } as never);
        json(out, answer);
        if (isPage(answer) && answer.pagination.has_more) out.io.stderr.write(`More results: add --cursor ${answer.pagination.cursor}, or --all\n`);
      }),
    ),
    'platform api /v1/workspaces/ws_01jd…/members --all',
    "platform api '/v1/webhook_endpoints/whe_01jd…/deliveries?status=failed' --limit 10",
  );
}
