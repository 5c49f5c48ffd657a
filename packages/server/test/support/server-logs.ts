// Everything the in-process test servers log: written through the service's own logger options (as main.ts makes
// its logger, at every level) into one capture per test file, which checks each line as it is written for what
// may be a credential (the patterns the redaction masks, services/redaction.ts) and keeps only those lines. At the
// end of the file (log-scan.setup.ts, a setup file of every test project) a line kept fails the file. Nothing else
// is kept, so the capture costs a regular expression pass per line.
import pino, { type Logger } from 'pino';
import { loggerOptions, looksSecret } from '../../src/services/redaction.ts';

let leaks: string[] = [];

/** Where the loggers write: a destination pino writes each line to, synchronously. */
export const logCapture = {
  write(line: string): void {
    if (looksSecret(line)) leaks.push(line.trimEnd());
  },
};

/**
 * A logger as the server's own (the redaction of services/redaction.ts, every level), writing into the file's
 * capture; `also` receives each line as well, for a test that reads what was logged.
 */
export function serverLogger(also?: (line: string) => void): Logger {
  const destination = also
    ? {
        write(line: string) {
          logCapture.write(line);
          also(line);
        },
      }
    : logCapture;
  return pino(loggerOptions('trace'), destination);
}

/** The lines logged since the last call that hold what looks like a credential; the capture starts again. */
export function takeLoggedSecrets(): string[] {
  const found = leaks;
  leaks = [];
  return found;
}
