// `platform quotas`: limits of the plan (or overrides) and what is used of them.
import type { Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { action, example } from '../context.ts';
import { type Columns, printList, printRecord, quantity } from '../output.ts';

type Quota = Schema<'QuotaEntry'>;

// Amounts in their unit (GiB, cores); --json keeps the service's raw numbers.
const columns: Columns<Quota> = [
  ['METRIC', (q) => q.metric],
  ['NAME', (q) => q.displayName],
  ['TYPE', (q) => q.type],
  ['USAGE', (q) => quantity(q.unit, q.usage)],
  ['LIMIT', (q) => quantity(q.unit, q.limit)],
  ['REMAINING', (q) => quantity(q.unit, q.remaining)],
];

export function registerQuotas(program: Command): void {
  const quotas = program.command('quotas').description('your limits and their usage');
  example(quotas, 'platform quotas list', 'platform quotas get kaas/clusters');

  example(
    quotas
      .command('list')
      .description('every quota; with --cluster also its provisioning concurrency')
      .option('--cluster <id>', 'cluster id')
      .action(
        action(async ({ api, out }, flags: { cluster?: string }) => {
          printList(out, await api.GET('/v1/quotas', { params: { query: { cluster_id: flags.cluster } } }), columns);
        }),
      ),
    'platform quotas list --cluster cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
  );

  example(
    quotas
      .command('get <metric>')
      .description('one quota: kaas/clusters, compute/machines, compute/cpu, compute/memory, compute/provisioning (needs --cluster)')
      .option('--cluster <id>', 'cluster id')
      .action(
        action(async ({ api, out }, metric: string, flags: { cluster?: string }) => {
          // The metric has a slash: the client encodes the path parameter, and the service names an unknown one.
          const quota = await api.GET('/v1/quotas/{metric}', { params: { path: { metric: metric as Quota['metric'] }, query: { cluster_id: flags.cluster } } });
          printRecord(out, quota, columns);
        }),
      ),
    'platform quotas get compute/cpu --json',
  );
}
