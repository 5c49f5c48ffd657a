// `pnpm start` runs the server as pnpm → sh → node's shim script → node. A supervisor (or CI) that stops it sends
// SIGTERM to pnpm's process alone, and pnpm passes it to nobody: pnpm and its shell die, and the server would live
// on as an orphan, still answering and holding its port and its database. So the server watches the processes
// that launched it, and once one of them is gone it stops as if it had been signalled.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

/** The parent of a process, from Linux's /proc; undefined where there is no /proc or no such process. */
function parentOf(pid: number): number | undefined {
  try {
    // Field 4 of /proc/<pid>/stat, after the command name in parentheses (which may itself hold spaces).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

function commandOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

/** Whether the process runs the package manager that started this script (its `npm_execpath`, or pnpm/npm itself). */
function isPackageManager(pid: number): boolean {
  const execPath = process.env.npm_execpath;
  return commandOf(pid).some((arg) => (execPath && arg === execPath) || ['pnpm', 'npm', 'pnpm.cjs', 'npm-cli.js'].includes(basename(arg)));
}

/**
 * The processes between this one and the package manager that launched it, that one included; none when the
 * server was not started by a package manager (`node main.ts` under a supervisor, or `nohup`: then its parent
 * may come and go, and only signals stop it).
 */
export function launchers(): number[] {
  const chain: number[] = [];
  if (!process.env.npm_lifecycle_event) return chain;
  for (let pid = parentOf(process.pid); pid && pid > 1 && chain.length < 8; pid = parentOf(pid)) {
    chain.push(pid);
    if (isPackageManager(pid)) return chain;
  }
  return [];
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Calls `gone` once, when one of the launchers has exited; returns a function that stops watching. */
export function watchLaunchers(gone: () => void, intervalMs = 1000): () => void {
  const watched = launchers();
  if (watched.length === 0) return () => {};
  const timer = setInterval(() => {
    if (!watched.every(alive)) {
      clearInterval(timer);
      gone();
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
