// A real PgBouncer (Debian's `pgbouncer` package) in transaction mode, in front of the test PostgreSQL: a config in a
// temporary folder, trust authentication from 127.0.0.1 (it logs in to PostgreSQL with the URL's user and password),
// a free port. Transaction mode is what managed PostgreSQL and most Kubernetes installs put in front of a database:
// each transaction may run on another server connection, so what a session keeps (named prepared statements,
// session advisory locks, LISTEN, SET) does not last.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from '../global-setup.ts';

export interface PgBouncer {
  /** The URL of `database` through the pooler (the server URL's user). */
  url(database: string): string;
  /** What it logged (connections, errors), for a failing test's message. */
  log(): string;
  stop(): Promise<void>;
}

/** PGBOUNCER, else Debian's /usr/sbin/pgbouncer, else `pgbouncer` on PATH; a clear error when there is none. */
export function pgbouncerBinary(): string {
  const executable = (path: string) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  const named = process.env.PGBOUNCER;
  if (named) {
    if (executable(named)) return named;
    throw new Error(`PGBOUNCER names ${named}, which is not an executable: point it at pgbouncer, or unset it to use Debian's /usr/sbin/pgbouncer`);
  }
  const found = ['/usr/sbin/pgbouncer', ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'pgbouncer'))].find(executable);
  if (found) return found;
  throw new Error(
    'pgbouncer is not installed (looked for /usr/sbin/pgbouncer and pgbouncer on PATH): these tests run the server through a real PgBouncer in transaction mode. Install it (apt-get install pgbouncer) or set PGBOUNCER to its path.',
  );
}

const listening = async (port: number, ms: number): Promise<void> => {
  const deadline = Date.now() + ms;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on 127.0.0.1:${port} within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

/**
 * Starts a PgBouncer in transaction mode before the PostgreSQL of `serverUrl` (every database of it), with
 * `poolSize` server connections per database: few, so that the transactions of many clients share them.
 */
export async function startPgBouncer(serverUrl: string, { poolSize = 8 }: { poolSize?: number } = {}): Promise<PgBouncer> {
  const binary = pgbouncerBinary();
  // PgBouncer 1.21 learned to keep a client's named prepared statements (max_prepared_statements; on by default in
  // later versions); off here, so every version pools as Debian 12's 1.18 does, the case the server must handle.
  const [major = 0, minor = 0] = (/PgBouncer (\d+)\.(\d+)/.exec(execFileSync(binary, ['--version'], { encoding: 'utf8' }))?.slice(1) ?? []).map(Number);
  const keepsPrepared = major > 1 || (major === 1 && minor >= 21);
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const password = decodeURIComponent(server.password);
  const dir = await mkdtemp(join(tmpdir(), 'platform-pgbouncer-'));
  // As root, pgbouncer refuses to run unless told to switch to another user, which must read its files.
  await chmod(dir, 0o755);
  const port = await freePort();
  const quote = (value: string) => `'${value.replace(/'/g, "''")}'`;
  await writeFile(join(dir, 'users.txt'), `"${user}" ""\n`, { mode: 0o644 });
  await writeFile(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432} user=${user}${password ? ` password=${quote(password)}` : ''}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      ...(keepsPrepared ? ['max_prepared_statements = 0'] : []),
      'max_client_conn = 1000',
      // A test database is dropped WITH (FORCE) while its pool may still hold server connections: reconnect quickly.
      'server_login_retry = 1',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0 ? ['-u', 'nobody'] : [];
  let log = '';
  const child: ChildProcess = spawn(binary, [...asRoot, join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await Promise.race([
      listening(port, 10_000),
      exited.then(() => {
        throw new Error(`pgbouncer exited at start: ${log.trim().split('\n').at(-1)}`);
      }),
    ]);
  } catch (error) {
    child.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url(database) {
      const url = new URL(serverUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      url.password = '';
      url.pathname = `/${database}`;
      return url.toString();
    },
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
