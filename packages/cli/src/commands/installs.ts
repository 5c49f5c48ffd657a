// `platform installs`: products installed in a region, and their logs.
import type { Schema } from '@platform/api-types';
import type { Command } from 'commander';
import { confirm, declined, withYes, type YesFlags } from '../confirm.ts';
import { action, type Context, example, type PageFlags, positiveInteger, UsageError, type WaitFlags, withPage, withWait } from '../context.ts';
import { readDocument } from '../files.ts';
import { collectValues, type Overrides, valuesOverrides } from '../helm-values.ts';
import type { Io } from '../io.ts';
import { type Columns, printPage, printRecord, time } from '../output.ts';
import { EXIT_INTERRUPTED, waitFor } from '../wait.ts';

const columns: Columns<Schema<'Install'>> = [
  ['ID', (i) => i.id],
  ['PRODUCT', (i) => i.product_id],
  ['REGION', (i) => i.region_id],
  ['CLUSTER', (i) => i.cluster_id],
  ['STATUS', (i) => i.status],
  ['MESSAGE', (i) => i.status_message],
  ['UPDATED', (i) => time(i.updated_at)],
];

const revisionColumns: Columns<Schema<'InstallRevision'>> = [
  ['REVISION', (r) => r.revision],
  ['TEMPLATE', (r) => r.template_id],
  ['OVERRIDES', (r) => r.overrides.length],
  ['STATUS', (r) => r.status],
  ['UPDATED', (r) => time(r.updated_at)],
];

/** An override file holds the list itself, or `{overrides: [...]}`. */
async function readOverrides(io: Io, path: string): Promise<Overrides> {
  const document = await readDocument(io, path);
  const list = typeof document === 'object' && document !== null && !Array.isArray(document) && 'overrides' in document ? document.overrides : document;
  if (!Array.isArray(list)) throw new UsageError(`${path} must hold a list of overrides ({template_helm_source_id, values})`);
  return list as Overrides; // validated by the service against the contract
}

/** Waits until the install's deploy has run (or failed, or the wait timed out), prints it, and gives the exit code. */
async function printWhenDeployed({ api, out }: Context, id: string, timeoutSeconds: number): Promise<number> {
  const { code, record } = await waitFor({
    io: out.io,
    what: `install ${id}`,
    read: () => api.GET('/v1/installs/{id}', { params: { path: { id } } }),
    outcome: (i) => (i.status === 'running' ? 'succeeded' : i.status === 'failed' ? 'failed' : 'pending'),
    describe: (i) => i.status + (i.status_message ? `: ${i.status_message}` : ''),
    timeoutSeconds,
  });
  printRecord(out, record, columns);
  return code;
}

interface LogFlags {
  follow: boolean;
  tail?: number;
  since?: number;
  pod?: string;
  container?: string;
}

export function registerInstalls(program: Command): void {
  const installs = program.command('installs').description('installs of products, and their logs');
  example(installs, 'platform installs create --product prd_01jd… --region fsn1 --wait', 'platform installs logs ins_01jd… --tail 100');

  example(
    withWait(
      installs
        .command('create')
        .description('install a product in a region (placed on one of its clusters there)')
        .requiredOption('--product <id>', 'product id')
        .requiredOption('--region <region>', 'region id, e.g. fsn1')
        .option(
          '--values <source=file>',
          'a helm values file for the product source of that name (repeatable); the name is its metadata.name, chart name or path’s last folder, or its id',
          collectValues,
          [],
        )
        .option('--override-file <path>', 'YAML or JSON list of {template_helm_source_id, values} overriding chart values'),
    ).action(
      action(async (context, flags: WaitFlags & { product: string; region: string; values: string[]; overrideFile?: string }) => {
        const { api, out } = context;
        const overrides: Overrides = [];
        // Names are resolved against the product as it is now: its source ids change when its sources are replaced.
        if (flags.values.length > 0)
          overrides.push(...(await valuesOverrides(out.io, flags.values, await api.GET('/v1/products/{id}', { params: { path: { id: flags.product } } }))));
        if (flags.overrideFile !== undefined) overrides.push(...(await readOverrides(out.io, flags.overrideFile)));
        // The client sends an idempotency key, so a retried create makes one install.
        const install = await api.POST('/v1/installs', {
          body: { product_id: flags.product, region_id: flags.region, overrides: overrides.length > 0 ? overrides : undefined },
        });
        if (!flags.wait) return printRecord(out, install, columns);
        if (!out.json) out.io.stderr.write(`Created ${install.id}; waiting for it to run\n`);
        return printWhenDeployed(context, install.id, flags.timeout);
      }),
    ),
    'platform installs create --product prd_01jd… --region fsn1 --values wordpress=values.yaml --wait',
  );

  example(
    installs
      .command('get <id>')
      .description('show one install')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.GET('/v1/installs/{id}', { params: { path: { id } } }), columns);
        }),
      ),
    'platform installs get ins_01jd2xc6g8j0m2p4r6t8w0y2a4',
  );

  example(
    withPage(installs.command('list').description('list the installs of the workspace')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/installs', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, columns);
      }),
    ),
    'platform installs list --json',
  );

  example(
    installs
      .command('logs <id>')
      .description('print an install’s container logs; follows new lines until Ctrl-C unless --no-follow')
      .option('--follow', 'keep the stream open for new lines', true)
      .option('--no-follow', 'print what is there and stop')
      .option('--tail <n>', 'start with the last n lines of each container', positiveInteger)
      .option('--since <seconds>', 'only lines of the last n seconds', positiveInteger)
      .option('--pod <name>', 'only this pod')
      .option('--container <name>', 'only this container')
      .action(
        action(async ({ api, out }, id: string, flags: LogFlags) => {
          // Ctrl-C ends the stream cleanly: the connection is closed and the exit code says it was interrupted.
          const controller = new AbortController();
          const interrupt = () => controller.abort();
          const stopListening = out.io.onInterrupt(interrupt);
          try {
            const events = api.streamInstallLogs(id, {
              follow: flags.follow,
              tail: flags.tail,
              since_seconds: flags.since,
              pod: flags.pod,
              container: flags.container,
              signal: controller.signal,
            });
            for await (const event of events) {
              if (event.type !== 'log') continue;
              // --json: one JSON line per log line (NDJSON), for jq and friends.
              out.io.stdout.write(out.json ? `${JSON.stringify(event.data)}\n` : `${event.data.pod}/${event.data.container} ${event.data.line}\n`);
            }
          } catch (error) {
            if (controller.signal.aborted) return EXIT_INTERRUPTED;
            throw error;
          } finally {
            stopListening();
          }
        }),
      ),
    'platform installs logs ins_01jd2xc6g8j0m2p4r6t8w0y2a4 --tail 100 --container wordpress',
    'platform installs logs ins_01jd2xc6g8j0m2p4r6t8w0y2a4 --no-follow --since 600 --json | jq .line',
  );

  example(
    withWait(
      installs
        .command('update <id>')
        .description('replace an install’s value overrides and upgrade its releases (the sources’ names as in create)')
        .option('--values <source=file>', 'a helm values file for the product source of that name (repeatable)', collectValues, [])
        .option('--override-file <path>', 'YAML or JSON list of {template_helm_source_id, values}; none of either clears the overrides'),
    ).action(
      action(async (context, id: string, flags: WaitFlags & { values: string[]; overrideFile?: string }) => {
        const { api, out } = context;
        const overrides: Overrides = [];
        if (flags.values.length > 0) {
          const install = await api.GET('/v1/installs/{id}', { params: { path: { id } } });
          overrides.push(
            ...(await valuesOverrides(out.io, flags.values, await api.GET('/v1/products/{id}', { params: { path: { id: install.product_id } } }))),
          );
        }
        if (flags.overrideFile !== undefined) overrides.push(...(await readOverrides(out.io, flags.overrideFile)));
        const install = await api.PATCH('/v1/installs/{id}', { params: { path: { id } }, body: { overrides } });
        if (!flags.wait) return printRecord(out, install, columns);
        return printWhenDeployed(context, id, flags.timeout);
      }),
    ),
    'platform installs update ins_01jd2xc6g8j0m2p4r6t8w0y2a4 --values wordpress=values.yaml --wait',
  );

  example(
    withPage(installs.command('revisions <id>').description('list an install’s revisions: each deploy’s template, overrides and outcome')).action(
      action(async ({ api, out }, id: string, flags: PageFlags) => {
        const page = await api.GET('/v1/installs/{id}/revisions', { params: { path: { id }, query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, revisionColumns);
      }),
    ),
    'platform installs revisions ins_01jd2xc6g8j0m2p4r6t8w0y2a4',
  );

  example(
    withWait(
      installs
        .command('rollback <id>')
        .description('redeploy exactly what a revision rendered: its template, sources and overrides')
        .requiredOption('--revision <n>', 'the revision (see installs revisions)', positiveInteger),
    ).action(
      action(async (context, id: string, flags: WaitFlags & { revision: number }) => {
        const { api, out } = context;
        const install = await api.POST('/v1/installs/{id}/rollback', { params: { path: { id } }, body: { revision: flags.revision } });
        if (!flags.wait) return printRecord(out, install, columns);
        return printWhenDeployed(context, id, flags.timeout);
      }),
    ),
    'platform installs rollback ins_01jd2xc6g8j0m2p4r6t8w0y2a4 --revision 1 --wait',
  );

  example(
    withYes(installs.command('delete <id>').description('uninstall an install: its releases, then the install (asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Uninstall install ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        printRecord(out, await api.DELETE('/v1/installs/{id}', { params: { path: { id } } }), columns);
      }),
    ),
    'platform installs delete ins_01jd2xc6g8j0m2p4r6t8w0y2a4 --yes',
  );
}
