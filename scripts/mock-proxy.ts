// The small HTTP proxy `pnpm mock` puts in front of Prism, for what Prism alone gets wrong:
//   - a body that is not JSON gets 400 `bad_request` at once (Prism never answers it), and a body of a media type the
//     operation does not take gets the server's answer (400, or 415 where it takes no body), where Prism sends the
//     contract's first 415 example whatever the operation;
//   - a request that breaks the contract gets the server's error body for it: the first violation's `param`,
//     `message` and `suggestion`, every violation in `details.violations`, all in the server's words (Prism words
//     them as Ajv does), where Prism sends the operation's one canned 422 example;
//   - Prism's own errors (an unknown path or method, a missing token, a forced status or an example the answer lacks),
//     which it sends as problem+json, get the contract's error body too (400 naming Prefer for the last two);
//   - its dynamic data (`Prefer: dynamic=true`) is made consistent (scripts/mock-data.ts);
//   - every answer's X-Request-Id is the request's own when valid, else a new one, as the server's is (Prism sends the
//     contract's one example on every answer), and none says `Idempotent-Replayed` (Prism sends the header's
//     example on every answer; the mock keeps no state, so nothing is a replay);
//   - cross-origin answers say what the server's say: no credentials (tokens travel in Authorization, never in
//     cookies) and the server's list of headers a script may read, where Prism allows credentials and exposes `*`,
//     which a browser reads as no header at all for a request with credentials (a front end built on that would
//     then fail on the server only).
// Everything else passes through unchanged, event streams included.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import contract from '@platform/api-types/openapi.json' with { type: 'json' };
import { asksForDynamicData, consistentMockData } from './mock-data.ts';

/** One entry of Prism's `sl-violations` header. */
interface Violation {
  location: string[];
  severity: string;
  code: string | number;
  message: string;
}

interface ErrorBody {
  error: { code: string; message: string; param?: string; suggestion?: string; details?: unknown };
}

/**
 * The response headers a script on another origin may read: the server's (packages/server/src/http/cors.ts; the
 * mock's tests hold the two equal). Not imported: the server's modules would double the mock's start-up.
 */
export const EXPOSED_HEADERS =
  'X-Request-Id, Retry-After, RateLimit, RateLimit-Policy, Idempotent-Replayed, Allow, WWW-Authenticate, Deprecation, Sunset, Link';

// Hop-by-hop headers, and those that no longer describe the body once fetch has decoded it.
const dropped = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding', 'host']);

/** A valid incoming X-Request-Id, as the contract's header defines it (openapi/components/headers/X-Request-Id.yaml). */
const { schema: REQUEST_ID } = contract.components.headers['X-Request-Id'];
const REQUEST_ID_PATTERN = new RegExp(REQUEST_ID.pattern);
const validRequestId = (id: string) => id.length >= REQUEST_ID.minLength && id.length <= REQUEST_ID.maxLength && REQUEST_ID_PATTERN.test(id);

/** The headers every answer of the mock carries: the request's id, echoed when valid, else a new one. */
function ownHeaders(request: IncomingMessage): Record<string, string> {
  const incoming = request.headers['x-request-id'];
  return { 'x-request-id': typeof incoming === 'string' && validRequestId(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '')}` };
}

export function createMockProxy(upstream: string): Server {
  return createServer((request, response) => {
    handle(upstream, request, response).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      if (response.headersSent) response.destroy();
      else send(response, 502, { error: { code: 'internal_error', message: `The mock could not reach Prism: ${message}` } }, ownHeaders(request));
    });
  });
}

async function handle(upstream: string, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);

  if (body.length > 0 && isJson(request.headers['content-type'])) {
    try {
      JSON.parse(body.toString('utf8'));
    } catch (error) {
      send(
        response,
        400,
        {
          error: {
            code: 'bad_request',
            message: `The request body is not valid JSON: ${(error as Error).message}`,
            suggestion: 'Send a JSON document, or fix the Content-Type header.',
          },
        },
        ownHeaders(request),
      );
      return;
    }
  }

  const refused =
    body.length > 0 && !isJson(request.headers['content-type'])
      ? unreadableBody(request.method ?? 'GET', (request.url ?? '/').split('?')[0] ?? '/', request.headers['content-type'])
      : undefined;
  if (refused) {
    send(response, refused.status, refused.body, ownHeaders(request));
    return;
  }

  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || dropped.has(name)) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const answer = await fetch(new URL(request.url ?? '/', upstream), {
    method: request.method,
    headers,
    body: body.length > 0 ? body : undefined,
    redirect: 'manual',
  });
  const out: Record<string, string | string[]> = {};
  answer.headers.forEach((value, name) => {
    if (!dropped.has(name) && name !== 'idempotent-replayed' && name !== 'access-control-allow-credentials') out[name] = value;
  });
  if (out['access-control-expose-headers'] !== undefined) out['access-control-expose-headers'] = EXPOSED_HEADERS;
  Object.assign(out, ownHeaders(request));
  const setCookies = answer.headers.getSetCookie();
  if (setCookies.length > 0) out['set-cookie'] = setCookies;

  const violations = requestViolations(answer.headers.get('sl-violations'));
  if ((answer.status === 400 || answer.status === 422) && violations.length > 0) {
    await answer.body?.cancel();
    send(response, answer.status, violationError(answer.status, violations, request), out);
    return;
  }
  if ((answer.headers.get('content-type') ?? '').startsWith('application/problem+json')) {
    const { status, body, headers } = prismError(answer.status, (await answer.json()) as PrismProblem, request);
    send(response, status, body, { ...out, ...headers });
    return;
  }
  if (asksForDynamicData(request.headers.prefer) && isJson(answer.headers.get('content-type') ?? undefined)) {
    const text = JSON.stringify(consistentMockData(await answer.json(), request.url ?? '/', answer.status));
    response.writeHead(answer.status, { ...out, 'content-length': Buffer.byteLength(text) });
    response.end(text);
    return;
  }
  response.writeHead(answer.status, out);
  if (!answer.body) {
    response.end();
    return;
  }
  // Streamed, so a followed event stream reaches the caller as Prism writes it.
  Readable.fromWeb(answer.body as import('node:stream/web').ReadableStream).pipe(response);
}

function isJson(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || type.endsWith('+json');
}

/** The request's violations of the contract from Prism's header (errors only; warnings do not reject). */
export function requestViolations(header: string | null): Violation[] {
  if (!header) return [];
  try {
    const parsed = JSON.parse(header) as Violation[];
    return Array.isArray(parsed) ? parsed.filter((violation) => violation.severity === 'Error' && violation.location?.[0] === 'request') : [];
  } catch {
    return [];
  }
}

/**
 * Where in the request a violation is, as the contract's `param` spells it: `limit`, `X-Workspace-Id`,
 * `sources[0].chart.repo_url`.
 */
export function violationParam(violation: Violation): string | undefined {
  const [, where, ...rest] = violation.location;
  // A missing property, or one the contract does not define, is named by its own path (as the server names it).
  const named =
    violation.code === 'required'
      ? /required property '([^']+)'/.exec(violation.message)?.[1]
      : violation.code === 'additionalProperties'
        ? /found '([^']+)'/.exec(violation.message)?.[1]
        : undefined;
  const segments = named === undefined ? rest : [...rest, named];
  if (where !== 'body') return segments[0];
  let param = '';
  for (const segment of segments) param += /^\d+$/.test(segment) ? `[${segment}]` : param ? `.${segment}` : segment;
  return param || undefined;
}

/** A caller's value as the server's messages show it: its first 64 characters (packages/server/src/errors.ts, shown). */
const shown = (value: string) => (value.length > 64 ? `${value.slice(0, 64)}…` : value);

/**
 * A violation in the server's words (packages/server/src/http/contract.ts, violationOf): Prism words it as Ajv does
 * behind "Request body property <path>" or "Request query parameter <name>"; the server says "Body field <param>",
 * "Parameter <param>" or "Header <param>", then "is required.", "is not allowed." or Ajv's words.
 */
function serverWords(violation: Violation, param: string | undefined): string {
  const where = violation.location[1];
  const what = `${where === 'body' ? 'Body field' : where === 'header' ? 'Header' : 'Parameter'} ${shown(param ?? 'body')}`;
  if (violation.code === 'required') return `${what} is required.`;
  if (violation.code === 'additionalProperties') return `${what} is not allowed.`;
  const ajv = /\b(must .*|is .*)$/.exec(violation.message)?.[1] ?? violation.message;
  return `${what} ${ajv.replace(/\.$/, '')}.`;
}

/** The operation a request is of, by its method and path (for the suggestion that names it, as the server's does). */
function operationIdOf(method: string, path: string): string | undefined {
  return PATHS.find(({ pattern }) => pattern.test(path))?.operationIds.get(method.toUpperCase());
}

/** The server's 422 (or 400) for a request that breaks the contract: the first violation, and every one in `details.violations`. */
function violationError(status: number, violations: Violation[], request: { method?: string; url?: string }): ErrorBody {
  const [first] = violations as [Violation, ...Violation[]];
  const param = violationParam(first);
  const operationId = operationIdOf(request.method ?? 'GET', (request.url ?? '/').split('?')[0] ?? '/') ?? 'this';
  const suggestion =
    first.code !== 'additionalProperties'
      ? `See the ${operationId} operation in the API reference for what ${param ?? 'the body'} accepts.`
      : first.location[1] === 'body'
        ? 'Remove the field; request bodies reject fields the contract does not define.'
        : `Remove the parameter; ${operationId} takes no ${param} (see the API reference for the parameters it takes).`;
  const listed = new Map<string, { param: string; message: string }>();
  for (const violation of violations) {
    const at = violationParam(violation) ?? 'body';
    const message = serverWords(violation, at);
    listed.set(`${at}\u0000${message}`, { param: at, message });
  }
  const all = [...listed.values()];
  return {
    error: {
      code: status === 422 ? 'validation_error' : 'bad_request',
      message: serverWords(first, param),
      ...(param === undefined ? {} : { param }),
      suggestion,
      details: { violations: all.slice(0, 50), ...(all.length > 50 ? { violations_not_listed: all.length - 50 } : {}) },
    },
  };
}

/** Prism's own error (RFC 7807): `type` ends in its error name, `detail` says what. */
interface PrismProblem {
  type?: string;
  title?: string;
  detail?: string;
}

/** The contract's code for each status Prism answers by itself, as the API's decisions name them. */
const CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'bad_request',
  415: 'bad_request',
  422: 'validation_error',
};

/** Prism's problem+json as the contract's error body, in the API's words where it is one of Prism's known errors. */
export function prismError(
  status: number,
  problem: PrismProblem,
  request: { method?: string; url?: string },
): { status: number; body: ErrorBody; headers?: Record<string, string> } {
  const name = (problem.type ?? '').split('#').pop() ?? '';
  const path = (request.url ?? '/').split('?')[0] ?? '/';
  const known: Record<string, ErrorBody['error']> = {
    NO_PATH_MATCHED_ERROR: {
      code: 'not_found',
      message: `No operation of the API has the path ${path}.`,
      suggestion: 'Check the path against the reference docs; every path starts with /v1.',
    },
    NO_METHOD_MATCHED_ERROR: {
      code: 'method_not_allowed',
      message: `${request.method} is not an operation of ${path}.`,
      suggestion: `Use one of: ${allowedMethods(path).join(', ')}.`,
    },
    UNAUTHORIZED: {
      code: 'unauthorized',
      message: 'The request has no bearer token.',
      suggestion: "Send any token as 'Authorization: Bearer <token>': the mock takes every one.",
    },
  };
  // A `Prefer` the answer cannot meet is the request's mistake, which a 404 would pass off as a missing resource:
  // an example it does not have (an error's example without its `code=`, say), or a status the operation does not
  // document (`code=418`).
  const detail = problem.detail ?? problem.title ?? '';
  const preferMistake = (message: string, suggestion: string) => ({
    status: 400,
    body: { error: { code: 'bad_request', message: `${message} (${detail}).`, param: 'Prefer', suggestion } },
  });
  if (name === 'NOT_FOUND' && /exampleKey/i.test(detail)) {
    return preferMistake(
      'The answer has no such example',
      "Name an example of the status asked for; an error's example goes with its status: 'Prefer: code=404, example=not_found'.",
    );
  }
  if ((name === 'NOT_FOUND' || name === 'NO_RESPONSE_DEFINED') && /status code/i.test(detail)) {
    return preferMistake(
      'The operation documents no such response',
      "Ask with 'Prefer: code=<status>' for a status the operation documents (see the reference docs).",
    );
  }
  const error = known[name] ?? { code: CODES[status] ?? 'internal_error', message: problem.detail ?? problem.title ?? `The mock answered ${status}.` };
  // A 405 names the methods the path has, as the server's does.
  return { status, body: { error }, ...(name === 'NO_METHOD_MATCHED_ERROR' ? { headers: { allow: allowedMethods(path).join(', ') } } : {}) };
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
type PathItem = Record<string, { operationId?: string; requestBody?: { content?: Record<string, unknown> } }>;
/**
 * Each path of the contract as a pattern of its segments (a `{parameter}` matches one segment), with its methods and
 * the media types each method's body may have (none: it takes no body), and each method's operationId.
 */
const PATHS = Object.entries((contract as unknown as { paths: Record<string, PathItem> }).paths).map(([template, item]) => ({
  template,
  pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  methods: METHODS.filter((method) => method in item).map((method) => method.toUpperCase()),
  bodies: new Map(METHODS.filter((method) => method in item).map((method) => [method.toUpperCase(), Object.keys(item[method]?.requestBody?.content ?? {})])),
  operationIds: new Map(METHODS.filter((method) => method in item).map((method) => [method.toUpperCase(), item[method]?.operationId])),
}));

/** The methods the contract documents for a concrete path (as the server's router answers them). */
export function allowedMethods(path: string): string[] {
  return PATHS.find(({ pattern }) => pattern.test(path))?.methods ?? [];
}

/**
 * The server's answer to a body of a media type the operation does not take, which Prism answers with the contract's
 * first 415 example whatever the operation: 400 where the operation takes JSON, 415 where it takes no body.
 */
export function unreadableBody(method: string, path: string, contentType: string | undefined): { status: number; body: ErrorBody } | undefined {
  const entry = PATHS.find(({ pattern }) => pattern.test(path));
  const types = entry?.bodies.get(method.toUpperCase());
  if (!entry || types === undefined) return undefined;
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (types.includes(type)) return undefined;
  if (types.length === 0) {
    return {
      status: 415,
      body: {
        error: {
          code: 'unsupported_media_type',
          message: `${method.toUpperCase()} ${entry.template} takes no request body.`,
          param: 'body',
          suggestion: 'Send the request without a body (no Content-Length above 0, no Transfer-Encoding).',
        },
      },
    };
  }
  return {
    status: 400,
    body: {
      error: { code: 'bad_request', message: 'The request body must be JSON.', suggestion: "Send a JSON object with 'Content-Type: application/json'." },
    },
  };
}

function send(response: ServerResponse, status: number, body: ErrorBody, headers: Record<string, string | string[]> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    // A browser page on another origin must be able to read the error too (Prism's own answers allow any).
    'access-control-allow-origin': '*',
    'access-control-expose-headers': EXPOSED_HEADERS,
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}
