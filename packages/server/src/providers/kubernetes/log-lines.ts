// Pod-log lines read with `timestamps=true` ("2026-11-23T12:00:00.123456789Z text") → LogEntry. A line's
// position is its timestamp in microseconds since the epoch (within Number's exact range), made strictly
// increasing by giving a line that shares its predecessor's microsecond the next one: the same lines read again
// (a resumed stream reads from `sinceTime` on) get the same positions, so `after` drops exactly what was sent.
import type { LogEntry, PodContainer } from '../types.ts';

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}) (.*)$/s;

/** Microseconds since the epoch of an RFC 3339 (nano) timestamp and the text after it; undefined if unstamped. */
export function parseStampedLine(raw: string): { micros: number; line: string } | undefined {
  const match = TIMESTAMP.exec(raw);
  if (!match) return undefined;
  const seconds = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(seconds)) return undefined;
  const fraction = (match[2] ?? '').padEnd(9, '0');
  return { micros: seconds * 1000 + Math.floor(Number(fraction) / 1000), line: match[4]! };
}

/** The pod-log API's sinceTime for a moment in microseconds: whole seconds (what the API keeps), rounded down. */
export function sinceTimeOf(micros: number): string {
  return new Date(Math.floor(micros / 1_000_000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** Turns raw lines into entries in order, with positions; drops lines at or before `after` and before `sinceMs`. */
export function logEntries(target: PodContainer, filter: { after?: number; sinceMs?: number }) {
  let previous = Number.NEGATIVE_INFINITY;
  return (raw: string): LogEntry | undefined => {
    const parsed = parseStampedLine(raw);
    if (!parsed) return undefined;
    const position = Math.max(parsed.micros, previous + 1);
    previous = position;
    const timestamp_ms = Math.floor(parsed.micros / 1000);
    if (filter.after !== undefined && position <= filter.after) return undefined;
    if (filter.sinceMs !== undefined && timestamp_ms < filter.sinceMs) return undefined;
    return { ...target, timestamp_ms, line: parsed.line, position };
  };
}
