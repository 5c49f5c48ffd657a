// Checks on request values that the contract's schemas cannot express, made before anything is stored:
// - U+0000: PostgreSQL text and jsonb cannot hold it (the query would fail: a 500).
// - Lone UTF-16 surrogates ("\ud800" in JSON): jsonb refuses them (a 500) and text columns would store U+FFFD in
//   their place, silently changing the value.
// - Integers beyond ±(2^53 − 1) written out in full (body.ts marks them), and numbers beyond a double's range: a
//   JSON number is read as a double, so the value would be stored rounded, or as null.
// - Nesting deeper than MAX_JSON_DEPTH: recursive code anywhere below (serialisation, merging values) could run
//   out of stack. The contract states the same limit on the free-form objects.
// Each is the caller's error: a 422 naming the field. The walk is iterative, so no input can exhaust the stack.
import { validationError } from '../errors.ts';

/** Levels of objects and arrays a request value may have (the body itself is level 1). */
export const MAX_JSON_DEPTH = 32;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** An integer literal of a request body that a double cannot hold exactly (body.ts), with its text. */
export class InexactInteger {
  readonly source: string;
  constructor(source: string) {
    this.source = source;
  }
}

/** `name` within `path`, as the error's `param` spells it. */
const child = (path: string, name: string | number) => (typeof name === 'number' ? `${path}[${name}]` : path ? `${path}.${name}` : name);

function checkString(value: string, path: string, what: string): void {
  const field = path || 'body';
  if (value.includes('\u0000')) throw validationError(field, `${what} contains the NUL character (U+0000).`, 'Remove the NUL character.');
  if (LONE_SURROGATE.test(value)) {
    throw validationError(
      field,
      `${what} contains a lone UTF-16 surrogate, which is not a Unicode character.`,
      'Send valid Unicode text: escape characters outside the BMP as a surrogate pair, or send them as UTF-8.',
    );
  }
}

/** Throws a 422 naming the first field (in document order) that breaks one of the rules above. */
export function checkRequestValue(value: unknown, root = ''): void {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: root, depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      checkString(value, path, path || 'The body');
      continue;
    }
    // Told by its length, never its digits: the field may hold a secret (a password sent as a number).
    if (value instanceof InexactInteger) {
      const digits = value.source.replace('-', '').length;
      throw validationError(
        path || 'body',
        `${path || 'The body'} is an integer of ${digits} digits, which a JSON number here cannot hold exactly (it would be stored ${Number.isFinite(Number(value.source)) ? 'rounded' : 'as null'}).`,
        `Send integers between ${-Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER} as numbers, and larger ones as strings.`,
      );
    }
    // 1e400 reads as Infinity, which JSON writes as null: the value would be stored as another.
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw validationError(path || 'body', `${path || 'The body'} is a number too large for a double (it would be stored as null).`, 'Send it as a string.');
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw validationError(
        path || 'body',
        `${path || 'The body'} is nested more than ${MAX_JSON_DEPTH} levels deep.`,
        `Flatten the value: objects and arrays may nest at most ${MAX_JSON_DEPTH} levels.`,
      );
    }
    const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((item, i) => [i, item]) : Object.entries(value);
    for (const [name] of entries) {
      if (typeof name === 'string') checkString(name, path, `A property name in ${path || 'the body'}`);
    }
    // Pushed in reverse, so the first offending field in document order is the one reported.
    for (let i = entries.length - 1; i >= 0; i--) {
      const [name, item] = entries[i]!;
      stack.push({ value: item, path: child(path, name), depth: depth + 1 });
    }
  }
}
