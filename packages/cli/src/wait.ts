// `--wait`: polls a workflow's record every second (the run's pace) until it succeeds, fails or the time runs out.
// The exit code says which (0, 3, 4), so scripts can branch on it without parsing the output.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Io } from './io.ts';

export const EXIT_OK = 0;
export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;
export const EXIT_WORKFLOW_FAILED = 3;
export const EXIT_TIMEOUT = 4;
export const EXIT_INTERRUPTED = 130;
/** 128 + SIGPIPE's 13, what a shell shows for a tool its reader left. */
export const EXIT_BROKEN_PIPE = 141;

export type Outcome = 'succeeded' | 'failed' | 'pending';

export interface WaitOptions<T> {
  io: Io;
  /** Reads the record again (a get or list operation). */
  read: () => Promise<T>;
  /** Where the workflow is, judged from the record. */
  outcome: (record: T) => Outcome;
  /** A few words on the record's state, for the spinner and the final line. */
  describe: (record: T) => string;
  /** What is awaited, e.g. `cluster cl_… to run`. */
  what: string;
  timeoutSeconds: number;
}

export interface WaitResult<T> {
  code: number;
  record: T;
}

export async function waitFor<T>(options: WaitOptions<T>): Promise<WaitResult<T>> {
  const deadline = Date.now() + options.timeoutSeconds * 1000;
  // A spinner only for a person watching a terminal; piped output gets the final line alone. A terminal that
  // reports no width (some CI pseudo-terminals) would make ora clear lines without end. Loaded only then: ora
  // and its dependencies cost start-up time that scripts should not pay.
  const { stdout, stderr } = options.io;
  const spinner =
    stdout.isTTY && (stdout.columns ?? 0) > 0 ? (await import('ora')).default({ text: `Waiting for ${options.what}`, stream: stdout }).start() : undefined;
  try {
    for (;;) {
      const record = await options.read();
      const outcome = options.outcome(record);
      if (outcome === 'succeeded') {
        spinner?.succeed(`${options.what}: ${options.describe(record)}`);
        return { code: EXIT_OK, record };
      }
      if (outcome === 'failed') {
        spinner?.fail(`${options.what}: ${options.describe(record)}`);
        if (!spinner) stderr.write(`Failed: ${options.what}: ${options.describe(record)}\n`);
        return { code: EXIT_WORKFLOW_FAILED, record };
      }
      if (Date.now() >= deadline) {
        spinner?.fail(`Timed out waiting for ${options.what} (${options.describe(record)})`);
        if (!spinner) stderr.write(`Timed out after ${options.timeoutSeconds}s waiting for ${options.what} (${options.describe(record)})\n`);
        return { code: EXIT_TIMEOUT, record };
      }
      if (spinner) spinner.text = `Waiting for ${options.what} (${options.describe(record)})`;
      await sleep(Math.min(options.io.pace?.waitPollMs ?? 1000, Math.max(0, deadline - Date.now())));
    }
  } finally {
    if (spinner?.isSpinning) spinner.stop();
  }
}
