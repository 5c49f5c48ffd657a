// `pnpm bench`: runs every benchmark of the project (tooling, server against its raw node:http + pg baseline,
// workflows and log fan-out), prints the figures, and writes a dated Markdown report with the machine and
// every figure against its target, plus a chart of the margins (bench/results/latest.svg).
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { connect } from '../../packages/server/src/db/connect.ts';
import { benchTooling } from '../bench-tooling.ts';
import { repoRoot } from '../gen.ts';
import { benchServer } from './server.ts';
import { benchWorkflows } from './workflows.ts';

interface Check {
  name: string;
  value: number;
  unit: string;
  /** The figure passes when at most (`max`) or at least (`min`) the target. */
  target: { max: number } | { min: number };
  baseline: string;
}

/** How far inside its target a figure is: 1 is on the target, 2 is twice as good, 0.5 half as good. */
const margin = (check: Check) => ('max' in check.target ? check.target.max / check.value : check.value / check.target.min);
const passes = (check: Check) => margin(check) >= 1;
const round = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));

async function machine(): Promise<Record<string, string>> {
  const admin = await connect(process.env.DATABASE_URL, join(repoRoot, '.data', 'bench'));
  try {
    const { rows } = await sql<{ version: string }>`SELECT version()`.execute(admin.db);
    const pnpm = execFileSync('pnpm', ['--version'], { encoding: 'utf8' }).trim();
    return {
      CPU: `${os.cpus()[0]?.model ?? 'unknown'} × ${os.cpus().length}`,
      Memory: `${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB`,
      OS: `${os.type()} ${os.release()}`,
      Node: process.version,
      pnpm,
      PostgreSQL: rows[0]!.version.split(' on ')[0]!,
    };
  } finally {
    await admin.close();
  }
}

function chart(checks: Check[]): string {
  const width = 760;
  const row = 28;
  const left = 300;
  const scale = (width - left - 60) / 4; // margins from 0 to 4 (capped)
  const height = 40 + checks.length * row;
  const bars = checks
    .map((check, i) => {
      const y = 30 + i * row;
      const m = Math.min(margin(check), 4);
      const color = passes(check) ? '#2e7d32' : '#c62828';
      return [
        `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${check.name.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</text>`,
        `<rect x="${left}" y="${y + 3}" width="${(m * scale).toFixed(1)}" height="16" fill="${color}"/>`,
        `<text x="${left + m * scale + 6}" y="${y + 15}">${margin(check).toFixed(2)}×</text>`,
      ].join('');
    })
    .join('\n  ');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
  <text x="${left}" y="18" font-weight="bold">Margin against target (1× = on target; longer is better)</text>
  <line x1="${left + scale}" y1="24" x2="${left + scale}" y2="${height - 8}" stroke="#555" stroke-dasharray="4 3"/>
  ${bars}
</svg>
`;
}

const tooling = benchTooling();
console.log(`tooling: pnpm gen ${(tooling.gen / 1000).toFixed(2)} s, pnpm lint:api ${(tooling.lint / 1000).toFixed(2)} s`);
const server = await benchServer();
console.log('server:', server);
const workflows = await benchWorkflows();
console.log('workflows:', workflows);

const checks: Check[] = [
  { name: 'pnpm gen (median)', value: tooling.gen / 1000, unit: 's', target: { max: 5 }, baseline: 'target 5 s' },
  { name: 'pnpm lint:api (median)', value: tooling.lint / 1000, unit: 's', target: { max: 2 }, baseline: 'target 2 s' },
  { name: 'GET /v1/clusters throughput vs baseline', value: server.throughput_ratio!, unit: '×', target: { min: 0.8 }, baseline: `raw node:http + pg: ${round(server.baseline_rps!)} req/s; server ${round(server.server_rps!)} req/s` },
  { name: 'GET /v1/clusters p99 vs baseline', value: server.p99_ratio!, unit: '×', target: { max: 2 }, baseline: `baseline p99 ${server.baseline_p99_ms} ms; server p99 ${server.server_p99_ms} ms` },
  { name: 'server peak RSS under load', value: server.server_peak_rss_mb!, unit: 'MB', target: { max: 200 }, baseline: 'target 200 MB' },
  { name: 'page at offset ~90,000 vs first page', value: server.deep_vs_first_ratio!, unit: '×', target: { max: 1.5 }, baseline: `first page p50 ${server.first_page_p50_ms} ms; deep page p50 ${server.deep_page_p50_ms} ms` },
  { name: 'log line delay p99, 1,000 followers', value: workflows.log_delay_p99_ms!, unit: 'ms', target: { max: 100 }, baseline: `p50 ${workflows.log_delay_p50_ms} ms, ${workflows.log_lines_delivered} lines` },
  { name: 'server memory per log stream', value: workflows.memory_per_stream_kb!, unit: 'KB', target: { max: 50 }, baseline: 'target 50 KB' },
];
const info = [
  ['createInstall, 32 connections', `${round(workflows.create_install_rps!)} req/s, p50 ${workflows.create_install_p50_ms} ms, p99 ${workflows.create_install_p99_ms} ms`],
  ['GET /v1/regions on the same server (baseline)', `${round(workflows.regions_rps!)} req/s, p50 ${workflows.regions_p50_ms} ms, p99 ${workflows.regions_p99_ms} ms (createInstall at ${round(workflows.create_vs_get_throughput_ratio!)}× its throughput)`],
  ['installs completed end to end', `${round(workflows.installs_per_second!)} installs/s (zero-latency simulated cloud)`],
  ['failed requests in all loads', String(server.failed_requests! + workflows.failed_requests!)],
];

const date = new Date().toISOString().slice(0, 10);
const dir = join(repoRoot, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const facts = await machine();
const report = `# Benchmarks, ${date}

Made by \`pnpm bench\` (scripts/bench/report.ts). Every figure is measured in the same run as its baseline, on
the same machine and PostgreSQL.

## Machine

${Object.entries(facts).map(([k, v]) => `- ${k}: ${v}`).join('\n')}

## Against targets

| Figure | Value | Target | Baseline and detail | |
| --- | --- | --- | --- | --- |
${checks.map((c) => `| ${c.name} | ${round(c.value)} ${c.unit} | ${'max' in c.target ? `≤ ${c.target.max}` : `≥ ${c.target.min}`} ${c.unit} | ${c.baseline} | ${passes(c) ? 'pass' : '**miss**'} |`).join('\n')}

![Margins against targets](latest.svg)

## Other figures

${info.map(([k, v]) => `- ${k}: ${v}`).join('\n')}

## How

- Tooling: median of 5 runs of \`pnpm gen\` and \`pnpm lint:api\`.
- Server: GET /v1/clusters?limit=50 with a PAT and X-Workspace-Id on a workspace of 100,000 clusters, autocannon
  at 32 connections, against a raw node:http + pg server doing the same SQL work (token look-up, membership, the
  page); the deep page is the keyset page at offset ~90,000.
- Workflows: \`pnpm start\` (API and workers in one process) with the simulated cloud at zero latency; the log
  followers are 1,000 plain HTTP connections to one running install's stream, the delay is from each line's
  timestamp to its arrival, and memory is the server's RSS with the streams open minus before, per stream.
`;
writeFileSync(join(dir, `${date}.md`), report);
writeFileSync(join(dir, 'latest.svg'), chart(checks));
console.log(`\nwrote bench/results/${date}.md and bench/results/latest.svg`);
for (const c of checks) console.log(`${passes(c) ? 'pass' : 'MISS'}  ${c.name}: ${round(c.value)} ${c.unit}`);
