// Starts Stoplight Prism (node_modules/.bin/prism) on the bundled contract, as a mock or as a validating proxy,
// waits until it answers HTTP, and hands back its address and a stop function. Used by `pnpm mock` and by the
// contract tests.
//
// No Prism outlives its owner: `stop()` sends SIGTERM then SIGKILL; an exit handler kills what is still running
// when the owner exits normally; and a preloaded watchdog (exit-with-parent.mjs) makes Prism exit by itself when
// the owner dies without cleaning up (SIGKILL, a killed test worker).
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The bundle `pnpm gen` writes; Prism serves it. */
export const bundledDocument = join(repoRoot, 'packages', 'api-types', 'generated', 'openapi.json');

const prismBin = join(repoRoot, 'node_modules', '.bin', 'prism');
const watchdog = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), 'exit-with-parent.mjs')).href;

export interface PrismOptions {
  /** `mock` answers from the contract's examples; `proxy` forwards to `upstream` and validates both ways. */
  mode: 'mock' | 'proxy';
  /** Port to listen on; a free one is picked when omitted. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Base address of the real server, for `mode: 'proxy'`. */
  upstream?: string;
  /** Prism's `--errors`: answer request (and, when proxying, response) violations with an error response. */
  errors?: boolean;
  /** The document to serve; default the bundle. */
  document?: string;
  /** Prism's `--verboseLevel`; default `info`. */
  verbose?: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
  /**
   * `buffer` (default) keeps Prism's recent output for `output()` and error messages;
   * `inherit` writes it to this process's stdout and stderr (for `pnpm mock`).
   */
  stdio?: 'buffer' | 'inherit';
  /** How long to wait for Prism to answer; default 30 s. */
  startTimeoutMs?: number;
}

export interface PrismServer {
  /** Base address, e.g. `http://127.0.0.1:4010` (no trailing slash). */
  url: string;
  port: number;
  pid: number;
  /** Resolves with Prism's exit code (or signal name) when it exits, for whatever reason. */
  exited: Promise<number | string>;
  /** Prism's recent output (empty with `stdio: 'inherit'`). */
  output(): string;
  /** Stops Prism: SIGTERM, then SIGKILL after `graceMs` (default 3 s). Safe to call more than once. */
  stop(graceMs?: number): Promise<void>;
}

/** Prism could not start (port taken, exited before answering). */
class PrismExitedError extends Error {}

/** Rejects when something already listens on host:port (else the readiness check could hit that instead). */
function assertPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(new PrismExitedError(`Cannot start Prism on ${host}:${port}: ${error.code ?? error.message}`)),
    );
    server.listen(port, host, () => server.close(() => resolve()));
  });
}

/** A TCP port that was free a moment ago on `host`. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of running) signalGroup(child, 'SIGKILL');
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Signals the child's whole process group (the shell shim and Prism's Node). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (!child.pid) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/** True once nothing accepts connections on the address any more. */
async function refusesConnections(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/`, { signal: AbortSignal.timeout(500) });
    await response.body?.cancel();
    return false;
  } catch {
    return true;
  }
}

export async function startPrism(options: PrismOptions): Promise<PrismServer> {
  if (options.mode === 'proxy' && !options.upstream) throw new Error('startPrism: mode "proxy" needs an upstream');
  // A port picked here can be taken by someone else before Prism binds it: try another one then.
  const attempts = options.port === undefined ? 3 : 1;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options, options.port ?? (await freePort(options.host)));
    } catch (error) {
      if (attempt >= attempts || !(error instanceof PrismExitedError && /EADDRINUSE/.test(error.message))) throw error;
    }
  }
}

async function startOnce(options: PrismOptions, port: number): Promise<PrismServer> {
  const host = options.host ?? '127.0.0.1';
  await assertPortFree(host, port);
  const document = options.document ?? bundledDocument;
  const args = options.mode === 'mock' ? ['mock', document] : ['proxy', document, options.upstream as string];
  args.push('--host', host, '--port', String(port), '--verboseLevel', options.verbose ?? 'info');
  if (options.errors) args.push('--errors');

  const inherit = options.stdio === 'inherit';
  const env = {
    ...process.env,
    NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${watchdog}`].filter(Boolean).join(' '),
    PRISM_OWNER_PID: String(process.pid),
    // Prism colours its log; plain text reads better in buffered output and CI logs.
    ...(inherit ? {} : { FORCE_COLOR: '0', NO_COLOR: '1' }),
  };
  // Its own process group, so that (1) a Ctrl-C in a terminal reaches the owner, which then stops Prism in order,
  // and (2) signals reach the whole group: the .bin shim runs Node under a shell (pnpm's `node` shim).
  const child = spawn(prismBin, args, {
    cwd: repoRoot,
    env,
    detached: true,
    stdio: inherit ? ['ignore', 'inherit', 'inherit'] : ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  installExitHook();

  // The last lines of output, for error messages and `output()`.
  const lines: string[] = [];
  let partial = '';
  const collect = (chunk: Buffer) => {
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
    if (lines.length > 400) lines.splice(0, lines.length - 400);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const output = () => [...lines, partial].join('\n').trim();

  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? signal ?? 'unknown');
    });
    child.once('error', (error) => {
      running.delete(child);
      collect(Buffer.from(`${error.message}\n`));
      resolve('spawn-error');
    });
  });
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 3000): Promise<void> => {
    stopping ??= (async () => {
      signalGroup(child, 'SIGTERM');
      const deadline = Date.now() + graceMs;
      await Promise.race([exited, sleep(graceMs)]);
      // The shell may be gone before Prism's Node has closed its port.
      while (Date.now() < deadline && !(await refusesConnections(url))) await sleep(50);
      signalGroup(child, 'SIGKILL');
      await exited;
    })();
    return stopping;
  };

  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  let exitedEarly: number | string | undefined;
  void exited.then((code) => {
    exitedEarly = code;
  });
  while (true) {
    if (exitedEarly !== undefined) {
      await stop();
      throw new PrismExitedError(`Prism exited (${exitedEarly}) before answering on ${url}:\n${output()}`);
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Prism did not answer on ${url} within ${options.startTimeoutMs ?? 30_000} ms:\n${output()}`);
    }
    try {
      // Any HTTP answer means it listens; /v1/regions is an operation of the contract (an unknown path would make
      // Prism log a NO_PATH_MATCHED error at every start), and Prism checks only that a token is sent.
      const response = await fetch(`${url}/v1/regions`, { headers: { authorization: 'Bearer readiness' }, signal: AbortSignal.timeout(1000) });
      await response.body?.cancel();
      break;
    } catch {
      await sleep(100);
    }
  }
  if (!child.pid) throw new Error('Prism has no pid');
  return { url, port, pid: child.pid, exited, output, stop };
}
