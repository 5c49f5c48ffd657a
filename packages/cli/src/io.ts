// Where a run of `platform` reads and writes: the process's own streams, environment, Ctrl-C and exit code in the
// installed command (main.ts), and captured ones when the tests run the program inside their own process.
import type { Readable, Writable } from 'node:stream';

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
