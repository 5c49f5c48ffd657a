// The server as a separate process (`packages/server/src/main.ts`), for the benchmarks and load scenarios:
// started with the given environment on the machine's defaults, ready once it prints its address (a `--role worker`
// process, which serves nothing: once its workers run).
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './gen.ts';

export interface ServerProcess {
  child: ChildProcess;
  /** e.g. http://127.0.0.1:40123; empty for a worker. */
  base: string;
  /** SIGTERM, then SIGKILL if it has not exited after 15 s. */
  stop(): Promise<void>;
}

const MAIN = 'packages/server/src/main.ts';

/**
 * The Node flags `pnpm start` gives the server (package.json), so what is measured is what users start. A module
 * it preloads (`--import ./…`, relative to the repository) is named by its file URL, whatever the caller's folder.
 */
export function serverNodeFlags(): string[] {
  const start = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  // `exec <node> <flags…> <main>`: the flags between the Node binary and the entry.
  const words = start.split(/\s+/);
  return words.slice(words[0] === 'exec' ? 2 : 1, words.indexOf(MAIN)).map((word) => (word.startsWith('./') ? pathToFileURL(join(repoRoot, word)).href : word));
}

export async function startServerProcess(env: Record<string, string>, args: string[] = []): Promise<ServerProcess> {
  const inherited = { ...process.env };
  delete inherited.LOG_POLL_MS; // the server's default unless the caller sets it
  // BENCH_SERVER_NODE_FLAGS: more flags for the server alone, e.g. `--cpu-prof --cpu-prof-dir=DIR` to profile it.
  const extra = process.env.BENCH_SERVER_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...serverNodeFlags(), ...extra, join(repoRoot, MAIN), ...args], {
    // Metrics recorded as `pnpm start` records them, on any free port: several servers of one run never meet on 9464.
    env: { ...inherited, METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const worker = args.join(' ').includes('--role worker');
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = worker ? /workflow worker running()/.exec(out) : /listening on (http:\/\/[^\s]+)/.exec(out);
      if (!match) return;
      // Later output (a log line per request at info) is read and dropped, not kept.
      child.stdout!.off('data', onData);
      resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}: ${out}`)));
  });
  child.stdout!.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    base,
    async stop() {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
