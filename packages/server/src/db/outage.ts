// Whether an error means the database is unreachable (not that a query is wrong): the API answers 503 for it.
// Connection-level failures of pg and PostgreSQL's "cannot connect now" class. (A provider's network errors come
// wrapped, as fetch's "fetch failed", and are not taken for the database's.)
const DATABASE_DOWN_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006']);

export function isDatabaseDown(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && DATABASE_DOWN_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect|connection error and is not queryable|Client was closed and is not queryable/.test(
    message,
  );
}
