// What every command's action gets: the settings in force, the client built from them, and the output mode.
// Actions return their exit code; errors thrown from them are printed by main.ts.

import { createPlatformClient, type DeprecationHandler, type PlatformClient } from '@platform/client';
import { type Command, InvalidArgumentError } from 'commander';
import { type GlobalFlags, resolveSettings, type Settings } from './config.ts';
import type { Io } from './io.ts';
import type { OutputOptions } from './output.ts';

export interface Context {
  settings: Settings;
  api: PlatformClient;
  out: OutputOptions;
  io: Io;
}

const ios = new WeakMap<Command, Io>();
/** One per run: a deprecated operation is told of once in a run, however many calls it takes. */
const deprecationWarnings = new WeakMap<Io, DeprecationHandler>();

function warnOfDeprecation(io: Io): DeprecationHandler {
  let handler = deprecationWarnings.get(io);
  if (!handler) deprecationWarnings.set(io, (handler = (notice) => io.stderr.write(`Warning: ${notice.message}\n`)));
  return handler;
}

/** Ties the program to the streams and environment of its run (buildProgram does). */
export function bindIo(program: Command, io: Io): void {
  ios.set(program, io);
}

/** The I/O of the run a command belongs to: its program's. */
export function ioOf(command: Command): Io {
  let root = command;
  while (root.parent) root = root.parent;
  const io = ios.get(root);
  if (!io) throw new Error('the program was built without an I/O context');
  return io;
}

export function contextOf(command: Command): Context {
  const io = ioOf(command);
  const flags = command.optsWithGlobals<GlobalFlags & { json?: boolean; all?: boolean }>();
  const settings = resolveSettings(flags, io.env);
  if (!isHttpUrl(settings.apiUrl))
    throw new UsageError(`${settings.apiUrlFrom} must be an http:// or https:// URL, such as http://127.0.0.1:8080 (got "${settings.apiUrl}")`);
  const api = createPlatformClient({
    baseUrl: settings.apiUrl,
    token: settings.token,
    workspaceId: settings.workspace,
    onDeprecation: warnOfDeprecation(io),
    ...(io.pace?.retry ? { retry: io.pace.retry } : {}),
  });
  return { settings, api: flags.all ? everyPage(api) : api, out: { json: flags.json === true, io }, io };
}

type Page = { data: unknown[]; pagination: { cursor: string; has_more: boolean } };
const isPage = (value: unknown): value is Page => typeof value === 'object' && value !== null && 'pagination' in value && Array.isArray((value as Page).data);

/**
 * `--all`: a list's GET follows the cursor to the last page and answers one page holding every record, so each
 * list command prints all of them as it prints one page.
 */
function everyPage(api: PlatformClient): PlatformClient {
  const GET = (async (path: string, init?: { params?: { query?: Record<string, unknown> } }) => {
    const first: unknown = await api.GET(path as never, init as never);
    if (!isPage(first)) return first;
    let page = first;
    const data = [...page.data];
    while (page.pagination.has_more && page.data.length > 0) {
      const cursor = page.pagination.cursor;
      const next: unknown = await api.GET(path as never, { ...init, params: { ...init?.params, query: { ...init?.params?.query, cursor } } } as never);
      // A cursor that did not move brings nothing new: stop rather than loop.
      if (!isPage(next) || next.pagination.cursor === cursor) break;
      data.push(...next.data);
      page = next;
    }
    return { ...page, data, pagination: { ...page.pagination, has_more: false } };
  }) as PlatformClient['GET'];
  return { ...api, GET };
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** A usage mistake found after parsing (a missing choice between options): exit 2, like commander's own. */
export class UsageError extends Error {}

/** Wraps an action: commander passes the arguments, then the options, then the command itself. */
export function action<A extends unknown[]>(run: (context: Context, ...args: A) => Promise<number | void>) {
  return async (...args: unknown[]): Promise<void> => {
    const command = args.at(-1) as Command;
    const context = contextOf(command);
    const code = await run(context, ...(args.slice(0, -1) as A));
    if (typeof code === 'number') context.io.exitCode = code;
  };
}

/** The options of commands that start a workflow. */
export interface WaitFlags {
  wait?: boolean;
  timeout: number;
}

export function withWait(command: Command): Command {
  return command
    .option('--wait', 'wait until the workflow has finished (exit 3 if it failed, 4 on timeout)')
    .option('--timeout <seconds>', 'how long --wait waits', positiveInteger, 600);
}

/** The options of list commands: one page, and where it starts; or every page (`--all`, read in contextOf). */
export interface PageFlags {
  limit?: number;
  cursor?: string;
  all?: boolean;
}

export function withPage(command: Command): Command {
  return command
    .option('--limit <n>', 'records per page (1-100)', positiveInteger)
    .option('--cursor <cursor>', 'start after this cursor (from the previous page)')
    .option('--all', 'every page, following the cursor (from --cursor, if given)');
}

export function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new InvalidArgumentError('expected a whole number of 0 or more');
  return number;
}

/** `--help` text: one or more examples after the options. */
export function example(command: Command, ...lines: string[]): Command {
  return command.addHelpText('after', `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`);
}
