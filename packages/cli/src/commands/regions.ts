// `platform regions`: where clusters can run and products can be installed (the ids --region takes).
import type { Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { action, example, type PageFlags, withPage } from '../context.ts';
import { type Columns, printPage, time } from '../output.ts';

const columns: Columns<Schema<'Region'>> = [
  ['ID', (r) => r.id],
  ['NAME', (r) => r.name],
  ['COUNTRY', (r) => r.country],
  ['CREATED', (r) => time(r.created_at)],
];

export function registerRegions(program: Command): void {
  example(
    withPage(program.command('regions').description('list the regions (the ids --region takes)')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/regions', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, columns);
      }),
    ),
    'platform regions',
    'platform regions --json',
  );
}
