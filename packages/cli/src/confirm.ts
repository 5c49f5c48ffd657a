// Deletes ask first. A person at a terminal answers y/N; a script says --yes up front. Without a terminal and
// without --yes nothing is deleted: a usage error (exit 2), so a pipeline that forgot the flag fails loudly
// instead of hanging on a question nobody sees.
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { UsageError } from './context.ts';
import type { Io } from './io.ts';

export interface YesFlags {
  yes?: boolean;
}

export function withYes(command: Command): Command {
  return command.option('-y, --yes', 'do not ask for confirmation (needed when standard input is not a terminal)');
}

/** Whether to go on with `what` (e.g. `Delete cluster cl_…`): true with --yes or a "y" typed at the terminal. */
export async function confirm(io: Io, what: string, flags: YesFlags): Promise<boolean> {
  if (flags.yes) return true;
  if (!io.stdin.isTTY) throw new UsageError(`${what}: not confirmed. Standard input is not a terminal to ask on; add --yes to confirm.`);
  const prompt = createInterface({ input: io.stdin, output: io.stderr });
  try {
    const answer = await prompt.question(`${what}? [y/N] `);
    return /^\s*y(es)?\s*$/i.test(answer);
  } finally {
    prompt.close();
  }
}

/** A "no" at the prompt: nothing happened, said on stderr; exit 1 so a chained command does not run. */
export function declined(io: Io, what: string): number {
  io.stderr.write(`${what}: cancelled, nothing changed.\n`);
  return 1;
}
