// Checks on request values that the contract's schemas cannot express.
import { validationError } from '../errors.ts';

/**
 * PostgreSQL text cannot hold U+0000: a NUL anywhere in a parameter or body string would fail the query (a 500).
 * It is the caller's error, so it is a 422 naming the field.
 */
export function refuseNul(value: unknown, path: string): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw validationError(path || 'body', `${path || 'The body'} contains the NUL character (U+0000).`, 'Remove the NUL character.');
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => refuseNul(item, `${path}[${i}]`));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('\u0000')) throw validationError(path || 'body', `A property name in ${path || 'the body'} contains the NUL character (U+0000).`, 'Remove the NUL character.');
      refuseNul(item, path ? `${path}.${key}` : key);
    }
  }
}
