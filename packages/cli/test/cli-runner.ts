// `platform …` run inside the test's own process, through run() with an I/O context of its own: stdout and stderr
// captured, standard input given (or a terminal the test types into), the environment it is given and nothing of
// the test's, Ctrl-C on demand, and the exit code the program sets. Runs of the program do not share state, so
// tests run them side by side. (process.test.ts keeps the real `platform` process for what only it can show.)
import { PassThrough, Writable } from 'node:stream';
import type { Io, Pace } from '../src/io.ts';
import { run } from '../src/program.ts';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env: Record<string, string | undefined>;
  /** Standard input, ended after it; without it, an empty one (as </dev/null). */
  input?: string;
  /** Standard input is a terminal the test types into (`type`), left open. */
  stdinTerminal?: boolean;
  /** Standard output is a terminal this many columns wide (tables as a person sees them). */
  columns?: number;
  /** Called with everything written to stdout so far, after each write. */
  onOutput?: (stdout: string, running: RunningCli) => void;
  /** Called with everything written to stderr so far, after each write. */
  onError?: (stderr: string, running: RunningCli) => void;
  /** The run's pauses (--wait's polls, reconnections); default the installed command's. */
  pace?: Pace;
}

export interface RunningCli {
  /** The run's end: its exit code and output. */
  done: Promise<CliRun>;
  stdout: () => string;
  stderr: () => string;
  /** Ctrl-C. */
  interrupt: () => void;
  /** Typed at the terminal (stdinTerminal). */
  type: (text: string) => void;
}

/** A stream that keeps what is written to it. */
class Capture extends Writable {
  text = '';
  readonly changed: (text: string) => void;
  readonly isTTY: boolean;
  readonly columns: number | undefined;

  constructor(changed: (text: string) => void, isTTY: boolean, columns: number | undefined) {
    super({ decodeStrings: false });
    this.changed = changed;
    this.isTTY = isTTY;
    this.columns = columns;
  }

  override _write(chunk: string | Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    this.changed(this.text);
    callback();
  }
}

export function startCli(args: string[], options: CliOptions): RunningCli {
  const listeners = new Set<() => void>();
  const stdin = Object.assign(new PassThrough(), { isTTY: options.stdinTerminal === true });
  if (!options.stdinTerminal) stdin.end(options.input ?? '');
  const running: RunningCli = {
    done: Promise.resolve({ code: 0, stdout: '', stderr: '' }),
    stdout: () => stdout.text,
    stderr: () => stderr.text,
    interrupt: () => {
      for (const listener of [...listeners]) listener();
    },
    type: (text) => stdin.write(text),
  };
  const stdout = new Capture((text) => options.onOutput?.(text, running), options.columns !== undefined, options.columns);
  const stderr = new Capture((text) => options.onError?.(text, running), false, undefined);
  const io: Io = {
    stdout,
    stderr,
    stdin,
    env: options.env,
    onInterrupt: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    exitCode: 0,
    pace: options.pace,
  };
  running.done = run(['node', 'platform', ...args], io).then(() => {
    stdin.destroy();
    return { code: io.exitCode, stdout: stdout.text, stderr: stderr.text };
  });
  return running;
}

/** Runs `platform …` to its end. */
export function cli(args: string[], options: CliOptions): Promise<CliRun> {
  return startCli(args, options).done;
}
