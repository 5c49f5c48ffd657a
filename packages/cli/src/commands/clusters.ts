// `platform clusters`: managed Kubernetes clusters.
import type { Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { confirm, declined, withYes, type YesFlags } from '../confirm.ts';
import { action, example, type PageFlags, type WaitFlags, withPage, withWait } from '../context.ts';
import { type Columns, done, json, printPage, printRecord, time } from '../output.ts';
import { waitFor } from '../wait.ts';

const columns: Columns<Schema<'Cluster'>> = [
  ['ID', (c) => c.id],
  ['NAME', (c) => c.name],
  ['REGION', (c) => c.region_id],
  ['VERSION', (c) => c.kaas.version],
  ['STATUS', (c) => c.kaas.status],
  ['MESSAGE', (c) => c.kaas.status_message],
  ['CREATED', (c) => time(c.created_at)],
];

const versionColumns: Columns<Schema<'KaasVersion'>> = [
  ['VERSION', (v) => v.id],
  ['RELEASE', (v) => v.release],
  ['NEW CLUSTERS', (v) => (v.available_for_new_clusters ? 'yes' : 'no (retired)')],
  ['END OF SUPPORT', (v) => time(v.end_of_support_at)],
];

export function registerClusters(program: Command): void {
  const clusters = program.command('clusters').description('managed Kubernetes clusters');
  example(clusters, 'platform clusters list', 'platform clusters create --name prod-eu --region fsn1 --wait');

  example(
    withPage(clusters.command('list').description('list the clusters of the workspace')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/clusters', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, columns);
      }),
    ),
    'platform clusters list --limit 10 --json',
  );

  example(
    withPage(clusters.command('versions').description('list the Kubernetes versions (the ones --version takes are on offer to new clusters)')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/kaas/versions', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, versionColumns);
      }),
    ),
    'platform clusters versions',
    'platform clusters versions --json',
  );

  example(
    clusters
      .command('get <id>')
      .description('show one cluster')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: id } } }), columns);
        }),
      ),
    'platform clusters get cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
  );

  example(
    withWait(
      clusters
        .command('create')
        .description('create a cluster (provisioning runs in the background)')
        .requiredOption('--name <name>', 'cluster name')
        .requiredOption('--region <region>', 'region id, e.g. fsn1')
        .option('--version <version>', 'Kubernetes version on offer to new clusters (`platform clusters versions`); default v1.31'),
    ).action(
      action(async ({ api, out }, flags: WaitFlags & { name: string; region: string; version?: string }) => {
        const body = { name: flags.name, region_id: flags.region, kaas_version: flags.version };
        const created = await api.POST('/v1/clusters', { body });
        if (!flags.wait) return printRecord(out, created, columns);
        if (!out.json) out.io.stderr.write(`Created ${created.id}; waiting for it to run\n`);
        const { code, record } = await waitFor({
          io: out.io,
          what: `cluster ${created.id}`,
          read: () => api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: created.id } } }),
          outcome: (c) => (c.kaas.status === 'RUNNING' ? 'succeeded' : c.kaas.status === 'ERROR' ? 'failed' : 'pending'),
          describe: (c) => c.kaas.status + (c.kaas.status_message ? `: ${c.kaas.status_message}` : ''),
          timeoutSeconds: flags.timeout,
        });
        printRecord(out, record, columns);
        return code;
      }),
    ),
    'platform clusters create --name prod-eu --region fsn1 --version v1.31 --wait --timeout 900',
  );

  example(
    clusters
      .command('rename <id>')
      .description('rename a cluster (names are unique in the workspace)')
      .requiredOption('--name <name>', 'the new name, a DNS label')
      .action(
        action(async ({ api, out }, id: string, flags: { name: string }) => {
          printRecord(out, await api.PATCH('/v1/clusters/{clusterId}', { params: { path: { clusterId: id } }, body: { name: flags.name } }), columns);
        }),
      ),
    'platform clusters rename cl_01jd2x8m5r7t9v1w3y5a7c9e1g --name prod-eu-2',
  );

  example(
    clusters
      .command('kubeconfig <id>')
      .description('print a kubeconfig with a short-lived token (workspace owners only)')
      .option('--ttl <seconds>', 'how long the token is valid, 600 to 86400 seconds', (value) => Number(value))
      .action(
        action(async ({ api, out }, id: string, flags: { ttl?: number }) => {
          const answer = await api.GET('/v1/clusters/{clusterId}/kubeconfig', { params: { path: { clusterId: id }, query: { ttl_seconds: flags.ttl } } });
          if (out.json) return json(out, answer);
          // The file alone on stdout, so it can be redirected; when it expires on stderr.
          out.io.stdout.write(answer.kubeconfig);
          out.io.stderr.write(`The token expires ${time(answer.expires_at)}.\n`);
        }),
      ),
    'platform clusters kubeconfig cl_01jd2x8m5r7t9v1w3y5a7c9e1g > kubeconfig.yaml',
    'platform clusters kubeconfig cl_01jd2x8m5r7t9v1w3y5a7c9e1g --ttl 600 --json',
  );

  example(
    withYes(clusters.command('delete <id>').description('delete a cluster (asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Delete cluster ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: id } } });
        done(out, `Deleted cluster ${id}`);
      }),
    ),
    'platform clusters delete cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
    'platform clusters delete cl_01jd2x8m5r7t9v1w3y5a7c9e1g --yes',
  );
}
