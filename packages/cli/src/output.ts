// How results reach the user: `--json` prints the service's JSON exactly; otherwise a table (cli-table3).
// Errors and hints go to stderr so stdout stays parseable.
import { PlatformAccessEndedError, PlatformApiError, PlatformError, PlatformNetworkError } from '@platform/client';
import Table from 'cli-table3';
import { suggestionFor } from './suggestions.ts';

/** A column: its header and how to read it from a row. */
export type Columns<T> = [header: string, read: (row: T) => unknown][];

export interface OutputOptions {
  json: boolean;
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

export function json(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Rows as a table, or as JSON. */
export function printList<T>(out: OutputOptions, rows: readonly T[], columns: Columns<T>): void {
  if (out.json) return json(rows);
  const table = new Table({ head: columns.map(([header]) => header), style: { head: [], border: [] } });
  for (const row of rows) table.push(columns.map(([, read]) => cell(read(row))));
  process.stdout.write(`${table.toString()}\n`);
  if (rows.length === 0) process.stderr.write('(none)\n');
}

/** One record as a two-column table of fields, or as JSON. */
export function printRecord<T>(out: OutputOptions, record: T, columns: Columns<T>): void {
  if (out.json) return json(record);
  const table = new Table({ style: { head: [], border: [] } });
  for (const [header, read] of columns) table.push({ [header]: cell(read(record)) });
  process.stdout.write(`${table.toString()}\n`);
}

/**
 * One page of a list: its rows as a table and, on stderr (so the table alone stays on stdout), how to get the
 * next page; or the exact response, rows and pagination, as JSON.
 */
export function printPage<T>(out: OutputOptions, page: { data: readonly T[]; pagination: { has_more: boolean; cursor: string } }, columns: Columns<T>): void {
  if (out.json) return json(page);
  printList(out, page.data, columns);
  if (page.pagination.has_more) process.stderr.write(`More results: add --cursor ${page.pagination.cursor}\n`);
}

/** A short confirmation for commands whose answer has no body (204). */
export function done(out: OutputOptions, message: string, body: unknown = null): void {
  if (out.json) json(body);
  else process.stdout.write(`${message}\n`);
}

const ACCESS_ENDED_SUGGESTIONS: Record<PlatformAccessEndedError['reason'], string> = {
  unauthenticated: 'log in again with `platform auth login`, or set PLATFORM_TOKEN to a valid token.',
  membership_ended: 'ask an admin of the workspace to invite you again, or choose another workspace with --workspace.',
  role_lowered: 'ask an admin of the workspace for the role this stream needs.',
  scope_missing: 'create a token with the scope this stream needs (`platform tokens create --scope …`).',
};

/** Prints an error for a human: the service's message, what to do about it (in commands, see suggestions.ts), and the id to quote. */
export function printError(error: unknown): void {
  if (error instanceof PlatformApiError) {
    process.stderr.write(`Error: ${error.message} (${error.status} ${error.code})\n`);
    const suggestion = suggestionFor(error);
    if (suggestion) process.stderr.write(`Suggestion: ${suggestion}\n`);
    if (error.requestId) process.stderr.write(`Request id: ${error.requestId}\n`);
  } else if (error instanceof PlatformAccessEndedError) {
    // The server closed the stream for good: reopening it would be refused the same way.
    process.stderr.write(`Error: the stream was closed: ${error.message} (${error.reason})\n`);
    process.stderr.write(`Suggestion: ${ACCESS_ENDED_SUGGESTIONS[error.reason]}\n`);
  } else if (error instanceof PlatformError) {
    // A network error's message names the URL and what failed (refused, DNS…); another's cause is added when it
    // says more.
    const cause =
      !(error instanceof PlatformNetworkError) && error.cause instanceof Error && !error.message.includes(error.cause.message)
        ? `: ${error.cause.message}`
        : '';
    process.stderr.write(`Error: ${error.message}${cause}\n`);
    if (error instanceof PlatformNetworkError)
      process.stderr.write('Suggestion: check that the API is reachable at the address in --api-url or PLATFORM_API_URL.\n');
  } else {
    process.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
  }
}
