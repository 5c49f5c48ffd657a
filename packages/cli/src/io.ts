// Where a run of `platform` reads and writes: the process's own streams, environment, Ctrl-C and exit code in the
// installed command (main.ts), and captured ones when the tests run the program inside their own process.
import type { Readable, Writable } from 'node:stream';
import type { RetryOptions } from '@platform/client';

export interface Io {
  /** Results; `isTTY` and `columns` (the terminal's width) decide the table form (see output.ts). */
  stdout: Writable & { isTTY?: boolean; columns?: number };
  /** Messages, errors, hints and prompts. */
  stderr: Writable;
  /** Secrets and documents given as `-`, and answers at a prompt when `isTTY`. */
  stdin: Readable & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  /** Calls `listener` on Ctrl-C; the function returned stops listening. */
  onInterrupt: (listener: () => void) => () => void;
  /** The run's exit code (0 until a command or failure sets it). */
  exitCode: number;
  /** How long the run waits between tries; absent in the installed command, which keeps the defaults. */
  pace?: Pace;
}

/**
 * The pauses of a run, each defaulting to what a person at a terminal wants: a run inside another process (the
 * tests' in-process runs, against a server on the same machine whose workflows take a second or two) shortens them.
 */
export interface Pace {
  /** Between two reads of the record `--wait` watches (ms); default 1000. */
  waitPollMs?: number;
  /** Before opening the events feed again once the client gave up reconnecting (ms); default 2000. */
  feedReconnectMs?: number;
  /** The API client's retries and reconnections (its backoff); default the client's. */
  retry?: RetryOptions;
}

/** The process's own: what main.ts passes to run(). */
export function processIo(): Io {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    // Read only when asked for: creating process.stdin costs start-up time that most commands need not pay.
    get stdin() {
      return process.stdin;
    },
    env: process.env,
    onInterrupt: (listener) => {
      process.once('SIGINT', listener);
      return () => process.off('SIGINT', listener);
    },
    exitCode: 0,
  };
}
