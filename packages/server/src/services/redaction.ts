// What may be a credential, in one place: the audit log leaves such values out, the logs replace them with a
// marker wherever they stand (a field, a path segment, the message text), and the tests scan everything the
// test servers log for them, so a token pasted into a path, a header or an error message reaches none of these.
import { stdSerializers } from 'pino';

/**
 * Credentials as they appear inside any text: a PAT (`svc_pat_…`), a webhook signing secret (`whsec_…`, base64,
 * percent-encoded in a path), a JWT (three dot-separated base64url parts; its header is a JSON object, so it starts
 * `ey` or, after white space, `ew`), and a 32-character session token (not plain lower-case hex: that is a request
 * id or a digest). A prefix alone, as the service's own messages name it ("it must be svc_pat_ and 38 letters"), is
 * none. Global, for replacing; `lastIndex` is reset by every use below.
 */
export const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /svc_pat_\w+/gi,
  /whsec_[\w+/=%-]+/gi,
  /(?<![\w-])e[wy][\w-]*\.[\w-]+\.[\w-]*/g,
  /(?<![A-Za-z0-9])(?![0-9a-f]{32}(?![A-Za-z0-9]))[A-Za-z0-9]{32}(?![A-Za-z0-9])/g,
];

export const REDACTED = '[REDACTED]';

/** Whether the text holds anything that may be a credential. */
export const looksSecret = (text: string): boolean =>
  CREDENTIAL_PATTERNS.some((pattern) => {
    pattern.lastIndex = 0;
    return pattern.test(text);
  });

/** The text with everything in it that may be a credential replaced by the marker. */
export const redactText = (text: string): string => CREDENTIAL_PATTERNS.reduce((clean, pattern) => clean.replace(pattern, REDACTED), text);

/** A path with every segment that may be a credential (read percent-decoded) replaced by the marker. */
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

/**
 * A value with everything in its strings that may be a credential masked, however nested. An error is left to the
 * logger's `err` serializer, which masks it once serialised (its message, stack and own fields).
 */
export function redactValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value);
  if (depth > 4 || value === null || typeof value !== 'object' || value instanceof Error) return value;
  if (Array.isArray(value)) return value.map((item) => redactValue(item, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, redactValue(item, depth + 1)]));
}

/** A log line's fields, masked by redactValue. */
export const redactLogFields = (fields: Record<string, unknown>): Record<string, unknown> => redactValue(fields) as Record<string, unknown>;

/**
 * The pino options of the service's logger: every line's fields pass through redactLogFields, an error through
 * pino's serializer and then redactValue, and the message and the values it interpolates through redactValue. A
 * child logger's bindings are not masked (pino formats only the root's): they hold ids, never request data.
 */
export const loggerOptions = (level: string) => ({
  level,
  redact: ['req.headers.authorization'],
  formatters: { log: redactLogFields },
  serializers: { err: (error: Error) => redactValue(stdSerializers.err(error)) },
  hooks: {
    logMethod(this: unknown, args: unknown[], method: (...args: unknown[]) => void) {
      // A leading object is the line's fields, which formatters.log masks.
      method.apply(
        this,
        args.map((arg, index) => (index === 0 && typeof arg === 'object' ? arg : redactValue(arg))),
      );
    },
  },
});
