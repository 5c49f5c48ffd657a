// `platform compute`: machines of a cluster, compute configs, cloud credentials (your own provider account),
// suspensions, drift and auto-scaling status.
import type { Schema } from '@platform/api-types';
import { type Command, Option } from 'commander';
import { confirm, declined, withYes, type YesFlags } from '../confirm.ts';
import { action, example, type PageFlags, UsageError, type WaitFlags, withPage, withWait } from '../context.ts';
import { readSecret } from '../files.ts';
import { type Columns, done, printList, printPage, printRecord, quantity, time } from '../output.ts';
import { waitFor } from '../wait.ts';

const machineColumns: Columns<Schema<'Machine'>> = [
  ['PROVIDER ID', (m) => m.provider_id],
  ['NODE', (m) => m.node_name],
  ['STATUS', (m) => m.status],
  ['CLUSTER', (m) => m.cluster_id],
  ['TYPE', (m) => m.server_type],
  ['CPU', (m) => quantity('cores', m.cpu)],
  ['MEMORY', (m) => quantity('bytes', m.memory_bytes)],
  ['BYOM', (m) => m.byom],
  ['CREATED', (m) => time(m.created_at)],
];

const suspensionColumns: Columns<Schema<'Suspension'>> = [
  ['ID', (s) => s.id],
  ['PROVIDER ID', (s) => s.provider_id],
  ['NODE', (s) => s.node_name],
  ['CLUSTER', (s) => s.cluster_id],
  ['REASON', (s) => s.reason],
  ['STATUS', (s) => s.status],
  ['CREATED', (s) => time(s.created_at)],
  ['EXPIRES', (s) => time(s.expires_at)],
];

const configColumns: Columns<Schema<'ComputeConfig'>> = [
  ['ID', (c) => c.id],
  ['NAME', (c) => c.name],
  ['PROVIDER', (c) => c.provider],
  ['CREDENTIAL', (c) => c.cloud_credential_id ?? '(platform)'],
  ['PROVIDER CONFIG', (c) => c.provider_config],
  ['CREATED', (c) => time(c.created_at)],
];

const credentialColumns: Columns<Schema<'CloudCredential'>> = [
  ['ID', (c) => c.id],
  ['NAME', (c) => c.name],
  ['PROVIDER', (c) => c.provider],
  ['ACTIVE', (c) => c.is_active],
  ['CREATED', (c) => time(c.created_at)],
  ['LAST USED', (c) => time(c.last_used_at)],
];

type Provider = Schema<'ComputeProvider'>;
const PROVIDERS = ['hcloud'] as const satisfies readonly Provider[];

/** `--provider`, one of the contract's providers; hcloud, the only one today, by default. */
const providerOption = () => new Option('--provider <provider>', 'the cloud provider').choices(PROVIDERS).default('hcloud');

export function registerCompute(program: Command): void {
  const compute = program.command('compute').description('machines, compute configs, cloud credentials, suspensions, drift and scaling status');
  example(compute, 'platform compute machines list --cluster cl_01jd…', 'platform compute status cl_01jd…');

  const machines = compute.command('machines').description('the machines (servers) of clusters');
  example(machines, 'platform compute machines request --cluster cl_01jd… --config cc_01jd… --wait');

  example(
    machines
      .command('list')
      .description('list the machines of a cluster')
      .requiredOption('--cluster <id>', 'cluster id')
      .action(
        action(async ({ api, out }, flags: { cluster: string }) => {
          const list = await api.GET('/v1/compute/machines', { params: { query: { cluster_id: flags.cluster } } });
          printList(out, list, machineColumns);
        }),
      ),
    'platform compute machines list --cluster cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
  );

  example(
    withWait(
      machines
        .command('request')
        .description('request a machine for a cluster (provisioning runs in the background)')
        .requiredOption('--cluster <id>', 'cluster id')
        .requiredOption('--config <id>', 'compute config id')
        .option('--server-type <type>', 'server type, e.g. cx22 (default: the config’s choice)'),
    ).action(
      action(async ({ api, out }, flags: WaitFlags & { cluster: string; config: string; serverType?: string }) => {
        const machine = await api.POST('/v1/compute/machines', {
          body: { cluster_id: flags.cluster, compute_config_id: flags.config, server_type: flags.serverType },
        });
        if (!flags.wait) return printRecord(out, machine, machineColumns);
        // There is no single-machine read: the cluster's list holds it.
        const { code, record } = await waitFor({
          io: out.io,
          what: `machine ${machine.provider_id} to be ready`,
          read: async () =>
            (await api.GET('/v1/compute/machines', { params: { query: { cluster_id: flags.cluster } } })).find((m) => m.provider_id === machine.provider_id) ??
            machine,
          outcome: (m) => (m.status === 'ready' ? 'succeeded' : m.status === 'failed' ? 'failed' : 'pending'),
          describe: (m) => m.status,
          timeoutSeconds: flags.timeout,
        });
        printRecord(out, record, machineColumns);
        return code;
      }),
    ),
    'platform compute machines request --cluster cl_01jd… --config cc_01jd… --server-type cx22 --wait',
  );

  example(
    machines
      .command('get <providerId>')
      .description('show one machine')
      .action(
        action(async ({ api, out }, providerId: string) => {
          printRecord(out, await api.GET('/v1/compute/machines/{providerId}', { params: { path: { providerId } } }), machineColumns);
        }),
      ),
    'platform compute machines get compute://mch_01jd2x9c3d5f7h9k1m3p5r7t9v',
  );

  example(
    machines
      .command('suspend <providerId>')
      .description('suspend a machine: snapshot it and remove its server until it is resumed')
      .action(
        action(async ({ api, out }, providerId: string) => {
          printRecord(out, await api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId } } }), suspensionColumns);
        }),
      ),
    'platform compute machines suspend hc_12345678',
  );

  example(
    withYes(machines.command('delete <providerId>').description('delete a machine and its server (asks first unless --yes)')).action(
      action(async ({ api, out }, providerId: string, flags: YesFlags) => {
        const what = `Delete machine ${providerId}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId } } });
        done(out, `Deleted machine ${providerId}`);
      }),
    ),
    'platform compute machines delete compute://mch_01jd2x9c3d5f7h9k1m3p5r7t9v --yes',
  );

  const configs = compute.command('configs').description('compute configurations (provider, region, image, server types)');
  example(
    configs,
    'platform compute configs list',
    "platform compute configs create --name general-purpose --region fsn1 --image ubuntu-24.04 --server-types 'cx2*'",
  );
  example(
    withPage(configs.command('list').description('list the compute configs of the workspace')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/compute/configs', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, configColumns);
      }),
    ),
    'platform compute configs list --json',
  );
  example(
    configs
      .command('create')
      .description('create a compute config: where and from which image its machines are made, on the platform’s account or your own')
      .requiredOption('--name <name>', 'its name')
      .requiredOption('--region <location>', 'the provider’s location, e.g. fsn1')
      .requiredOption('--image <image>', 'the provider’s image the machines boot from, e.g. ubuntu-24.04')
      .requiredOption('--server-types <glob>', 'the server types it may use (* any characters, ? one), e.g. cx2*; the cheapest match is taken')
      .addOption(providerOption())
      .option('--cloud-credential <id>', 'make its machines with this cloud credential of yours (BYOM) instead of the platform’s account')
      .action(
        action(
          async ({ api, out }, flags: { name: string; region: string; image: string; serverTypes: string; provider: Provider; cloudCredential?: string }) => {
            const body = {
              name: flags.name,
              provider: flags.provider,
              provider_config: { provider: flags.provider, region: flags.region, image: flags.image, machine_type_filter: flags.serverTypes },
              cloud_credential_id: flags.cloudCredential,
            };
            printRecord(out, await api.POST('/v1/compute/configs', { body }), configColumns);
          },
        ),
      ),
    "platform compute configs create --name general-purpose --region fsn1 --image ubuntu-24.04 --server-types 'cx2*'",
    "platform compute configs create --name own-arm --region nbg1 --image ubuntu-24.04 --server-types 'cax*' --cloud-credential ccr_01jd…",
  );
  example(
    configs
      .command('get <id>')
      .description('show one compute config')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.GET('/v1/compute/configs/{id}', { params: { path: { id } } }), configColumns);
        }),
      ),
    'platform compute configs get cc_01jd2x9a2b4c6d8e0f2g4h6j8k',
  );
  example(
    configs
      .command('rename <id>')
      .description('rename a compute config (its provider settings stay)')
      .requiredOption('--name <name>', 'the new name')
      .action(
        action(async ({ api, out }, id: string, flags: { name: string }) => {
          printRecord(out, await api.PATCH('/v1/compute/configs/{id}', { params: { path: { id } }, body: { name: flags.name } }), configColumns);
        }),
      ),
    'platform compute configs rename cc_01jd2x9a2b4c6d8e0f2g4h6j8k --name general-purpose-eu',
  );
  example(
    withYes(configs.command('delete <id>').description('delete a compute config (asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Delete compute config ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/compute/configs/{id}', { params: { path: { id } } });
        done(out, `Deleted compute config ${id}`);
      }),
    ),
    'platform compute configs delete cc_01jd2x8m5r7t9v1w3y5a7c9e1g --yes',
  );

  const credentials = compute.command('cloud-credentials').description('your own cloud provider API tokens, for machines on your account (BYOM)');
  example(
    credentials,
    'platform compute cloud-credentials create --name hetzner-main --token-file - < hcloud-token.txt',
    'platform compute cloud-credentials list',
  );
  example(
    withPage(credentials.command('list').description('list the cloud credentials of the workspace (never their tokens)')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/compute/cloud_credentials', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, credentialColumns);
      }),
    ),
    'platform compute cloud-credentials list --json',
  );
  example(
    credentials
      .command('create')
      .description('store a provider API token (admins); it is encrypted and cannot be read back')
      .requiredOption('--name <name>', 'a name for it')
      .requiredOption('--token-file <path>', 'a file holding the provider API token, or - for standard input')
      .addOption(providerOption())
      .action(
        action(async ({ api, out }, flags: { name: string; tokenFile: string; provider: Provider }) => {
          const body = { name: flags.name, provider: flags.provider, secret: await readSecret(out.io, flags.tokenFile, '--token-file') };
          printRecord(out, await api.POST('/v1/compute/cloud_credentials', { body }), credentialColumns);
        }),
      ),
    'platform compute cloud-credentials create --name hetzner-main --token-file ~/.config/hcloud/token',
    'echo "$HCLOUD_TOKEN" | platform compute cloud-credentials create --name hetzner-main --token-file -',
  );
  example(
    credentials
      .command('get <id>')
      .description('show one cloud credential (never its token)')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.GET('/v1/compute/cloud_credentials/{id}', { params: { path: { id } } }), credentialColumns);
        }),
      ),
    'platform compute cloud-credentials get ccr_01jd2y2k7m9p1r3t5v7x9z1b3d',
  );
  example(
    credentials
      .command('rotate <id>')
      .description('replace the token (the old one is gone at once), rename it, or switch it off or on (admins)')
      .option('--token-file <path>', 'a file holding the new provider API token, or - for standard input')
      .option('--name <name>', 'a new name')
      .option('--active', 'switch it on')
      .option('--inactive', 'switch it off: no new compute configs or machines use it; its machines keep working')
      .action(
        action(async ({ api, out }, id: string, flags: { tokenFile?: string; name?: string; active?: boolean; inactive?: boolean }) => {
          if (flags.active && flags.inactive) throw new UsageError('give --active or --inactive, not both');
          const body = {
            ...(flags.tokenFile === undefined ? {} : { secret: await readSecret(out.io, flags.tokenFile, '--token-file') }),
            ...(flags.name === undefined ? {} : { name: flags.name }),
            ...(flags.active || flags.inactive ? { is_active: Boolean(flags.active) } : {}),
          };
          if (Object.keys(body).length === 0) throw new UsageError('give what to change: --token-file, --name, --active or --inactive');
          printRecord(out, await api.PATCH('/v1/compute/cloud_credentials/{id}', { params: { path: { id } }, body }), credentialColumns);
        }),
      ),
    'echo "$NEW_HCLOUD_TOKEN" | platform compute cloud-credentials rotate ccr_01jd2y2k7m9p1r3t5v7x9z1b3d --token-file -',
    'platform compute cloud-credentials rotate ccr_01jd2y2k7m9p1r3t5v7x9z1b3d --inactive',
  );
  example(
    withYes(credentials.command('delete <id>').description('delete a cloud credential no compute config uses (admins; asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Delete cloud credential ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/compute/cloud_credentials/{id}', { params: { path: { id } } });
        done(out, `Deleted cloud credential ${id}`);
      }),
    ),
    'platform compute cloud-credentials delete ccr_01jd2y2k7m9p1r3t5v7x9z1b3d --yes',
  );

  const suspensions = compute.command('suspensions').description('suspended machines and their resumption');
  example(suspensions, 'platform compute suspensions list', 'platform compute suspensions resume sus_01jd… --wait');
  example(
    withPage(suspensions.command('list').description('list the suspensions of the workspace')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/compute/suspensions', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, suspensionColumns);
      }),
    ),
    'platform compute suspensions list --json',
  );
  example(
    suspensions
      .command('get <id>')
      .description('show one suspension')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.GET('/v1/compute/suspensions/{id}', { params: { path: { id } } }), suspensionColumns);
        }),
      ),
    'platform compute suspensions get sus_01jd2x8m5r7t9v1w3y5a7c9e1g',
  );
  example(
    withWait(suspensions.command('resume <id>').description('resume a suspended machine from its snapshot')).action(
      action(async ({ api, out }, id: string, flags: WaitFlags) => {
        const suspension = await api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id } } });
        if (!flags.wait) return printRecord(out, suspension, suspensionColumns);
        const { code, record } = await waitFor({
          io: out.io,
          what: `suspension ${id} to resume`,
          read: () => api.GET('/v1/compute/suspensions/{id}', { params: { path: { id } } }),
          // Once resuming, a suspension is suspended again only when the resume failed (the snapshot kept).
          outcome: (s) => (s.status === 'resumed' ? 'succeeded' : s.status === 'failed' || s.status === 'suspended' ? 'failed' : 'pending'),
          describe: (s) => s.status,
          timeoutSeconds: flags.timeout,
        });
        printRecord(out, record, suspensionColumns);
        return code;
      }),
    ),
    'platform compute suspensions resume sus_01jd2x8m5r7t9v1w3y5a7c9e1g --wait',
  );

  example(
    compute
      .command('drift <providerId>')
      .description('check whether a machine differs from its compute config')
      .action(
        action(async ({ api, out }, providerId: string) => {
          const drift = await api.GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId } } });
          if (out.json || drift.differences.length === 0) {
            return printRecord(out, drift, [
              ['DRIFTED', (d) => d.drifted],
              ['REASON', (d) => d.reason],
              ['CHECKED', (d) => time(d.checked_at)],
            ]);
          }
          out.io.stdout.write(`Drifted: ${drift.reason}\n`);
          printList(out, drift.differences, [
            ['FIELD', (d) => d.field],
            ['DESIRED', (d) => d.desired],
            ['ACTUAL', (d) => d.actual],
          ]);
        }),
      ),
    'platform compute drift hc_12345678',
  );

  example(
    compute
      .command('status <clusterId>')
      .description('a cluster’s machine count, limits and auto-scaling state')
      .action(
        action(async ({ api, out }, clusterId: string) => {
          const status = await api.GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId } } });
          printRecord(out, status, [
            ['MACHINES', (s) => `${s.machines} of ${s.max_machines}`],
            ['AUTOSCALING', (s) => s.autoscaling.state],
            ['PROVISIONING', (s) => `${s.autoscaling.provisioning} (at most ${s.autoscaling.provisioning_limit} at once)`],
            ['QUEUED', (s) => s.autoscaling.queued],
            ['BACKOFF UNTIL', (s) => time(s.autoscaling.backoff_until)],
          ]);
        }),
      ),
    'platform compute status cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
  );
}
