// What `pnpm start` tells the person who runs it: where the logs go (readable lines on a terminal, JSON
// lines otherwise), what the first start is doing while it takes seconds, and the demo credentials last.
import pino from 'pino';
import pretty from 'pino-pretty';
import { DEMO_EMAIL } from './db/seed.ts';

/** Log lines to stdout: pino-pretty on a terminal, JSON for anything that collects them. */
export function logDestination(): pino.DestinationStream {
  if (process.stdout.isTTY) return pretty({ destination: 1, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  // Asynchronous writes: lines written while one write is in flight go out together in the next, so an
  // access line per request does not cost a system call per request (pino flushes what is left on exit).
  return pino.destination({ dest: 1, sync: false });
}

/** One line about a step that takes a moment (creating, starting, migrating, seeding the database). */
export function progress(line: string): void {
  console.log(line);
}

/** The demo user's credentials in a box, printed after the listen line so it is the last thing on screen. */
export function demoBox(url: string, token: string | undefined): string {
  const lines = token
    ? [
        `Demo user created: ${DEMO_EMAIL}`,
        `Token: ${token}`,
        `Try: curl -H 'Authorization: Bearer ${token}' ${url}/v1/clusters`,
        'A new demo token later: pnpm admin demo-token',
      ]
    : ['Demo token: pnpm admin demo-token (tokens are stored hashed; this prints a new one)'];
  const width = Math.max(...lines.map((line) => line.length));
  return [`┌${'─'.repeat(width + 2)}┐`, ...lines.map((line) => `│ ${line.padEnd(width)} │`), `└${'─'.repeat(width + 2)}┘`].join('\n');
}
