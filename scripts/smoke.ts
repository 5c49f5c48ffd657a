// `pnpm smoke [options]`: the whole journey through the public API with the generated client — a cluster, a
// machine that joins it, a product, an install, its logs, the uninstall and the cleanup — printing each step's
// name and time, the first step that fails and why, and deleting everything it made even when a step fails or
// the run is interrupted. Exit codes: 0 all passed, 1 a step (or the cleanup) failed, 2 usage.
//
// Against PLATFORM_API_URL with PLATFORM_TOKEN (and PLATFORM_WORKSPACE_ID, else the token's default workspace)
// when both are set: a deployment with real Hetzner and Kubernetes drivers, or any other. Otherwise it starts the
// platform itself (server and workers, the simulated cloud at fast timings) on a scratch database, `platform_smoke`
// on DATABASE_URL's server or the embedded PostgreSQL under .data/smoke, with a user made for the run.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createPlatformClient, PlatformApiError, type PlatformClient } from '@platform/client';

const USAGE = `Usage: pnpm smoke [options]

Runs a cluster, a machine, a product, an install, its logs and an uninstall through the API, then deletes all it
made. Against PLATFORM_API_URL with PLATFORM_TOKEN when set; otherwise against a simulator it starts itself.

  --region ID                   region of the cluster, install and machine (default fsn1)
  --kubernetes-version V        the cluster's version, one of GET /v1/kaas/versions on offer (default v1.31)
  --chart-repo URL              the chart repository (default https://stefanprodan.github.io/podinfo)
  --chart NAME                  the chart (default podinfo)
  --chart-version VERSION       the chart version (default 6.7.1)
  --image NAME                  the machine's image (default ubuntu-24.04)
  --machine-type-filter GLOB    server types the machine may use (default cx2*)
  --cloud-token-file PATH       use a BYOM cloud credential with the Hetzner token in this file
  --cluster-timeout SECONDS     deadline of the cluster step (SMOKE_CLUSTER_TIMEOUT_SECONDS, default 900)
  --machine-timeout SECONDS     deadline of the machine step (SMOKE_MACHINE_TIMEOUT_SECONDS, default 600)
  --install-timeout SECONDS     deadline of the install step (SMOKE_INSTALL_TIMEOUT_SECONDS, default 600)
  --step-timeout SECONDS        deadline of every other step (SMOKE_STEP_TIMEOUT_SECONDS, default 300)
  --keep                        leave what the run made, for inspection
  --help                        this text`;

class UsageError extends Error {}
/** A step that did not reach its goal: the reason is what the API or the workflow said. */
class StepFailure extends Error {}

interface Options {
  region: string;
  kubernetesVersion: string;
  chart: { repo_url: string; chart: string; target_revision: string };
  image: string;
  machineTypeFilter: string;
  cloudToken: string | undefined;
  timeouts: { cluster: number; machine: number; install: number; step: number };
  keep: boolean;
}

function seconds(flag: string | undefined, envName: string, fallback: number): number {
  const text = flag ?? process.env[envName];
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new UsageError(`${envName} / its flag must be a whole number of seconds above 0, not '${text}'`);
  return value;
}

function parseOptions(argv: string[]): Options | 'help' {
  let values: ReturnType<typeof parse>['values'];
  const parse = (args: string[]) =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        region: { type: 'string', default: 'fsn1' },
        'kubernetes-version': { type: 'string', default: 'v1.31' },
        'chart-repo': { type: 'string', default: 'https://stefanprodan.github.io/podinfo' },
        chart: { type: 'string', default: 'podinfo' },
        'chart-version': { type: 'string', default: '6.7.1' },
        image: { type: 'string', default: 'ubuntu-24.04' },
        'machine-type-filter': { type: 'string', default: 'cx2*' },
        'cloud-token-file': { type: 'string' },
        'cluster-timeout': { type: 'string' },
        'machine-timeout': { type: 'string' },
        'install-timeout': { type: 'string' },
        'step-timeout': { type: 'string' },
        keep: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    });
  try {
    values = parse(argv).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return 'help';
  const version = values['kubernetes-version']!;
  // Which versions are on offer is the API's to say (GET /v1/kaas/versions): only the form is checked here.
  if (!/^v\d+\.\d+$/.test(version)) throw new UsageError(`--kubernetes-version must be a version like v1.35, not '${version}'`);
  let cloudToken: string | undefined;
  if (values['cloud-token-file'] !== undefined) {
    try {
      cloudToken = readFileSync(values['cloud-token-file'], 'utf8').trim();
    } catch (error) {
      throw new UsageError(`--cloud-token-file: ${(error as Error).message}`);
    }
    if (cloudToken === '') throw new UsageError(`--cloud-token-file: ${values['cloud-token-file']} is empty`);
  }
  return {
    region: values.region!,
    kubernetesVersion: version,
    chart: { repo_url: values['chart-repo']!, chart: values.chart!, target_revision: values['chart-version']! },
    image: values.image!,
    machineTypeFilter: values['machine-type-filter']!,
    cloudToken,
    timeouts: {
      cluster: seconds(values['cluster-timeout'], 'SMOKE_CLUSTER_TIMEOUT_SECONDS', 900),
      machine: seconds(values['machine-timeout'], 'SMOKE_MACHINE_TIMEOUT_SECONDS', 600),
      install: seconds(values['install-timeout'], 'SMOKE_INSTALL_TIMEOUT_SECONDS', 600),
      step: seconds(values['step-timeout'], 'SMOKE_STEP_TIMEOUT_SECONDS', 300),
    },
    keep: values.keep!,
  };
}

/** The API's error in words: its code, message, param and suggestion. */
function describe(error: unknown): string {
  if (error instanceof PlatformApiError) {
    const param = error.param ? ` (${error.param})` : '';
    const suggestion = error.suggestion ? ` ${error.suggestion}` : '';
    return `${error.status} ${error.code}: ${error.message}${param}${suggestion}`;
  }
  return error instanceof Error ? error.message : String(error);
}

const isGone = (error: unknown) => error instanceof PlatformApiError && error.status === 404;

const POLL_MS = Number(process.env.SMOKE_POLL_MS ?? 1000);

/**
 * Asks `check` until it answers true, it throws (a failure the workflow reported), the deadline passes or the run
 * is interrupted. `state` says where the object stood, for the timeout's message.
 */
async function until(what: string, deadlineSeconds: number, signal: AbortSignal, check: () => Promise<boolean>, state: () => string): Promise<void> {
  const deadline = Date.now() + deadlineSeconds * 1000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new StepFailure(`${what} did not happen within ${deadlineSeconds} s (${state()})`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    if (signal.aborted) throw new StepFailure('interrupted');
  }
}

/** What the run made, newest last; the cleanup deletes it newest first. */
interface Made {
  kind: string;
  id: string;
  /** Deletes it; resolves once it is gone (404). */
  remove(): Promise<void>;
}
/** What the run made and has not deleted yet, newest last. */
const made: Made[] = [];
const listed = (objects: Made[]) => objects.map((m) => `${m.kind} ${m.id}`).join(', ') || 'nothing';

/** The body of the machine's newest notification of that type: where a workflow says why a provision failed. */
async function newestNotice(api: PlatformClient, providerId: string, type: 'machine.failed' | 'machine.provision_failed'): Promise<string | undefined> {
  let newest: { body: string; created_at: number } | undefined;
  for await (const notice of api.paginate('listNotifications', { limit: 100 })) {
    if (notice.resource_id === providerId && notice.type === type && (newest === undefined || notice.created_at >= newest.created_at)) newest = notice;
  }
  return newest?.body;
}

/**
 * The output: a step's name as it starts and its result on the same line. A line printed meanwhile (the notice
 * of a Ctrl-C) breaks it; the result then repeats the step's name.
 */
const progress = {
  open: undefined as string | undefined,
  broken: false,
  begin(step: string): void {
    this.open = step;
    this.broken = false;
    process.stdout.write(step.padEnd(12));
  },
  end(result: string): void {
    process.stdout.write(`${this.broken ? this.open!.padEnd(12) : ''}${result}\n`);
    this.open = undefined;
  },
  line(text: string): void {
    if (this.open !== undefined && !this.broken) {
      process.stdout.write('\n');
      this.broken = true;
    }
    console.log(text);
  },
};

async function runJourney(api: PlatformClient, options: Options, signal: AbortSignal): Promise<boolean> {
  const cleanupSeconds = options.timeouts.step;
  /** Deletes with `remove` (a 404 counts as gone), then waits until `read` answers 404. */
  const deletion =
    (remove: () => Promise<unknown>, read: () => Promise<unknown>, deadline = cleanupSeconds) =>
    async () => {
      try {
        await remove();
      } catch (error) {
        if (!isGone(error)) throw error;
      }
      let last = 'still there';
      await until(
        'its deletion',
        deadline,
        new AbortController().signal,
        async () => {
          try {
            const object = (await read()) as { status?: string; kaas?: { status: string } };
            last = `still there, ${object.kaas?.status ?? object.status ?? 'present'}`;
            return false;
          } catch (error) {
            if (isGone(error)) return true;
            throw error;
          }
        },
        () => last,
      );
    };

  const step = async (name: string, body: () => Promise<string | undefined>): Promise<void> => {
    const started = Date.now();
    progress.begin(name);
    try {
      if (signal.aborted) throw new StepFailure('interrupted');
      const detail = await body();
      progress.end(`ok      ${elapsed(started)}${detail ? `  ${detail}` : ''}`);
    } catch (error) {
      progress.end(`FAILED  ${elapsed(started)}  ${describe(error)}`);
      throw new FirstFailure(name, describe(error));
    }
  };

  let failed: FirstFailure | undefined;
  try {
    let clusterId = '';
    await step('cluster', async () => {
      const cluster = await api.createCluster({
        body: { name: `smoke-${Date.now().toString(36)}`, region_id: options.region, kaas_version: options.kubernetesVersion },
      });
      clusterId = cluster.id;
      const getCluster = () => api.getCluster({ clusterId: cluster.id });
      made.push({
        kind: 'cluster',
        id: cluster.id,
        remove: deletion(() => api.deleteCluster({ clusterId: cluster.id }), getCluster, options.timeouts.cluster),
      });
      let status = cluster.kaas.status;
      await until(
        'RUNNING',
        options.timeouts.cluster,
        signal,
        async () => {
          const current = await getCluster();
          status = current.kaas.status;
          if (status === 'ERROR') throw new StepFailure(`the cluster is ERROR: ${current.kaas.status_message ?? 'no message'}`);
          return status === 'RUNNING';
        },
        () => `status ${status}`,
      );
      return cluster.id;
    });

    await step('machine', async () => {
      let cloudCredentialId: string | undefined;
      if (options.cloudToken !== undefined) {
        const credential = await api.createCloudCredential({ body: { name: 'smoke', provider: 'hcloud', secret: options.cloudToken } });
        cloudCredentialId = credential.id;
        const read = () => api.getCloudCredential({ id: credential.id });
        made.push({ kind: 'cloud credential', id: credential.id, remove: deletion(() => api.deleteCloudCredential({ id: credential.id }), read) });
      }
      const config = await api.createComputeConfig({
        body: {
          name: 'smoke',
          provider: 'hcloud',
          ...(cloudCredentialId ? { cloud_credential_id: cloudCredentialId } : {}),
          provider_config: { provider: 'hcloud', region: options.region, image: options.image, machine_type_filter: options.machineTypeFilter },
        },
      });
      made.push({
        kind: 'compute config',
        id: config.id,
        remove: deletion(
          () => api.deleteComputeConfig({ id: config.id }),
          () => api.getComputeConfig({ id: config.id }),
        ),
      });
      const machine = await api.requestMachine({ body: { cluster_id: clusterId, compute_config_id: config.id } });
      const getMachine = () => api.getMachine({ providerId: machine.provider_id });
      made.push({
        kind: 'machine',
        id: machine.provider_id,
        remove: deletion(() => api.deleteMachine({ providerId: machine.provider_id }), getMachine, options.timeouts.machine),
      });
      let status = machine.status;
      try {
        await until(
          'ready',
          options.timeouts.machine,
          signal,
          async () => {
            status = (await getMachine()).status;
            if (status === 'failed') {
              const why = await newestNotice(api, machine.provider_id, 'machine.failed');
              throw new StepFailure(`the machine ${machine.node_name} failed: ${why ?? 'no notification says why'}`);
            }
            return status === 'ready';
          },
          () => `status ${status}`,
        );
      } catch (error) {
        // A machine still provisioning at its deadline: the last failed attempt, if any, says what stands in the way.
        const attempt = status === 'failed' ? undefined : await newestNotice(api, machine.provider_id, 'machine.provision_failed');
        if (attempt === undefined || signal.aborted) throw error;
        throw new StepFailure(`${(error as Error).message}; the last attempt failed: ${attempt}`);
      }
      return `${machine.provider_id} (${machine.server_type})`;
    });

    let productId = '';
    await step('product', async () => {
      const product = await api.createProduct({ body: { name: 'smoke', cluster_ids: [clusterId], sources: [{ chart: options.chart, values: {} }] } });
      productId = product.id;
      made.push({
        kind: 'product',
        id: product.id,
        remove: deletion(
          () => api.deleteProduct({ id: product.id }),
          () => api.getProduct({ id: product.id }),
        ),
      });
      return `${product.id} (${options.chart.chart} ${options.chart.target_revision})`;
    });

    let installId = '';
    await step('install', async () => {
      const install = await api.createInstall({ body: { product_id: productId, region_id: options.region } });
      installId = install.id;
      const getInstall = () => api.getInstall({ id: install.id });
      made.push({ kind: 'install', id: install.id, remove: deletion(() => api.deleteInstall({ id: install.id }), getInstall, options.timeouts.install) });
      let status = install.status;
      await until(
        'running',
        options.timeouts.install,
        signal,
        async () => {
          const current = await getInstall();
          status = current.status;
          if (status === 'failed') throw new StepFailure(`the install failed: ${current.status_message ?? 'no message'}`);
          return status === 'running';
        },
        () => `status ${status}`,
      );
      return install.id;
    });

    await step('logs', async () => {
      let lines = 0;
      let ended = false;
      // A pod may start logging a little after the install runs.
      await until(
        'a log line',
        options.timeouts.step,
        signal,
        async () => {
          for await (const event of api.streamInstallLogs(installId, { follow: false, signal })) {
            if (event.type === 'log') lines++;
            else ended = true;
          }
          return lines > 0;
        },
        () => (ended ? 'the stream ended without a line' : 'no end event'),
      );
      return `${lines} lines`;
    });

    await step('uninstall', async () => {
      const index = made.findIndex((m) => m.kind === 'install');
      await made[index]!.remove();
      made.splice(index, 1);
      return undefined;
    });
  } catch (error) {
    if (!(error instanceof FirstFailure)) throw error;
    failed = error;
  }

  const leftovers: string[] = [];
  if (options.keep) {
    progress.line(`kept        ${listed(made)}`);
  } else {
    const started = Date.now();
    progress.begin('cleanup');
    for (const object of made.slice().reverse()) {
      try {
        await object.remove();
        made.splice(made.indexOf(object), 1);
      } catch (error) {
        leftovers.push(`${object.kind} ${object.id}: ${describe(error)}`);
      }
    }
    progress.end(leftovers.length === 0 ? `ok      ${elapsed(started)}  nothing left behind` : `FAILED  ${elapsed(started)}  could not delete:`);
    for (const leftover of leftovers) progress.line(`              ${leftover}`);
  }
  if (failed) progress.line(`smoke: FAILED at step '${failed.step}': ${failed.reason}`);
  else if (leftovers.length > 0) progress.line(`smoke: FAILED at step 'cleanup': ${leftovers.length} left behind`);
  else progress.line('smoke: all steps passed');
  return !failed && leftovers.length === 0;
}

class FirstFailure extends Error {
  readonly step: string;
  readonly reason: string;
  constructor(step: string, reason: string) {
    super(`${step}: ${reason}`);
    this.step = step;
    this.reason = reason;
  }
}

const elapsed = (started: number) => `${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s`;

/** The platform on a scratch database with the simulated cloud at fast timings, and a user made for the run. */
async function startSimulator(): Promise<{ baseUrl: string; token: string; workspaceId: string; stop(): Promise<void> }> {
  // Loaded only here: a run against a deployment needs none of the server's code.
  const [{ createUser, systemClock }, { sql }, { freshDatabase }, { startServerProcess }] = await Promise.all([
    import('@platform/server/testing'),
    import('kysely'),
    import('./fresh-database.ts'),
    import('./server-process.ts'),
  ]);
  const { admin, url, connection } = await freshDatabase('platform_smoke', 'smoke');
  const user = await createUser(connection.db, systemClock, 'smoke@platform.example', 'pro');
  await connection.close();
  const server = await startServerProcess({
    DATABASE_URL: url.toString(),
    PORT: '0',
    LOG_LEVEL: 'warn',
    SIM_CONTROL_PLANE_SECONDS: '1',
    SIM_BOOT_SECONDS: '1',
    SIM_RELEASE_SECONDS: '1',
    SIM_SNAPSHOT_SECONDS: '1',
  });
  return {
    baseUrl: server.base,
    token: user.token,
    workspaceId: user.workspaceId,
    async stop() {
      await server.stop();
      await sql`DROP DATABASE IF EXISTS platform_smoke WITH (FORCE)`.execute(admin.db);
      await admin.close();
    },
  };
}

async function main(): Promise<number> {
  let options: Options | 'help';
  try {
    options = parseOptions(process.argv.slice(2));
    const { PLATFORM_API_URL, PLATFORM_TOKEN } = process.env;
    if ((PLATFORM_API_URL === undefined) !== (PLATFORM_TOKEN === undefined))
      throw new UsageError('set both PLATFORM_API_URL and PLATFORM_TOKEN, or neither (the simulator)');
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`smoke: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  // The first Ctrl-C (or SIGTERM) ends the current step and lets the cleanup run; a second one stops at once.
  const interrupt = new AbortController();
  const onSignal = () => {
    if (interrupt.signal.aborted) {
      progress.line(`smoke: stopped; left behind: ${listed(made)}`);
      process.exit(1);
    }
    progress.line('smoke: interrupted; cleaning up (again to stop at once, leaving what was made)');
    interrupt.abort(new StepFailure('interrupted'));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const deployment = process.env.PLATFORM_API_URL
    ? { baseUrl: process.env.PLATFORM_API_URL, token: process.env.PLATFORM_TOKEN!, workspaceId: process.env.PLATFORM_WORKSPACE_ID, stop: async () => {} }
    : await startSimulator();
  console.log(`smoke: ${deployment.baseUrl}${process.env.PLATFORM_API_URL ? '' : ' (the simulator, started for this run)'}`);
  try {
    const api = createPlatformClient({ baseUrl: deployment.baseUrl, token: deployment.token, workspaceId: deployment.workspaceId });
    return (await runJourney(api, options, interrupt.signal)) ? 0 : 1;
  } finally {
    await deployment.stop();
  }
}

process.exitCode = await main();
