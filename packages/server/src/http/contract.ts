// The contract at run time: the bundled document loaded into openapi-backend, which validates requests and
// responses with Ajv for JSON Schema 2020-12 (OpenAPI 3.1), plus what the binding needs per operation,
// read once from the document.
import type { OperationId } from '@platform/api-types';
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Context } from 'koa';
import { type Document, OpenAPIBackend, type Operation } from 'openapi-backend';
import { ApiError, clipped, shown, validationError } from '../errors.ts';
import { ROLES, type Role } from '../services/roles.ts';
import { jsonProblem } from './body.ts';
import { deprecationHeaderNames, deprecationHeaders, deprecationOf } from './deprecation.ts';
import { propertyName } from './property-names.ts';
import type { RouteOperation } from './router.ts';

// CommonJS modules seen from ESM: the class or function is on `.default`.
const Ajv2020 = Ajv2020Module.default;
const addFormats = addFormatsModule.default;

interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  schema?: { type?: unknown };
  deprecated?: boolean;
}

export interface OperationMeta extends RouteOperation {
  operation: Operation;
  /** Declared header parameters: lower-case name → name as the contract spells it. */
  headerNames: Map<string, string>;
  /** Query parameters typed integer or number: Ajv's coercion would take `0x10`, `1e1` or ` 5`; we take digits. */
  numericQuery: Map<string, 'integer' | 'number'>;
  /** Query parameters that take one value (not a list, which is sent repeated). */
  singleQuery: Set<string>;
  hasJsonBody: boolean;
  /** Also accepts application/x-www-form-urlencoded (the OAuth device endpoints). */
  hasFormBody: boolean;
  bodyRequired: boolean;
  authenticated: boolean;
  /** The scope a PAT or JWT needs (its security requirements list it); none for the operations any token may call. */
  requiredScope: string | undefined;
  /** Its 400 is the OAuth 2.0 error body (RFC 6749 §5.2) instead of the shared one: the device token endpoint. */
  oauthErrors: boolean;
  /** Declared responses: status → the lower-case names of the headers declared on it. */
  responses: Map<string, Set<string>>;
  /** The least workspace role the operation needs (`x-required-role`); none for operations outside workspaces. */
  requiredRole?: Role;
  /** It acts in a workspace (`x-requires-workspace`): acting in none (none named, none owned) is a 422. */
  requiresWorkspace: boolean;
  /**
   * Recorded in the audit log (http/audit.ts): every authenticated operation but GET (a change runs in one
   * transaction with its event), and the reads the contract marks `x-audited` (they hand out credentials).
   */
  audit: 'change' | 'read' | undefined;
  /** Deprecated (`deprecated: true`): the headers every answer carries (http/deprecation.ts). */
  deprecation: Record<string, string> | undefined;
  /** Deprecated parameters, as a request sends them (query name; header name in lower case) → the headers then. */
  deprecatedParameters: Map<string, Record<string, string>>;
}

export interface Contract {
  api: OpenAPIBackend;
  operations: Map<OperationId, OperationMeta>;
}

/** `document`: the bundled contract; another document (a test's fixture) is bound the same way. */
export async function loadContract(document: Document = definition as unknown as Document): Promise<Contract> {
  // openapi-backend asks for a new Ajv for each validator it builds (an operation's parameters, body, responses), and
  // a new Ajv compiles the 2020-12 meta-schema again before it checks a schema against it: about 20 ms of each
  // build, most of an operation's first request. One Ajv per set of options compiles it once.
  const ajvs = new Map<string, InstanceType<typeof Ajv2020>>();
  const api = new OpenAPIBackend({
    // The document itself, not a copy: openapi-backend dereferences into a clone of its own and leaves its input
    // as it is (contract-responses.test checks), and a second copy cost 0.8 MB of the server's heap.
    definition: document,
    // Its definition check uses the OpenAPI 3.0 meta-schema and rejects 3.1 constructs; Redocly lints instead.
    quick: true,
    validate: true,
    customizeAjv: (_original, ajvOpts) => {
      const key = JSON.stringify(ajvOpts);
      let ajv = ajvs.get(key);
      if (ajv === undefined) {
        // useDefaults: a parameter or body field the request leaves out gets the contract's default here, the one
        // place defaults are applied (handlers see them as present: ReceivedQuery / ReceivedBody). allErrors: a
        // refusal lists every violation (requestValidationError), not the first alone.
        ajv = new Ajv2020({ ...ajvOpts, strict: false, allErrors: true, useDefaults: true });
        addFormats(ajv);
        ajvs.set(key, ajv);
      }
      return ajv;
    },
  });
  await api.init();
  const rootSecurity = (document as { security?: unknown[] }).security ?? [];
  const operations = new Map<OperationId, OperationMeta>();
  for (const operation of api.getOperations()) {
    const parameters = (operation.parameters ?? []) as ParameterObject[];
    const headerNames = new Map<string, string>();
    const numericQuery = new Map<string, 'integer' | 'number'>();
    const singleQuery = new Set<string>();
    const deprecatedParameters = new Map<string, Record<string, string>>();
    for (const parameter of parameters) {
      const deprecated = deprecationOf(parameter, `${operation.operationId}: ${parameter.in} parameter ${parameter.name}`);
      if (deprecated) {
        const sent = parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name;
        deprecatedParameters.set(sent, deprecationHeaders(operation.operationId!, deprecated, false));
      }
      if (parameter.in === 'header') headerNames.set(propertyName(parameter.name.toLowerCase()), propertyName(parameter.name));
      const type = parameter.schema?.type;
      if (parameter.in === 'query' && (type === 'integer' || type === 'number')) numericQuery.set(propertyName(parameter.name), type);
      if (parameter.in === 'query' && type !== 'array') singleQuery.add(propertyName(parameter.name));
    }
    const security = (operation.security ?? rootSecurity) as Record<string, string[]>[];
    const requestBody = operation.requestBody as { required?: boolean; content?: Record<string, unknown> } | undefined;
    // Read from the bundled document, whose references are intact (openapi-backend's copy may be dereferenced).
    const raw = (
      document as unknown as {
        paths: Record<
          string,
          Record<string, { responses?: Record<string, unknown>; 'x-required-role'?: string; 'x-audited'?: boolean; 'x-requires-workspace'?: boolean }>
        >;
      }
    ).paths[operation.path]?.[operation.method];
    const requiredRole = raw?.['x-required-role'] as Role | undefined;
    if (requiredRole !== undefined && !ROLES.includes(requiredRole)) throw new Error(`${operation.operationId}: unknown x-required-role ${requiredRole}`);
    const responses = new Map<string, Set<string>>();
    for (const [status, response] of Object.entries(raw?.responses ?? {})) {
      const headers = (resolve(document, response) as { headers?: Record<string, unknown> }).headers ?? {};
      responses.set(status, new Set(Object.keys(headers).map((name) => name.toLowerCase())));
    }
    const authenticated = security.length > 0;
    const audit = !authenticated ? undefined : operation.method !== 'get' ? 'change' : raw?.['x-audited'] === true ? 'read' : undefined;
    const deprecation = deprecationOf(operation as never, operation.operationId!);
    const badRequest = raw?.responses?.['400'] as { content?: Record<string, { schema?: { $ref?: string } }> } | undefined;
    operations.set(operation.operationId as OperationId, {
      operationId: operation.operationId as OperationId,
      method: operation.method,
      path: operation.path,
      operation,
      headerNames,
      numericQuery,
      singleQuery,
      hasJsonBody: Boolean(requestBody?.content?.['application/json']),
      hasFormBody: Boolean(requestBody?.content?.['application/x-www-form-urlencoded']),
      bodyRequired: requestBody?.required === true,
      authenticated,
      requiredScope: security.find((requirement) => requirement.personalAccessToken)?.personalAccessToken?.[0],
      oauthErrors: badRequest?.content?.['application/json']?.schema?.$ref === '#/components/schemas/OAuthError',
      responses,
      requiredRole,
      requiresWorkspace: raw?.['x-requires-workspace'] === true,
      audit,
      deprecation: deprecation && deprecationHeaders(operation.operationId!, deprecation, true),
      deprecatedParameters,
    });
  }
  return { api, operations };
}

/** A local reference (`#/components/responses/NotFound`) followed to what it names in the bundled document. */
function resolve(document: Document, value: unknown): unknown {
  let node = value as { $ref?: string } | undefined;
  while (typeof node?.$ref === 'string') {
    node = node.$ref
      .slice(2)
      .split('/')
      .reduce<unknown>((at, token) => (at as Record<string, unknown> | undefined)?.[token.replace(/~1/g, '/').replace(/~0/g, '~')], document) as {
      $ref?: string;
    };
  }
  return node;
}

/**
 * Headers the HTTP layer sets on every answer whatever the operation (framing, the security headers of app.ts,
 * and CORS's `Access-Control-*`, sent only for origins an operator allows): HTTP's and the deployment's policy,
 * not part of any operation's contract.
 */
const transportHeaders = new Set([
  'content-type',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'date',
  'vary',
  'cache-control',
  'x-accel-buffering',
  'x-content-type-options',
  'content-security-policy',
  'referrer-policy',
  'x-frame-options',
  'strict-transport-security',
]);

/**
 * What an answer breaks of its operation's contract: a status the operation does not declare, a header not
 * declared on that status, a body its schema refuses. Empty when the answer is as declared. Checked for every
 * answer when VALIDATE_RESPONSES is on (the test suites), so undeclared behaviour fails the test that causes it.
 */
export function responseProblems(contract: Contract, meta: OperationMeta, status: number, headers: Record<string, unknown>, body: unknown): string[] {
  const declared = meta.responses.get(String(status)) ?? meta.responses.get(`${Math.floor(status / 100)}XX`) ?? meta.responses.get('default');
  if (!declared) return [`status ${status} is not declared`];
  const problems: string[] = [];
  for (const name of Object.keys(headers)) {
    const lower = name.toLowerCase();
    // A deprecated operation's or parameter's headers are declared by its `deprecated: true`.
    const deprecationHeader = deprecationHeaderNames.has(lower) && (meta.deprecation !== undefined || meta.deprecatedParameters.size > 0);
    if (!declared.has(lower) && !transportHeaders.has(lower) && !lower.startsWith('access-control-') && !deprecationHeader)
      problems.push(`header ${name} is not declared on ${status}`);
  }
  if (status === 204 && body !== undefined && body !== null) problems.push('a 204 has a body');
  if (status !== 204 && body !== undefined && body !== null) {
    const result = contract.api.validateResponse(body, meta.operation, status);
    if (!result.valid) problems.push(`body: ${JSON.stringify(result.errors)}`);
  }
  return problems;
}

/**
 * With VALIDATE_RESPONSES: turns an answer that breaks its operation's declared responses into a 500 naming
 * what broke. False when it did. Answers outside the operations (unknown paths, /docs) are not checked.
 */
export function enforceDeclaredResponse(contract: Contract, ctx: Context): boolean {
  const meta = ctx.state.operation as OperationMeta | undefined;
  if (!meta) return true;
  const problems = responseProblems(contract, meta, ctx.status, ctx.response.headers, ctx.body);
  if (problems.length === 0) return true;
  ctx.status = 500;
  ctx.body = new ApiError('internal_error', `The answer of ${meta.operationId} breaks the contract: ${problems.join('; ')}.`).body();
  return false;
}

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** `/requestBody/overrides/0/template_helm_source_id` → `overrides[0].template_helm_source_id`. */
function fieldPath(segments: string[]): string {
  return segments
    .map((s) => decodeURIComponent(s.replace(/~1/g, '/').replace(/~0/g, '~')))
    .reduce((path, s) => (/^\d+$/.test(s) ? `${path}[${s}]` : path ? `${path}.${s}` : s), '');
}

/** The violations a 422 lists at most. */
const MAX_VIOLATIONS = 50;

/** One violation of the request's schemas, in the server's words: where it is (`param`), what is wrong, what to do. */
interface Violation {
  location: string;
  param: string;
  message: string;
  suggestion: string;
}

function violationOf(meta: OperationMeta, error: AjvError): Violation {
  const [location = '', ...rest] = error.instancePath.split('/').slice(1);
  const extra = (error.params.missingProperty ?? error.params.additionalProperty) as string | undefined;
  const segments = extra === undefined ? rest : [...rest, extra];
  let param = fieldPath(segments);
  if (location === 'header') param = meta.headerNames.get(param.toLowerCase()) ?? param;
  if (location === 'requestBody' && param === '') param = 'body';
  // The message names the field as any caller value is shown (an unknown field's name may be huge); `param` whole.
  const what = `${location === 'requestBody' ? 'Body field' : location === 'header' ? 'Header' : 'Parameter'} ${shown(param)}`;
  let message: string;
  switch (error.keyword) {
    case 'required':
      message = `${what} is required.`;
      break;
    case 'additionalProperties':
      message = `${what} is not allowed.`;
      break;
    default:
      message = `${what} ${error.message ?? 'is invalid'}.`;
  }
  const suggestion =
    error.keyword !== 'additionalProperties'
      ? `See the ${meta.operationId} operation in the API reference for what ${param} accepts.`
      : location === 'requestBody'
        ? 'Remove the field; request bodies reject fields the contract does not define.'
        : `Remove the parameter; ${meta.operationId} takes no ${param} (see the API reference for the parameters it takes).`;
  return { location, param, message, suggestion };
}

/**
 * Turns openapi-backend's validation errors into the contract's 422: `param`, `message` and `suggestion` of the first,
 * and every violation in `details.violations` (`param` and `message` each, once), so a form can mark all its fields
 * at once; the mock (`pnpm mock`) answers the same.
 */
export function requestValidationError(meta: OperationMeta, errors: AjvError[]): ApiError {
  const error = errors[0];
  if (!error) return validationError('', 'The request is invalid.');
  if (error.keyword === 'parse') {
    return new ApiError('bad_request', `The request body is not valid JSON (${jsonProblem(error)}).`, {
      suggestion: "Send a JSON object with 'Content-Type: application/json'.",
    });
  }
  const first = violationOf(meta, error);
  // An X-Workspace-Id that cannot be a workspace id (empty, too long) is an invalid workspace: 403, as the spec says.
  if (first.location === 'header' && first.param === 'X-Workspace-Id') {
    return new ApiError('forbidden', 'X-Workspace-Id names no workspace you are a member of.', {
      param: first.param,
      suggestion: 'List your workspaces with GET /v1/workspaces and send one of their ids.',
    });
  }
  // Each once, shortened as the body's own param and message are, and at most MAX_VIOLATIONS of them (a body of
  // thousands of unknown fields would otherwise be answered with thousands).
  const violations = new Map<string, { param: string; message: string }>();
  for (const each of errors) {
    if (each.keyword === 'parse') continue;
    const violation = violationOf(meta, each);
    const [param, message] = [clipped(violation.param), clipped(violation.message)];
    violations.set(`${param}\u0000${message}`, { param, message });
  }
  const listed = [...violations.values()];
  const details = {
    violations: listed.slice(0, MAX_VIOLATIONS),
    ...(listed.length > MAX_VIOLATIONS ? { violations_not_listed: listed.length - MAX_VIOLATIONS } : {}),
  };
  return new ApiError('validation_error', first.message, { param: first.param, suggestion: first.suggestion, details });
}

interface CompiledValidator {
  (data: unknown): boolean;
  errors?: AjvError[] | null;
}

export interface RawRequest {
  params: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
  /** Lower-case header names, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/**
 * Validates a request with the validators openapi-backend compiled for the operation (JSON Schema 2020-12,
 * query and path parameters coerced to their declared types) and returns the typed query. The parameter
 * object is built here directly: openapi-backend's own request parsing costs more than the validation.
 */
export function validateRequest(contract: Contract, meta: OperationMeta, request: RawRequest): Record<string, unknown> {
  // A repeated parameter would reach the schemas as a list, and be told it "must be string".
  for (const [name, value] of Object.entries(request.query)) {
    if (Array.isArray(value) && meta.singleQuery.has(name)) {
      throw validationError(name, `Parameter ${name} was sent ${value.length} times; it takes one value.`, `Send ${name} once.`);
    }
  }
  for (const [name, type] of meta.numericQuery) {
    const value = request.query[name];
    if (value === undefined) continue;
    const digits = type === 'integer' ? /^-?\d{1,16}$/ : /^-?\d{1,16}(\.\d{1,16})?$/;
    // One value: a repeated parameter was refused above.
    if (!digits.test(value as string)) {
      throw validationError(
        name,
        `Parameter ${name} must be written as a decimal ${type}.`,
        `See the ${meta.operationId} operation in the API reference for what ${name} accepts.`,
      );
    }
  }
  const validators = (contract.api.validator.getRequestValidatorsForOperation(meta.operationId) ?? []) as CompiledValidator[];
  const parameters: Record<string, unknown> = {
    path: { ...request.params },
    query: { ...request.query },
    header: request.headers,
    cookie: {},
  };
  if (meta.hasJsonBody || meta.hasFormBody) parameters.requestBody = request.body;
  for (const validate of validators) {
    if (!validate(parameters)) throw requestValidationError(meta, validate.errors ?? []);
  }
  return parameters.query as Record<string, unknown>;
}
