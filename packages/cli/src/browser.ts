// Opening a page in the user's browser, as `gh auth login` offers: $BROWSER when set, else the platform's opener.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Io } from './io.ts';

function opener(url: string, env: Io['env']): [string, string[]] {
  if (env.BROWSER) return [env.BROWSER, [url]];
  if (process.platform === 'darwin') return ['open', [url]];
  if (process.platform === 'win32') return ['cmd', ['/c', 'start', '""', url]];
  return ['xdg-open', [url]];
}

/** Opens `url`; resolves with why it could not (no opener installed, say), or undefined. */
export function openBrowser(url: string, env: Io['env']): Promise<string | undefined> {
  const [command, args] = opener(url, env);
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.once('error', (error) => resolve(`${command}: ${error.message}`));
    child.once('spawn', () => {
      child.unref();
      resolve(undefined);
    });
  });
}

/**
 * On a terminal: "Press Enter to open <url> in your browser", and opens it when Enter comes, while the caller goes
 * on (polling for the approval). Returns a function that stops listening; nothing happens without a terminal.
 */
export function offerToOpen(io: Io, url: string, say: (text: string) => void): () => void {
  if (!io.stdin.isTTY || !io.stdout.isTTY) return () => {};
  say(`Press Enter to open ${url} in your browser…`);
  const lines = createInterface({ input: io.stdin });
  lines.once('line', () => {
    lines.close();
    void openBrowser(url, io.env).then((failure) => failure && say(`Could not open a browser (${failure}); open the address yourself.`));
  });
  return () => lines.close();
}
