// Reads a request body as the operation's contract allows: JSON, or form-encoded
// (application/x-www-form-urlencoded, what standard OAuth clients send to the device endpoints), or nothing
// at all when the body is optional. Anything else is 400 bad_request, oversized is 413. An operation that takes
// no body takes an empty JSON object as none (many HTTP clients send `{}` with every POST); a field in it is 422
// like any unknown field, and a body of another type is 415. Bodies are UTF-8 and not content-encoded: another
// charset or a Content-Encoding is 415, bytes that are not UTF-8 are 400 (refused, never decoded with replacement
// characters).
import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { ApiError, shown } from '../errors.ts';
import type { OperationMeta } from './contract.ts';
import { InexactInteger } from './input-checks.ts';

const JSON_TYPE = 'application/json';
const FORM_TYPE = 'application/x-www-form-urlencoded';

function expected(meta: OperationMeta): string {
  return meta.hasFormBody
    ? "Send a JSON object with 'Content-Type: application/json', or form fields with 'Content-Type: application/x-www-form-urlencoded'."
    : "Send a JSON object with 'Content-Type: application/json'.";
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Refuses, before reading, a body the server would have to decode from something other than UTF-8 text. */
function checkEncoding(ctx: Context): void {
  const codings = ctx
    .get('content-encoding')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length > 0) {
    throw new ApiError('unsupported_media_type', `The Content-Encoding ${codings.join(', ').slice(0, 64)} is not supported.`, {
      param: 'Content-Encoding',
      suggestion: 'Send the body without Content-Encoding.',
    });
  }
  const charset = ctx.request.charset.toLowerCase();
  if (charset !== '' && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError('unsupported_media_type', `The charset ${charset.slice(0, 64)} is not supported; request bodies are UTF-8.`, {
      param: 'Content-Type',
      suggestion: "Send the body in UTF-8, with no charset or 'charset=utf-8' in Content-Type.",
    });
  }
}

async function readText(ctx: Context, limit: number): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await getRawBody(ctx.req, { limit });
  } catch (error) {
    if ((error as { type?: string }).type === 'entity.too.large') {
      // The rest of the body is read and dropped, so the client, still sending, gets the answer rather than a
      // reset connection; the connection then closes (the request timeout bounds how long that may take).
      ctx.req.resume();
      throw new ApiError('payload_too_large', `The request body is larger than ${limit} bytes.`, {
        suggestion: 'Send a smaller body.',
        headers: { Connection: 'close' },
      });
    }
    throw new ApiError('bad_request', 'The request body could not be read.', { suggestion: 'Send the body again.' });
  }
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ApiError('bad_request', 'The request body is not valid UTF-8.', { param: 'body', suggestion: 'Send the body encoded as UTF-8.' });
  }
}

/** The parsed body, or undefined when an optional body was not sent (or the operation takes none). */
export async function readBody(ctx: Context, meta: OperationMeta, limit: number): Promise<unknown> {
  // No body at all (no length, no chunked encoding): fine when the contract says the body is optional.
  const sent = ctx.request.length !== undefined ? ctx.request.length > 0 : ctx.get('transfer-encoding') !== '';
  if (!meta.hasJsonBody && !meta.hasFormBody) {
    if (!sent) return undefined;
    const takesNone = `${meta.method.toUpperCase()} ${meta.path} takes no request body`;
    // A JSON object is read as an empty object's schema would read it: `{}` says nothing, a field in it is unknown.
    if (ctx.is(JSON_TYPE) === JSON_TYPE) {
      checkEncoding(ctx);
      const fields = jsonObjectFields(await readText(ctx, limit));
      if (fields?.length === 0) return undefined;
      if (fields !== undefined) {
        throw new ApiError('validation_error', `Body field ${shown(fields[0]!)} is not allowed: ${takesNone}.`, {
          param: fields[0],
          suggestion: 'Remove the field, or send no body: the operation takes its parameters in its path and query.',
        });
      }
    }
    // Any other body the operation would silently ignore is refused: the caller is sending it for a reason.
    throw new ApiError('unsupported_media_type', `${takesNone}.`, {
      param: 'body',
      suggestion: 'Send the request without a body (no Content-Length above 0, no Transfer-Encoding).',
    });
  }
  if (!sent && !meta.bodyRequired) return undefined;
  checkEncoding(ctx);
  const type = ctx.is(JSON_TYPE, ...(meta.hasFormBody ? [FORM_TYPE] : []));
  if (type === FORM_TYPE) return parseForm(await readText(ctx, limit), meta);
  if (type !== JSON_TYPE) {
    throw new ApiError('bad_request', meta.hasFormBody ? 'The request body must be JSON or form-encoded.' : 'The request body must be JSON.', {
      suggestion: expected(meta),
    });
  }
  const text = await readText(ctx, limit);
  try {
    return parseJson(text);
  } catch (error) {
    throw new ApiError('bad_request', `The request body is not valid JSON (${jsonProblem(error)}).`, { suggestion: expected(meta) });
  }
}

/** The names of a JSON object's fields; undefined for a text that is not a JSON object. */
function jsonObjectFields(text: string): string[] | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.keys(value) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A JSON number is read as an IEEE 754 double, so an integer written out beyond ±(2^53 − 1) would be stored
 * rounded (12345678901234567891 as 12345678901234567000). Such a literal (16 digits at least) is kept as an
 * InexactInteger, which the input checks refuse naming its field (input-checks.ts); a text without 16 digits in a
 * row is parsed as it is, with no reviver's cost.
 */
function parseJson(text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  // The reviver's third argument (the literal's source text) is V8's since Node 21.
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
    const source = context?.source;
    if (typeof value !== 'number' || Number.isSafeInteger(value) || source === undefined || !/^-?\d+$/.test(source)) return value;
    return Number.isFinite(value) && BigInt(value) === BigInt(source) ? value : new InexactInteger(source);
  });
}

/**
 * What JSON.parse found wrong, without the excerpt of the body V8 quotes after it (`Unexpected token 's', "…"password":
 * s3cret}" is not valid JSON`): a body's values may be secrets, and the answer repeats none of them.
 */
export const jsonProblem = (error: unknown): string => String((error as Error)?.message ?? 'parse error').replace(/, (?:\.\.\.)?".*$/s, '');

/** Form fields as an object of strings; a field sent twice is refused (RFC 6749 §3.2 forbids repeats). */
function parseForm(text: string, meta: OperationMeta): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(fields, name)) {
      throw new ApiError('bad_request', `The form field ${name} is sent more than once.`, { param: name, suggestion: expected(meta) });
    }
    fields[name] = value;
  }
  return fields;
}
