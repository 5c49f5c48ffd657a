// What `pnpm start` tells the person who runs it, and what it tells a program that collects its output. On a
// terminal: readable log lines, a line for each step that takes seconds (creating, starting, migrating, seeding the
// database), the listen line, and the demo credentials in a box last. Otherwise (piped, redirected, a container's
// log) every line is a JSON log line, and the demo token is not among them: logs are kept and shipped, and the
// token would be a credential in them; `pnpm admin demo-token` prints one.
import pino from 'pino';
import pretty from 'pino-pretty';
import { DEMO_EMAIL } from './db/seed.ts';

const terminal = () => process.stdout.isTTY === true;

/** Log lines to stdout: pino-pretty on a terminal, JSON for anything that collects them. */
export function logDestination(): pino.DestinationStream {
  if (terminal()) return pretty({ destination: 1, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  // Asynchronous writes: lines written while one write is in flight go out together in the next, so an
  // access line per request does not cost a system call per request (pino flushes what is left on exit).
  return pino.destination({ dest: 1, sync: false });
}

export interface StartUpVoice {
  /** A step that takes a moment. */
  progress(line: string): void;
  workersRunning(concurrency: number): void;
  listening(url: string): void;
  /** Where GET /metrics is served (a port of its own). */
  metrics(url: string): void;
  /** The demo user the first start of an empty database created (its token), or a pointer to a new token. */
  demo(url: string, token: string | undefined): void;
}

export function startUpVoice(logger: pino.Logger): StartUpVoice {
  if (!terminal()) {
    // Said whatever LOG_LEVEL is, as on a terminal: whoever started the process learns where it listens.
    const said = logger.child({}, { level: 'info' });
    return {
      progress: (line) => said.info(line),
      workersRunning: (concurrency) => said.info({ concurrency }, 'workflow worker running'),
      listening: (url) => said.info({ url, docs: `${url}/docs` }, listenLine(url)),
      metrics: (url) => said.info({ metrics: url }, metricsLine(url)),
      demo: (_url, token) =>
        said.info(
          { demo_user: DEMO_EMAIL },
          token ? `Demo user created: ${DEMO_EMAIL}; pnpm admin demo-token prints a token for it` : 'Demo token: pnpm admin demo-token',
        ),
    };
  }
  return {
    progress: (line) => console.log(line),
    workersRunning: (concurrency) => {
      logger.info({ concurrency }, 'workflow worker running');
      console.log('Platform workflow worker running');
    },
    listening: (url) => console.log(listenLine(url)),
    metrics: (url) => console.log(metricsLine(url)),
    demo: (url, token) => console.log(demoBox(url, token)),
  };
}

const listenLine = (url: string) => `Platform API listening on ${url} (docs: ${url}/docs)`;
const metricsLine = (url: string) => `Metrics at ${url} (Prometheus)`;

/** The demo user's credentials in a box, printed after the listen line so it is the last thing on screen. */
function demoBox(url: string, token: string | undefined): string {
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
