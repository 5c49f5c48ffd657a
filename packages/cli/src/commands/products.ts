// `platform products`: helm-chart products and their configuration.
import type { RequestBody, Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { confirm, declined, withYes, type YesFlags } from '../confirm.ts';
import { action, example, type PageFlags, UsageError, withPage } from '../context.ts';
import { readDocument } from '../files.ts';
import { sourceName } from '../helm-values.ts';
import { type Columns, done, printPage, printRecord, time } from '../output.ts';

const columns: Columns<Schema<'Product'>> = [
  ['ID', (p) => p.id],
  ['NAME', (p) => p.name],
  // The name --values takes, where it is not the chart's own: `db: postgresql@16.1.0`.
  [
    'SOURCES',
    (p) =>
      p.sources
        .map((s) => `${sourceName(s) === s.chart.chart ? '' : `${sourceName(s)}: `}${s.chart.chart ?? s.chart.path}@${s.chart.target_revision}`)
        .join(', '),
  ],
  ['CLUSTERS', (p) => p.cluster_ids.join(', ')],
  ['TEMPLATE', (p) => p.template_id],
  ['REGENERATION', (p) => p.regeneration_status],
  ['UPDATED', (p) => time(p.updated_at)],
];

export function registerProducts(program: Command): void {
  const products = program.command('products').description('products: helm charts installed together');
  example(products, 'platform products list', 'platform products create --file product.yaml', 'platform products update prd_01jd… --file product.yaml');

  example(
    withPage(products.command('list').description('list the products of the workspace')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/products', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, columns);
      }),
    ),
    'platform products list --json',
  );

  example(
    products
      .command('get <id>')
      .description('show one product (use --json for its whole configuration)')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.GET('/v1/products/{id}', { params: { path: { id } } }), columns);
        }),
      ),
    'platform products get prd_01jd2x8m5r7t9v1w3y5a7c9e1g --json > product.json',
  );

  example(
    products
      .command('create')
      .description('create a product from a YAML or JSON file (name, sources, cluster_ids, stripe_price_ids, settings)')
      .requiredOption('--file <path>', 'the configuration (- for stdin)')
      .action(
        action(async ({ api, out }, flags: { file: string }) => {
          const document = await readDocument(out.io, flags.file);
          if (typeof document !== 'object' || document === null || Array.isArray(document)) throw new UsageError(`${flags.file} must hold an object`);
          // The service validates the body against the contract and names any wrong field.
          printRecord(out, await api.POST('/v1/products', { body: document as RequestBody<'createProduct'> }), columns);
        }),
      ),
    'platform products create --file product.yaml',
  );

  example(
    products
      .command('update <id>')
      .description('replace a product’s configuration with a YAML or JSON file (fields left out are cleared)')
      .requiredOption('--file <path>', 'the configuration: name, sources, cluster_ids, stripe_price_ids, settings (- for stdin)')
      .action(
        action(async ({ api, out }, id: string, flags: { file: string }) => {
          const document = await readDocument(out.io, flags.file);
          if (typeof document !== 'object' || document === null || Array.isArray(document)) throw new UsageError(`${flags.file} must hold an object`);
          // The service validates the body against the contract and names any wrong field.
          const body = document as RequestBody<'updateProduct'>;
          const result = await api.PATCH('/v1/products/{id}', { params: { path: { id } }, body });
          printRecord(out, result, [
            ['PRODUCT', (r) => r.product_id],
            ['NEW TEMPLATE', (r) => r.template_id],
          ]);
        }),
      ),
    'platform products update prd_01jd2x8m5r7t9v1w3y5a7c9e1g --file product.yaml',
  );

  example(
    withYes(products.command('delete <id>').description('delete a product without installs (asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Delete product ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/products/{id}', { params: { path: { id } } });
        done(out, `Deleted product ${id}`);
      }),
    ),
    'platform products delete prd_01jd2x8m5r7t9v1w3y5a7c9e1g --yes',
  );
}
