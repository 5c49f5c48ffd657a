// `pnpm bench`: runs every benchmark of the project (tooling; the server against its raw node:http + pg
// baseline, deep page against first page; workflows: createInstall against a cheap GET, installs end to end,
// log fan-out; webhooks: delivery latency and the fan-out's cost on createInstall), prints the figures, and writes
// under bench/results/:
//   <date>.md    the machine and every figure against its baseline and target,
//   <date>.json  every figure as the benchmarks returned it (for scripts and later comparisons),
//   latest.svg   a chart of each targeted figure's margin against its target.
// BENCH_DURATION (default 10) sets the seconds of each load; the whole run takes about 6.5 minutes here.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { connect, loadConfig } from '@platform/server/testing';
import { sql } from 'kysely';
import { benchTooling } from '../bench-tooling.ts';
import { repoRoot } from '../gen.ts';
import { benchServer, SERVER_TARGETS } from './server.ts';
import { benchWebhooks, defaultWebhooksOptions, WEBHOOK_TARGETS } from './webhooks.ts';
import { benchWorkflows, defaultWorkflowsOptions, type FanOut } from './workflows.ts';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);

export interface Check {
  name: string;
  value: number;
  unit: string;
  /** The figure passes when at most (`max`) or at least (`min`) the target. */
  target: { max: number } | { min: number };
  /** The baseline or detail it is read against. */
  baseline: string;
}

/** How far inside its target a figure is: 1 is on the target, 2 is twice as good, 0.5 half as good. */
export const margin = (check: Check) => ('max' in check.target ? check.target.max / check.value : check.value / check.target.min);
const passes = (check: Check) => margin(check) >= 1;
const round = (n: number) => (!Number.isFinite(n) ? String(n) : Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));
const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

async function machine(): Promise<Record<string, string>> {
  const admin = await connect({ url: process.env.DATABASE_URL }, join(repoRoot, '.data', 'bench'));
  try {
    const { rows } = await sql<{ version: string }>`SELECT version()`.execute(admin.db);
    const pnpm = execFileSync('pnpm', ['--version'], { encoding: 'utf8' }).trim();
    const cpus = os.cpus();
    return {
      CPU: `${cpus[0]?.model ?? 'unknown'}, ${cpus.length} cores`,
      Memory: `${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB`,
      OS: `${os.type()} ${os.release()} (${os.arch()})`,
      Node: process.version,
      pnpm,
      PostgreSQL: `${rows[0]!.version.split(' on ')[0]!} (server, client and load generator on the same machine)`,
    };
  } finally {
    await admin.close();
  }
}

/** Bars of each figure's margin against its target (log scale, 1× on the dashed line), drawn by hand. */
export function chart(checks: Check[], title: string): string {
  const width = 860;
  const row = 30;
  const left = 330;
  const right = 150;
  const span = width - left - right;
  // log2 of the margin from 1/8 to 8: the target sits in the middle.
  const x = (m: number) => left + ((Math.max(-3, Math.min(3, Math.log2(m))) + 3) / 6) * span;
  const height = 70 + checks.length * row;
  const bars = checks
    .map((check, i) => {
      const y = 44 + i * row;
      const m = margin(check);
      const color = passes(check) ? '#2e7d32' : '#c62828';
      const [from, to] = m >= 1 ? [x(1), x(m)] : [x(m), x(1)];
      const target = 'max' in check.target ? `≤ ${check.target.max}` : `≥ ${check.target.min}`;
      return [
        `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${escape(check.name)}</text>`,
        `<rect x="${from.toFixed(1)}" y="${y + 4}" width="${Math.max(1, to - from).toFixed(1)}" height="16" fill="${color}"/>`,
        `<text x="${width - right + 8}" y="${y + 15}">${escape(`${round(check.value)} ${check.unit} (${target})`)}</text>`,
      ].join('');
    })
    .join('\n  ');
  const ticks = [1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8]
    .map((m) => `<text x="${x(m).toFixed(1)}" y="${height - 10}" text-anchor="middle" fill="#555">${m >= 1 ? `${m}×` : `1/${1 / m}×`}</text>`)
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
  <rect width="100%" height="100%" fill="#fff"/>
  <text x="${left}" y="18" font-weight="bold">${escape(title)}</text>
  <text x="${left}" y="34" fill="#555">margin against target, log scale: right of the line meets it (green), left misses it (red)</text>
  <line x1="${x(1)}" y1="40" x2="${x(1)}" y2="${height - 24}" stroke="#555" stroke-dasharray="4 3"/>
  ${bars}
  ${ticks}
</svg>
`;
}

const fanOutLine = (f: FanOut) =>
  `${f.followers} followers, ${f.containers} container(s) (${2 * f.containers} lines/s), LOG_POLL_MS=${f.pollMs}: delay p50 ${f.delay_p50_ms} ms, p99 ${f.delay_p99_ms} ms, max ${f.delay_max_ms} ms over ${f.lines_delivered} live lines; ` +
  `one follower alone p50 ${f.single_delay_p50_ms} ms, p99 ${f.single_delay_p99_ms} ms (p99 ratio ${round(f.delay_p99_ms / f.single_delay_p99_ms)}×); ` +
  `server RSS ${round(f.rss_before_kb / 1024)} → ${round(f.rss_with_streams_kb / 1024)} MB (${round(f.memory_per_stream_kb)} KB per stream), server CPU ${round(f.server_cpu_cores)} cores, ` +
  `connected in ${round(f.connect_s)} s (${f.failed_connections} failed); benchmark client's event-loop delay p99 ${round(f.client_loop_p99_ms)} ms; ` +
  `${f.replayed_lines} lines older than the tail=1 backlog sent after it (to the single follower: ${f.single_replayed_lines})`;

const startedAt = new Date();
const loadAtStart = os.loadavg();
const tooling = benchTooling();
console.log(`tooling: pnpm gen ${(tooling.gen / 1000).toFixed(2)} s, pnpm lint:api ${(tooling.lint / 1000).toFixed(2)} s`);
const server = await benchServer(DURATION);
console.log('server:', server);
const workflows = await benchWorkflows({ ...defaultWorkflowsOptions(), duration: DURATION });
console.log('workflows:', workflows);
const webhooks = await benchWebhooks({ ...defaultWebhooksOptions(), duration: DURATION });
console.log('webhooks:', webhooks);
const logs = workflows.logs;

const checks: Check[] = [
  { name: 'pnpm gen (median of 5)', value: tooling.gen / 1000, unit: 's', target: { max: 5 }, baseline: 'target 5 s' },
  { name: 'pnpm lint:api (median of 5)', value: tooling.lint / 1000, unit: 's', target: { max: 2 }, baseline: 'target 2 s' },
  {
    name: 'GET /v1/clusters throughput ÷ baseline',
    value: server.throughput_ratio!,
    unit: '×',
    target: { min: SERVER_TARGETS.throughput_ratio },
    baseline: `raw node:http + pg ${round(server.baseline_rps!)} req/s; server ${round(server.server_rps!)} req/s`,
  },
  {
    name: 'GET /v1/clusters p99 ÷ baseline',
    value: server.p99_ratio!,
    unit: '×',
    target: { max: SERVER_TARGETS.p99_ratio },
    baseline: `raw node:http + pg p99 ${server.baseline_p99_ms} ms (p50 ${server.baseline_p50_ms}); server p99 ${server.server_p99_ms} ms (p50 ${server.server_p50_ms})`,
  },
  {
    name: 'server peak RSS under that load',
    value: server.server_peak_rss_mb!,
    unit: 'MB',
    target: { max: SERVER_TARGETS.server_peak_rss_mb },
    baseline: `target ${SERVER_TARGETS.server_peak_rss_mb} MB`,
  },
  {
    name: 'page at offset ~18,000 ÷ first page',
    value: server.deep_vs_first_ratio!,
    unit: '×',
    target: { max: 1.5 },
    baseline: `first page p50 ${server.first_page_p50_ms} ms; deep page p50 ${server.deep_page_p50_ms} ms (throughput ratio first/deep)`,
  },
  {
    name: `log delay p99, ${logs.followers} followers`,
    value: logs.delay_p99_ms,
    unit: 'ms',
    target: { max: 100 },
    baseline: `one follower alone p99 ${logs.single_delay_p99_ms} ms (${round(logs.delay_p99_ms / logs.single_delay_p99_ms)}×); p50 ${logs.delay_p50_ms} ms; LOG_POLL_MS=${logs.pollMs} (default)`,
  },
  {
    name: 'server memory per log stream',
    value: logs.memory_per_stream_kb,
    unit: 'KB',
    target: { max: 50 },
    baseline: `RSS ${round(logs.rss_before_kb / 1024)} MB before, ${round(logs.rss_with_streams_kb / 1024)} MB with ${logs.followers} streams`,
  },
  {
    name: 'webhook deliveries a second',
    value: webhooks.throughput.per_second,
    unit: '/s',
    target: { min: WEBHOOK_TARGETS.deliveries_per_second },
    baseline: `raw signed POSTs to the receiver ${webhooks.raw_per_second}/s (${round(webhooks.throughput_ratio)}×)`,
  },
  {
    name: 'webhook commit → received p99 at that rate',
    value: webhooks.throughput.p99_ms,
    unit: 'ms',
    target: { max: WEBHOOK_TARGETS.latency_p99_ms },
    baseline: `p50 ${webhooks.throughput.p50_ms} ms; ${webhooks.throughput.missing} missing, ${webhooks.throughput.duplicated} duplicated`,
  },
  {
    name: `webhook p99 of a healthy workspace while ${webhooks.fairness.hanging_endpoints} endpoints of others hang`,
    value: webhooks.fairness.p99_ms,
    unit: 'ms',
    target: { max: WEBHOOK_TARGETS.fair_latency_p99_ms },
    baseline: `without them ${webhooks.throughput.p99_ms} ms (${round(webhooks.fair_p99_ratio)}×); ${webhooks.fairness.waiting_deliveries} deliveries waiting, server peak RSS ${webhooks.fairness.server_peak_rss_mb} MB against ${webhooks.throughput.server_peak_rss_mb} MB`,
  },
  {
    name: 'createInstall with 10 webhook endpoints ÷ none',
    value: webhooks.fan_out_throughput_ratio,
    unit: '×',
    target: { min: WEBHOOK_TARGETS.fan_out_throughput_ratio },
    baseline: `median of ${webhooks.fan_out_pair_ratios.length} alternated pairs (${webhooks.fan_out_pair_ratios.map(round).join(' / ')}); means ${round(webhooks.create_install_with_endpoints_rps)} against ${round(webhooks.create_install_rps)} req/s; p99 ${round(webhooks.fan_out_p99_ratio)}×`,
  },
];
const ratios: [string, string, string][] = [
  [
    'GET /v1/clusters?limit=50 throughput, 32 connections',
    `${round(server.server_rps!)} req/s`,
    `raw node:http + pg ${round(server.baseline_rps!)} req/s → ${round(server.throughput_ratio!)}×`,
  ],
  [
    'GET /v1/clusters?limit=50 p50 / p99',
    `${server.server_p50_ms} / ${server.server_p99_ms} ms`,
    `${server.baseline_p50_ms} / ${server.baseline_p99_ms} ms → p99 ${round(server.p99_ratio!)}×`,
  ],
  [
    'createInstall (POST /v1/installs) throughput, 32 connections',
    `${round(workflows.create_install_rps)} req/s`,
    `GET /v1/regions ${round(workflows.regions_rps)} req/s → ${round(workflows.create_vs_get_throughput_ratio)}×`,
  ],
  [
    'createInstall p50',
    `${workflows.create_install_p50_ms} ms`,
    `GET /v1/regions ${workflows.regions_p50_ms} ms → ${round(workflows.create_vs_get_p50_ratio)}×`,
  ],
  [
    'createInstall p99',
    `${workflows.create_install_p99_ms} ms`,
    `GET /v1/regions ${workflows.regions_p99_ms} ms → ${round(workflows.create_vs_get_p99_ratio)}×`,
  ],
  [
    'GET /v1/regions with the API rate limit counting every request (one token)',
    `${round(workflows.regions_limited_rps)} req/s, p50 ${workflows.regions_limited_p50_ms} ms, p99 ${workflows.regions_limited_p99_ms} ms`,
    `rate limit off ${round(workflows.regions_rps)} req/s, p50 ${workflows.regions_p50_ms} ms → ${round(workflows.rate_limit_throughput_ratio)}×`,
  ],
  [
    'installs completed end to end',
    `${round(workflows.installs_per_second)} installs/s`,
    `${workflows.options.installs} started by 32 clients in ${round(workflows.installs_create_s)} s, all running after ${round(workflows.installs_total_s)} s (${workflows.installs_failed} failed); no baseline`,
  ],
  [
    `log delay p99, ${logs.followers} followers (LOG_POLL_MS=${logs.pollMs})`,
    `${logs.delay_p99_ms} ms`,
    `one follower ${logs.single_delay_p99_ms} ms → ${round(logs.delay_p99_ms / logs.single_delay_p99_ms)}×`,
  ],
  ...[workflows.logs_multi, workflows.logs_alt]
    .filter((f) => f !== undefined)
    .map((f): [string, string, string] => [
      `log delay p99, ${f.followers} followers, ${f.containers} container(s) (LOG_POLL_MS=${f.pollMs})`,
      `${f.delay_p99_ms} ms`,
      `one follower ${f.single_delay_p99_ms} ms → ${round(f.delay_p99_ms / f.single_delay_p99_ms)}×`,
    ]),
];
const failedRequests = server.failed_requests! + workflows.failed_requests + webhooks.failed_requests;
const fanOuts = [workflows.logs, workflows.logs_multi, workflows.logs_alt].filter((f) => f !== undefined);
const replayed = fanOuts.reduce((sum, f) => sum + f.replayed_lines + f.single_replayed_lines, 0);

const date = startedAt.toISOString().slice(0, 10);
const dir = join(repoRoot, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const facts = await machine();
// Others may share the machine: the load before and after the run says whether they did.
facts['Load average (1 min) before / after the run'] = `${loadAtStart[0]!.toFixed(2)} / ${os.loadavg()[0]!.toFixed(2)}`;
const o = workflows.options;
const report = `# Benchmarks, ${date}

Made by \`pnpm bench\` (scripts/bench/report.ts), started ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC,
${DURATION} s per load. Every figure is measured in the same run as its baseline, on the same machine and
PostgreSQL. Raw figures: [${date}.json](${date}.json).

## Machine

${Object.entries(facts)
  .map(([k, v]) => `- ${k}: ${v}`)
  .join('\n')}

## Against targets

| Figure | Value | Target | Baseline and detail | |
| --- | --- | --- | --- | --- |
${checks.map((c) => `| ${c.name} | ${round(c.value)} ${c.unit} | ${'max' in c.target ? `≤ ${c.target.max}` : `≥ ${c.target.min}`} ${c.unit} | ${c.baseline} | ${passes(c) ? 'pass' : '**miss**'} |`).join('\n')}

![Margins against targets](latest.svg)

## Figures against their baselines

| Figure | Value | Baseline → ratio |
| --- | --- | --- |
${ratios.map(([name, value, baseline]) => `| ${name} | ${value} | ${baseline} |`).join('\n')}

Failed requests (non-2xx or errors) in all autocannon loads: ${failedRequests}.

## Log fan-out in detail

Each container of a simulated install prints 2 lines a second. The first two scenarios run on the \`--role all\`
process, the third on a \`--role api\` process of its own.

${fanOuts.map((f) => `- ${fanOutLine(f)}`).join('\n')}
${
  replayed > 0
    ? `
**A stream bug this run saw:** followers that asked for \`tail=1\` of an install with several containers received,
after the backlog, lines older than it (${replayed} in all): the backlog gives a position only to the containers
whose lines made the tail, so at the first update the others are read from the cluster from their first line
(services/logs.ts). Those lines are left out of the delays above (only lines produced during the window count).
`
    : ''
}
## How

- Tooling: median of 5 runs of \`pnpm gen\` and \`pnpm lint:api\` (scripts/bench-tooling.ts).
- Server (scripts/bench/server.ts): GET /v1/clusters?limit=50 with a PAT and X-Workspace-Id on a workspace of
  20,000 clusters, once the server is quiet, autocannon at 32 connections in 3 alternating pairs of ${DURATION} s
  after a 3 s warm-up (medians), against a raw node:http + pg server doing the same checks and SQL with prepared
  statements (the token with its membership and workspace, scope, restriction, the keyset page;
  scripts/bench/baseline-server.ts); the API rate limit is off (the baseline has none). The server runs with the Node flags of \`pnpm start\` (V8 heap
  flags, see the README), the baseline with Node's defaults. The deep page is the keyset page at offset ~18,000, 5 s each.
- Workflows (scripts/bench/workflows.ts), on a database created for the run and dropped after it, the server as its
  own process (\`packages/server/src/main.ts\`, with the Node flags of \`pnpm start\`) with the simulated cloud at zero latency, zero failures and zero
  boot, control-plane, release and snapshot time, the provider rate limit lifted (10,000 calls/s) and the API rate
  limit off:
  - installs end to end: ${o.installs} POST /v1/installs by 32 concurrent clients to one \`--role all\` process (API and
    ${loadConfig({}).workerConcurrency} workflows at once), timed from the first request until every install is \`running\`;
  - log fan-out, on that process with its default LOG_POLL_MS (an install of the seeded one-source product, then
    one of a ${o.logSources}-source product), then on a second \`--role api\` process at LOG_POLL_MS=${o.altPollMs}
    (the one-source install): one follower alone for ${DURATION} s (the baseline), then ${o.followers} followers, each a raw
    node:http connection (GET /v1/installs/{id}/logs?tail=1, Accept: text/event-stream, following) parsing the
    events itself; the delay is the system clock at arrival minus the line's \`timestamp\`, for lines produced while
    every follower was connected; memory is the server's RSS (from /proc) with the streams open (median of samples
    every 0.5 s) minus before, divided by the followers. The load generator shares the 2 cores with the server and
    PostgreSQL: its own event-loop delay is reported, as it adds to the measured delay;
  - createInstall: autocannon at 32 connections for ${DURATION} s (after 2 s warm-ups) on a \`--role api\` process, POST
    /v1/installs without an idempotency key, against GET /v1/regions on the same process as the baseline (an
    authenticated read and nothing else). The workflows it starts wait in the queue, so the load measures the API.
    The API rate limit is off for those loads; the same GET is then measured on a process with it on
    (RATE_LIMIT_PER_MINUTE=1,000,000, so every request is counted and none refused).
`;
writeFileSync(join(dir, `${date}.md`), report);
writeFileSync(
  join(dir, `${date}.json`),
  `${JSON.stringify({ date: startedAt.toISOString(), duration_s: DURATION, machine: facts, tooling_ms: tooling, server, workflows, webhooks }, null, 2)}\n`,
);
writeFileSync(join(dir, 'latest.svg'), chart(checks, `pnpm bench, ${date} (${facts.CPU})`));
console.log(`\nwrote bench/results/${date}.md, ${date}.json and latest.svg`);
for (const c of checks) console.log(`${passes(c) ? 'pass' : 'MISS'}  ${c.name}: ${round(c.value)} ${c.unit}`);
