// Every statement of a pooled connection: failures counted by SQLSTATE, and, inside a recorded span, a span of
// its own with the statement's text (parameters are sent apart as $1, $2, …: their values are never in it).
// Installed on each connection of openDatabase's pools; with neither metrics nor traces on it installs nothing.
import type pg from 'pg';
import { metrics } from './metrics.ts';
import { failed, recordingSpan, SpanKind, startSpan, tracing } from './tracing.ts';

/** Longest statement text a span carries. */
const MAX_TEXT = 2048;

/** A SQLSTATE is five digits or capitals; anything else (a broken connection, a timeout) counts as `connection`. */
const codeOf = (error: unknown): string => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : 'connection';
};

export function observeQueries(client: pg.PoolClient): void {
  if (!metrics && !tracing) return;
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    // A call with a callback (none of ours) passes as it is.
    if (typeof args.at(-1) === 'function') return query(...args);
    const first = args[0] as string | { text?: string };
    const text = typeof first === 'string' ? first : (first?.text ?? '');
    const span =
      recordingSpan() &&
      startSpan(text.trimStart().split(/\s/, 1)[0]!.toUpperCase() || 'SQL', {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system.name': 'postgresql', 'db.query.text': text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text },
      });
    const result = query(...args) as Promise<unknown>;
    return result.then(
      (value) => {
        span?.end();
        return value;
      },
      (error: unknown) => {
        metrics?.queryErrors.inc({ code: codeOf(error) });
        if (span) {
          failed(span, error);
          span.end();
        }
        throw error;
      },
    );
  }) as typeof client.query;
}
