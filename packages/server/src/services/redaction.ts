// What may be a credential, in one place: the audit log leaves such values out, and the logs replace them with a
// marker, so a token pasted into a path or a header never reaches either.

/** Values that may be credentials: PATs, webhook secrets, JWTs, 32-character session tokens (not plain hex). */
const SECRET_LIKE = [/svc_pat_/i, /whsec_/i, /^[\w-]+\.[\w-]+\.[\w-]*$/, /^(?![0-9a-f]{32}$)[A-Za-z0-9]{32}$/];

export const REDACTED = '[REDACTED]';

export const looksSecret = (value: string): boolean => SECRET_LIKE.some((pattern) => pattern.test(value));

/** A path with every segment that may be a credential replaced by the marker. */
export function redactPath(path: string): string {
  return path
    .split('/')
    .map((segment) => {
      let decoded = segment;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        // not percent-encoded text: checked as it is
      }
      return looksSecret(decoded) ? REDACTED : segment;
    })
    .join('/');
}

/** A log line's fields with every string that may be a credential, or holds a path segment that may be, masked. */
export function redactLogFields(fields: Record<string, unknown>): Record<string, unknown> {
  const clean = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return looksSecret(value) ? REDACTED : value.includes('/') ? redactPath(value) : value;
    if (depth > 4 || value === null || typeof value !== 'object' || value instanceof Error) return value;
    if (Array.isArray(value)) return value.map((item) => clean(item, depth + 1));
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, clean(item, depth + 1)]));
  };
  return clean(fields, 0) as Record<string, unknown>;
}

/** The pino options of the service's logger: every line's fields pass through redactLogFields. */
export const loggerOptions = (level: string) => ({ level, redact: ['req.headers.authorization'], formatters: { log: redactLogFields } });
