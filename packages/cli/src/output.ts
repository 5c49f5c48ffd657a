// How results reach the user: `--json` prints the service's JSON exactly; otherwise a table, in the form `gh`
// prints: on a terminal, aligned columns under a header without borders, the list cut to the terminal's width
// (the widest columns first, ellipsised; never the first, the id commands take); piped or redirected, one
// tab-separated line per row without header or cuts, for cut, awk and grep. A record is a field per line.
// Errors and hints go to stderr so stdout stays parseable.
import { PlatformAccessEndedError, PlatformApiError, PlatformError, PlatformNetworkError } from '@platform/client';
import Table from 'cli-table3';
import type { Io } from './io.ts';
import { suggestionFor } from './suggestions.ts';

/** A column: its header and how to read it from a row. */
export type Columns<T> = [header: string, read: (row: T) => unknown][];

export interface OutputOptions {
  json: boolean;
  io: Io;
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Unix seconds as an ISO date, for tables. */
export function time(seconds: number | null | undefined): string {
  return seconds === null || seconds === undefined ? '-' : new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}

const GiB = 2 ** 30;

/** An amount in its unit, for people: memory in GiB, cores counted; plain counts stay bare numbers. */
export function quantity(unit: 'count' | 'cores' | 'bytes', amount: number): string {
  if (unit === 'bytes') return `${+(amount / GiB).toFixed(2)} GiB`;
  if (unit === 'cores') return `${amount} core${amount === 1 ? '' : 's'}`;
  return String(amount);
}

export function json(out: OutputOptions, value: unknown): void {
  out.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** The terminal's width when stdout is one (80 when it does not say, as gh assumes); undefined when piped. */
function terminalWidth(io: Io): number | undefined {
  if (!io.stdout.isTTY) return undefined;
  return io.stdout.columns && io.stdout.columns > 0 ? io.stdout.columns : 80;
}

/** Between columns on a terminal. */
const GAP = 2;
/** No column is cut below this (or its own width), however narrow the terminal: a line may wrap instead. */
const MIN_WIDTH = 8;

/**
 * The widths that fit `width`: each column's own width, or a common cap on the widest ones (the first column is
 * never cut) that brings the line within the terminal.
 */
export function fitWidths(natural: readonly number[], width: number): number[] {
  const available = width - GAP * (natural.length - 1);
  const total = natural.reduce((sum, w) => sum + w, 0);
  if (total <= available) return [...natural];
  const [first = 0, ...rest] = natural;
  const room = available - first;
  // The largest cap under which the other columns fit, found from the widest down.
  let cap = Math.max(...rest);
  while (cap > MIN_WIDTH && rest.reduce((sum, w) => sum + Math.min(w, cap), 0) > room) cap--;
  const capped = rest.map((w) => Math.min(w, Math.max(cap, Math.min(w, MIN_WIDTH))));
  return [first, ...capped];
}

/** A cell on one line: tabs and line ends would break the row apart. */
const flat = (text: string) => text.replace(/[\t\r\n]+/g, ' ');

const NO_BORDERS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: ' '.repeat(GAP),
};

/** Aligned columns without borders (cli-table3, which also ellipsises a cell longer than its column). */
function aligned(head: string[] | undefined, rows: string[][], widths: number[] | undefined): string {
  const table = new Table({
    ...(head ? { head } : {}),
    chars: NO_BORDERS,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
    ...(widths ? { colWidths: widths } : {}),
    wordWrap: false,
    truncate: '…',
  });
  table.push(...rows);
  return table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

/** Rows as a table, or as JSON. */
export function printList<T>(out: OutputOptions, rows: readonly T[], columns: Columns<T>): void {
  if (out.json) return json(out, rows);
  const cells = rows.map((row) => columns.map(([, read]) => flat(cell(read(row)))));
  const width = terminalWidth(out.io);
  if (width === undefined) {
    for (const line of cells) out.io.stdout.write(`${line.join('\t')}\n`);
  } else {
    const head = columns.map(([header]) => header);
    const natural = head.map((header, i) => Math.max([...header].length, ...cells.map((line) => [...line[i]!].length)));
    out.io.stdout.write(`${aligned(head, cells, fitWidths(natural, width))}\n`);
  }
  if (rows.length === 0) out.io.stderr.write('(none)\n');
}

/** One record as a field per line (never cut: a record may hold a secret shown once), or as JSON. */
export function printRecord<T>(out: OutputOptions, record: T, columns: Columns<T>): void {
  if (out.json) return json(out, record);
  const fields = columns.map(([header, read]) => [header, flat(cell(read(record)))]);
  if (terminalWidth(out.io) === undefined) for (const [header, value] of fields) out.io.stdout.write(`${header}\t${value}\n`);
  else out.io.stdout.write(`${aligned(undefined, fields, undefined)}\n`);
}

/**
 * One page of a list: its rows as a table and, on stderr (so the table alone stays on stdout), how to get the
 * next page; or the exact response, rows and pagination, as JSON.
 */
export function printPage<T>(out: OutputOptions, page: { data: readonly T[]; pagination: { has_more: boolean; cursor: string } }, columns: Columns<T>): void {
  if (out.json) return json(out, page);
  printList(out, page.data, columns);
  if (page.pagination.has_more) out.io.stderr.write(`More results: add --cursor ${page.pagination.cursor}\n`);
}

/** A short confirmation for commands whose answer has no body (204). */
export function done(out: OutputOptions, message: string, body: unknown = null): void {
  if (out.json) json(out, body);
  else out.io.stdout.write(`${message}\n`);
}

const ACCESS_ENDED_SUGGESTIONS: Record<PlatformAccessEndedError['reason'], string> = {
  unauthenticated: 'log in again with `platform login`, or set PLATFORM_TOKEN to a valid token.',
  membership_ended: 'ask an admin of the workspace to invite you again, or choose another workspace with --workspace.',
  role_lowered: 'ask an admin of the workspace for the role this stream needs.',
  scope_missing: 'create a token with the scope this stream needs (`platform tokens create --scope …`).',
};

/** Prints an error for a human: the service's message, what to do about it (in commands, see suggestions.ts), and the id to quote. */
export function printError(io: Io, error: unknown): void {
  if (error instanceof PlatformApiError) {
    io.stderr.write(`Error: ${error.message} (${error.status} ${error.code})\n`);
    const suggestion = suggestionFor(error);
    if (suggestion) io.stderr.write(`Suggestion: ${suggestion}\n`);
    if (error.requestId) io.stderr.write(`Request id: ${error.requestId}\n`);
  } else if (error instanceof PlatformAccessEndedError) {
    // The server closed the stream for good: reopening it would be refused the same way.
    io.stderr.write(`Error: the stream was closed: ${error.message} (${error.reason})\n`);
    io.stderr.write(`Suggestion: ${ACCESS_ENDED_SUGGESTIONS[error.reason]}\n`);
  } else if (error instanceof PlatformError) {
    // A network error's message names the URL and what failed (refused, DNS…); another's cause is added when it
    // says more.
    const cause =
      !(error instanceof PlatformNetworkError) && error.cause instanceof Error && !error.message.includes(error.cause.message)
        ? `: ${error.cause.message}`
        : '';
    io.stderr.write(`Error: ${error.message}${cause}\n`);
    if (error instanceof PlatformNetworkError)
      io.stderr.write('Suggestion: check that the API is reachable at the address in --api-url or PLATFORM_API_URL.\n');
  } else {
    io.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
  }
}
