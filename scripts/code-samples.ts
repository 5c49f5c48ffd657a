// Request samples for the reference docs, derived from the bundled contract at `pnpm gen` time: every operation
// gets `x-codeSamples` (curl and the TypeScript client), built from its path, its parameters' examples and its
// request body's first example. Nothing here is written per operation.
//
// What a sample shows: the required parameters, `X-Workspace-Id` where the operation reads it, and `limit` on
// lists (the page size every list takes); optional filters are left to the reference beside it.

type Json = Record<string, unknown>;

export interface CodeSample {
  lang: string;
  label: string;
  source: string;
}

/** One operation as the sample writers see it: every value is an example from the contract. */
export interface SampleInput {
  operationId: string;
  method: string;
  path: string;
  baseUrl: string;
  /** False for the operations that take no token (`security: []`). */
  authenticated: boolean;
  pathParams: Record<string, unknown>;
  query: Record<string, unknown>;
  /** The workspace the request names, when the operation takes `X-Workspace-Id`. */
  workspaceId?: string;
  body?: { mediaType: string; value: unknown };
  /** The JSON body for the TypeScript client, which always sends JSON. */
  jsonBody?: unknown;
  /** 204: the call resolves to nothing. */
  noContent: boolean;
  /** The success answer is an event stream (read with the client's stream method). */
  eventStream: boolean;
}

const methods = ['get', 'put', 'post', 'patch', 'delete'] as const;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function resolver(doc: Json) {
  return function resolve(value: unknown): Json {
    let current = value;
    for (let depth = 0; isObject(current) && typeof current.$ref === 'string'; depth++) {
      if (depth > 20 || !current.$ref.startsWith('#/')) throw new Error(`cannot follow ${current.$ref}`);
      current = current.$ref
        .slice(2)
        .split('/')
        .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
        .reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), doc);
    }
    if (!isObject(current)) throw new Error(`expected an object, found ${JSON.stringify(current)}`);
    return current;
  };
}

function exampleOf(holder: Json, resolve: (value: unknown) => Json): unknown {
  if ('example' in holder) return holder.example;
  if (isObject(holder.examples)) {
    const first = Object.values(holder.examples)[0];
    if (first !== undefined) return resolve(first).value;
  }
  if (isObject(holder.schema)) {
    const schema = resolve(holder.schema);
    if ('example' in schema) return schema.example;
    if (Array.isArray(schema.examples)) return schema.examples[0];
    if ('default' in schema) return schema.default;
  }
  return undefined;
}

/** A server's URL with its `{variables}` set to their defaults, as a generator reading `servers[0]` would call it. */
export function serverUrl(server: Json): string {
  const variables = isObject(server.variables) ? server.variables : {};
  return String(server.url).replace(/\{([^}]+)\}/g, (_whole, name: string) => {
    const variable = variables[name];
    if (!isObject(variable) || typeof variable.default !== 'string') throw new Error(`server variable ${name} has no default`);
    return variable.default;
  });
}

/** Gathers what the sample writers need about one operation. */
export function sampleInput(doc: Json, path: string, method: string, pathItem: Json, operation: Json): SampleInput {
  const resolve = resolver(doc);
  const servers = Array.isArray(doc.servers) ? doc.servers : [];
  const baseUrl = isObject(servers[0]) ? serverUrl(servers[0]) : 'http://localhost:8080';
  const operationId = String(operation.operationId);
  const parameters = [
    ...(Array.isArray(pathItem.parameters) ? pathItem.parameters : []),
    ...(Array.isArray(operation.parameters) ? operation.parameters : []),
  ].map(resolve);
  const input: SampleInput = {
    operationId,
    method,
    path,
    baseUrl,
    authenticated: !(Array.isArray(operation.security) && operation.security.length === 0),
    pathParams: {},
    query: {},
    noContent: false,
    eventStream: false,
  };
  for (const parameter of parameters) {
    const name = String(parameter.name);
    const example = exampleOf(parameter, resolve);
    const needed = parameter.required === true;
    if (example === undefined) {
      if (needed) throw new Error(`${operationId}: the required parameter ${name} has no example to show`);
      continue;
    }
    if (parameter.in === 'path') input.pathParams[name] = example;
    else if (parameter.in === 'query' && (needed || name === 'limit')) input.query[name] = example;
    else if (parameter.in === 'header' && name.toLowerCase() === 'x-workspace-id') input.workspaceId = String(example);
    else if (needed) throw new Error(`${operationId}: no sample knows how to send the required ${parameter.in} parameter ${name}`);
  }
  if (operation.requestBody !== undefined) {
    const content = resolve(operation.requestBody).content;
    const types = isObject(content) ? Object.keys(content) : [];
    const first = types[0];
    if (first && isObject(content)) {
      const value = exampleOf(resolve(content[first]), resolve);
      if (value === undefined) throw new Error(`${operationId}: the request body (${first}) has no example to show`);
      input.body = { mediaType: first, value };
      const json = types.find((type) => type === 'application/json');
      if (json) input.jsonBody = exampleOf(resolve(content[json]), resolve);
    }
  }
  const responses = isObject(operation.responses) ? operation.responses : {};
  const success = Object.keys(responses).filter((status) => /^2\d\d$/.test(status));
  input.noContent = success.length > 0 && success.every((status) => status === '204');
  input.eventStream = success.some((status) => {
    const content = resolve(responses[status]).content;
    return isObject(content) && 'text/event-stream' in content;
  });
  return input;
}

// Single quotes for the shell: nothing inside is expanded.
const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

function queryString(query: Record<string, unknown>): string {
  const search = new URLSearchParams(Object.entries(query).map(([name, value]) => [name, String(value)])).toString();
  return search ? `?${search}` : '';
}

function fillPath(path: string, values: Record<string, unknown>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(String(values[name])));
}

export function curlSample(input: SampleInput): string {
  const lines = [
    `curl${input.method === 'get' ? '' : ` -X ${input.method.toUpperCase()}`}${input.eventStream ? ' -N' : ''} ${shellQuote(`${input.baseUrl}${fillPath(input.path, input.pathParams)}${queryString(input.query)}`)}`,
  ];
  // Double quotes so that the shell puts the token in.
  if (input.authenticated) lines.push('-H "Authorization: Bearer $PLATFORM_TOKEN"');
  if (input.workspaceId) lines.push(`-H ${shellQuote(`X-Workspace-Id: ${input.workspaceId}`)}`);
  if (input.eventStream) lines.push(`-H ${shellQuote('Accept: text/event-stream')}`);
  if (input.body) {
    const { mediaType, value } = input.body;
    if (mediaType === 'application/x-www-form-urlencoded' && isObject(value)) {
      for (const [name, field] of Object.entries(value)) lines.push(`--data-urlencode ${shellQuote(`${name}=${String(field)}`)}`);
    } else {
      lines.push(`-H ${shellQuote(`Content-Type: ${mediaType}`)}`);
      lines.push(`-d ${shellQuote(JSON.stringify(value, null, 2))}`);
    }
  }
  return lines.join(' \\\n  ');
}

// TypeScript literals: identifier keys bare, strings single-quoted; on one line when short, else indented.
const width = 100;

function objectLiteral(entries: string[], indent: string): string {
  if (entries.length === 0) return '{}';
  const line = `{ ${entries.join(', ')} }`;
  if (!line.includes('\n') && indent.length + line.length <= width) return line;
  return `{\n${entries.map((entry) => `${indent}  ${entry},`).join('\n')}\n${indent}}`;
}

function literal(value: unknown, indent = ''): string {
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const items = value.map((item) => literal(item, inner));
    const line = `[${items.join(', ')}]`;
    if (!line.includes('\n') && indent.length + line.length <= width) return line;
    return `[\n${items.map((item) => `${inner}${item},`).join('\n')}\n${indent}]`;
  }
  if (isObject(value)) {
    const key = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : literal(name));
    return objectLiteral(
      Object.entries(value).map(([name, item]) => `${key(name)}: ${literal(item, inner)}`),
      indent,
    );
  }
  if (typeof value === 'string') return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll('\n', '\\n')}'`;
  return JSON.stringify(value) ?? 'undefined';
}

/**
 * The TypeScript client's call (packages/client): the path-based methods, which resolve to the success body and
 * throw a PlatformError otherwise; the event stream through the client's method named after the operation.
 * This function alone decides the call's shape.
 */
export function typescriptSample(input: SampleInput): string {
  const options = [`baseUrl: ${literal(input.baseUrl)}`];
  if (input.authenticated) options.push('token: process.env.PLATFORM_TOKEN');
  if (input.workspaceId) options.push(`workspaceId: ${literal(input.workspaceId)}`);
  const head = ["import { createPlatformClient } from '@platform/client';", '', `const api = createPlatformClient(${objectLiteral(options, '')});`];
  if (input.eventStream) {
    const [first, ...rest] = Object.values(input.pathParams);
    if (rest.length > 0) throw new Error(`${input.operationId}: a stream sample takes one path parameter`);
    const streamOptions = Object.keys(input.query).length > 0 ? `, ${literal(input.query)}` : '';
    return [...head, `for await (const event of api.${input.operationId}(${literal(first)}${streamOptions})) {`, '  console.log(event);', '}'].join('\n');
  }
  // The operation-named method: path and query parameters by name and the body, in one object.
  const init: Json = { ...input.pathParams, ...input.query };
  if (input.body) init.body = input.jsonBody ?? input.body.value;
  const call = `await api.${input.operationId}(${Object.keys(init).length > 0 ? literal(init) : ''});`;
  return [...head, ...(input.noContent ? [call] : [`const result = ${call}`, 'console.log(result);'])].join('\n');
}

/**
 * Redoc's `codeSamples.languages` option: the languages its sample menu offers. A sample shows only when its label
 * (or lang) names one of them.
 */
export const codeSampleLanguages = [
  { lang: 'curl', label: 'curl' },
  { lang: 'TypeScript', label: 'TypeScript client' },
];

/** The samples of one operation, in the order the docs show them. */
export function codeSamples(input: SampleInput): CodeSample[] {
  return [
    { lang: 'Shell', label: 'curl', source: curlSample(input) },
    { lang: 'TypeScript', label: 'TypeScript client', source: typescriptSample(input) },
  ];
}

/** A copy of the bundled document with `x-codeSamples` on every operation. */
export function withCodeSamples(doc: Json): Json {
  const copy = structuredClone(doc);
  const paths = isObject(copy.paths) ? copy.paths : {};
  for (const [path, pathItem] of Object.entries(paths)) {
    if (!isObject(pathItem)) continue;
    for (const method of methods) {
      const operation = pathItem[method];
      if (isObject(operation)) operation['x-codeSamples'] = codeSamples(sampleInput(copy, path, method, pathItem, operation));
    }
  }
  return copy;
}
