// Reading the bundled contract in tests: operations, responses, named examples, schema validation
// (Ajv, JSON Schema 2020-12, strict), an SSE parser, and the coverage check.
// Every function takes the document as an argument, so tests can run them on mutated copies.
import { readFileSync } from 'node:fs';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { bundledDocument } from './prism.ts';

// CommonJS modules seen from ESM: the class or function is on `.default`.
const Ajv2020 = Ajv2020Module.default;
const addFormats = addFormatsModule.default;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
export type OpenApiDocument = JsonObject & { paths: Record<string, JsonObject> };

export const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
export type HttpMethod = (typeof httpMethods)[number];

/** A fresh copy of the bundled document (safe to mutate). */
export function loadDocument(path = bundledDocument): OpenApiDocument {
  return JSON.parse(readFileSync(path, 'utf8')) as OpenApiDocument;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const escapeToken = (token: string) => token.replaceAll('~', '~0').replaceAll('/', '~1');
const unescapeToken = (token: string) => token.replaceAll('~1', '/').replaceAll('~0', '~');

/** JSON pointer (`#/a/b~1c`) of a path of keys. */
export function pointer(...tokens: string[]): string {
  return `#${tokens.map((token) => `/${escapeToken(token)}`).join('')}`;
}

export function get(doc: OpenApiDocument, at: string): Json | undefined {
  if (!at.startsWith('#')) throw new Error(`Only local references are supported, not ${at}`);
  let node: Json | undefined = doc;
  for (const token of at.slice(1).split('/').slice(1).map(unescapeToken)) {
    if (Array.isArray(node)) node = node[Number(token)];
    else if (isObject(node)) node = node[token];
    else return undefined;
  }
  return node;
}

/** Follows `$ref`s from `value` (found at `at`) to an object; returns it with its own pointer. */
export function deref(doc: OpenApiDocument, value: Json | undefined, at: string): { value: JsonObject; at: string } {
  const seen = new Set<string>();
  while (isObject(value) && typeof value.$ref === 'string') {
    if (seen.has(value.$ref)) throw new Error(`Reference cycle at ${value.$ref}`);
    seen.add(value.$ref);
    at = value.$ref;
    value = get(doc, at);
  }
  if (!isObject(value)) throw new Error(`${at} does not resolve to an object`);
  return { value, at };
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  object: JsonObject;
}

export interface Operation {
  operationId: string;
  method: HttpMethod;
  path: string;
  at: string;
  object: JsonObject;
  parameters: Parameter[];
}

export function listOperations(doc: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [path, rawItem] of Object.entries(doc.paths)) {
    const item = deref(doc, rawItem, pointer('paths', path));
    for (const method of httpMethods) {
      if (!isObject(item.value[method])) continue;
      const at = `${item.at}/${method}`;
      const object = item.value[method];
      // Operation-level parameters override path-level ones with the same name and location.
      const byKey = new Map<string, Parameter>();
      for (const [list, listAt] of [
        [item.value.parameters, `${item.at}/parameters`],
        [object.parameters, `${at}/parameters`],
      ] as const) {
        if (!Array.isArray(list)) continue;
        list.forEach((raw, index) => {
          const { value } = deref(doc, raw, `${listAt}/${index}`);
          const parameter: Parameter = {
            name: String(value.name),
            in: value.in as Parameter['in'],
            required: value.required === true,
            object: value,
          };
          byKey.set(`${parameter.in}:${parameter.name}`, parameter);
        });
      }
      operations.push({
        operationId: typeof object.operationId === 'string' ? object.operationId : `${method} ${path}`,
        method,
        path,
        at,
        object,
        parameters: [...byKey.values()],
      });
    }
  }
  return operations;
}

export interface NamedExample {
  name: string;
  value: Json;
  /** Where the example is written (its component, when shared). */
  at: string;
}

export interface MediaEntry {
  mediaType: string;
  /** Pointer of the media type object, after following the response's or request body's `$ref`. */
  at: string;
  schemaAt: string | undefined;
  examples: NamedExample[];
  /** Problems found while reading the examples (an `externalValue`, a reference to nothing). */
  problems: string[];
}

function mediaEntries(doc: OpenApiDocument, content: Json | undefined, contentAt: string): MediaEntry[] {
  if (!isObject(content)) return [];
  return Object.entries(content).map(([mediaType, raw]) => {
    const media = deref(doc, raw, `${contentAt}/${escapeToken(mediaType)}`);
    const examples: NamedExample[] = [];
    const problems: string[] = [];
    if (isObject(media.value.examples)) {
      for (const [name, rawExample] of Object.entries(media.value.examples)) {
        try {
          const example = deref(doc, rawExample, `${media.at}/examples/${escapeToken(name)}`);
          if ('value' in example.value) examples.push({ name, value: example.value.value as Json, at: example.at });
          else problems.push(`${example.at}: example "${name}" has no inline value (externalValue is not checked)`);
        } catch (error) {
          problems.push(`${media.at}/examples/${escapeToken(name)}: ${(error as Error).message}`);
        }
      }
    }
    return {
      mediaType,
      at: media.at,
      schemaAt: media.value.schema === undefined ? undefined : `${media.at}/schema`,
      examples,
      problems,
    };
  });
}

export interface ResponseEntry {
  status: string;
  /** The response object's own pointer (its component when shared). */
  at: string;
  object: JsonObject;
  content: MediaEntry[];
}

export function responsesOf(doc: OpenApiDocument, operation: Operation): ResponseEntry[] {
  const responses = operation.object.responses;
  if (!isObject(responses)) return [];
  return Object.entries(responses).map(([status, raw]) => {
    const response = deref(doc, raw, `${operation.at}/responses/${escapeToken(status)}`);
    return {
      status,
      at: response.at,
      object: response.value,
      content: mediaEntries(doc, response.value.content, `${response.at}/content`),
    };
  });
}

export function requestBodyOf(doc: OpenApiDocument, operation: Operation): { at: string; required: boolean; content: MediaEntry[] } | undefined {
  if (operation.object.requestBody === undefined) return undefined;
  const body = deref(doc, operation.object.requestBody, `${operation.at}/requestBody`);
  return {
    at: body.at,
    required: body.value.required === true,
    content: mediaEntries(doc, body.value.content, `${body.at}/content`),
  };
}

export const isSuccess = (status: string) => /^2\d\d$/.test(status);

/**
 * Whether the operation is a list: a GET whose 200 answers the envelope `{data: [...], pagination}` (the shared
 * `Pagination`), as the client's `ListOperations` type says at compile time.
 */
export function isListOperation(doc: OpenApiDocument, operation: Operation): boolean {
  if (operation.method !== 'get') return false;
  const ok = responsesOf(doc, operation).find((response) => response.status === '200');
  const schemaAt = ok?.content.find((media) => media.mediaType === 'application/json')?.schemaAt;
  if (schemaAt === undefined) return false;
  const schema = deref(doc, get(doc, schemaAt), schemaAt).value;
  const properties = isObject(schema.properties) ? schema.properties : {};
  const data = isObject(properties.data) ? deref(doc, properties.data, `${schemaAt}/properties/data`).value : undefined;
  return data?.type === 'array' && isObject(properties.pagination) && properties.pagination.$ref === pointer('components', 'schemas', 'Pagination');
}

/** The first of each group of cases with the same key (a shared response is checked once, not once per user). */
export function distinctBy<T>(cases: T[], key: (each: T) => string): T[] {
  const seen = new Set<string>();
  return cases.filter((each) => {
    const name = key(each);
    if (seen.has(name)) return false;
    seen.add(name);
    return true;
  });
}

/**
 * Every way the document can be left untested. Empty when:
 * - every response and request body with content has at least one named example per media type
 *   (inline or through its shared component), each with an inline `value`;
 * - every operation is exercised (its operationId is in `exercised`), and nothing exercised is unknown.
 */
export function checkCoverage(doc: OpenApiDocument, exercised: Iterable<string>): string[] {
  const problems: string[] = [];
  const operations = listOperations(doc);
  const exercisedIds = new Set(exercised);
  const documentIds = new Set<string>();
  for (const operation of operations) {
    const label = `${operation.operationId} (${operation.method.toUpperCase()} ${operation.path})`;
    if (typeof operation.object.operationId !== 'string') problems.push(`${label}: no operationId`);
    documentIds.add(operation.operationId);
    if (!exercisedIds.has(operation.operationId)) {
      problems.push(`${label}: not exercised by the contract tests (add it to the call table)`);
    }
    const body = requestBodyOf(doc, operation);
    for (const media of body?.content ?? []) {
      problems.push(...media.problems);
      if (media.examples.length === 0) {
        problems.push(`${label}: request body ${media.mediaType} has no named example (${media.at})`);
      }
    }
    for (const response of responsesOf(doc, operation)) {
      for (const media of response.content) {
        problems.push(...media.problems);
        if (media.examples.length === 0) {
          problems.push(`${label}: response ${response.status} ${media.mediaType} has no named example (${media.at})`);
        }
      }
    }
  }
  for (const id of exercisedIds) {
    if (!documentIds.has(id)) problems.push(`${id}: exercised by the tests but not an operation of the document`);
  }
  return [...new Set(problems)];
}

/** Validates values against schemas of the document, by pointer (`#/components/schemas/Cluster`). */
export class SchemaValidator {
  static readonly documentId = 'https://contract.test/openapi.json';
  readonly #ajv;
  readonly #cache = new Map<string, ReturnType<InstanceType<typeof Ajv2020>['compile']>>();

  constructor(doc: OpenApiDocument) {
    // Strict: an unknown keyword, format or a type mistake in a schema fails the tests instead of being ignored.
    this.#ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
    addFormats(this.#ajv);
    // The OpenAPI document around the schemas, and the contract's own extensions, are not JSON Schema.
    const extensions = new Set<string>();
    const collect = (node: Json) => {
      if (Array.isArray(node)) node.forEach(collect);
      else if (isObject(node))
        for (const [key, value] of Object.entries(node)) {
          if (key.startsWith('x-')) extensions.add(key);
          collect(value);
        }
    };
    collect(doc);
    const annotations = ['openapi', 'info', 'servers', 'security', 'tags', 'paths', 'components', 'webhooks'];
    for (const keyword of [...annotations, 'jsonSchemaDialect', 'externalDocs', 'example', 'discriminator', 'xml']) this.#ajv.addKeyword(keyword);
    for (const keyword of extensions) this.#ajv.addKeyword(keyword);
    this.#ajv.addSchema(structuredClone(doc), SchemaValidator.documentId);
  }

  /** Error messages; empty when `value` is valid against the schema at `schemaAt`. */
  errors(schemaAt: string, value: unknown): string[] {
    let validate = this.#cache.get(schemaAt);
    if (!validate) {
      validate = this.#ajv.compile({ $ref: `${SchemaValidator.documentId}${schemaAt}` });
      this.#cache.set(schemaAt, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map((error) => `${error.instancePath || '(root)'} ${error.message ?? error.keyword} ${JSON.stringify(error.params)}`);
  }
}

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/**
 * Parses a text/event-stream body as the HTML standard does (fields `event`, `data`, `id`; comments and
 * unknown fields ignored; an event is dispatched at a blank line, and only when it has data).
 */
export function parseSse(text: string): { events: SseEvent[]; comments: string[]; trailing: string } {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  // Whatever follows the last line break is an unterminated line, not dispatched.
  const trailing = lines.pop() ?? '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  for (const line of lines) {
    if (line === '') {
      if (data.length > 0) events.push({ event: event || 'message', data: data.join('\n'), ...(id === undefined ? {} : { id }) });
      event = '';
      data = [];
      id = undefined;
      continue;
    }
    if (line.startsWith(':')) {
      comments.push(line.slice(1).trim());
      continue;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) id = value;
  }
  // Data not followed by a blank line is never dispatched by a browser: report it as trailing.
  const pending = data.length > 0 ? `${data.map((line) => `data: ${line}`).join('\n')}\n` : '';
  return { events, comments, trailing: pending + trailing };
}

/**
 * The schema of each event's data in a text/event-stream response, read from the stream schema's
 * `contentSchema` (an array of event schemas, as the OpenAPI media type registry models an event stream): each
 * event schema of its items' `oneOf` fixes `event` with a one-value `enum` and gives `data`. Returns event name → pointer
 * of the data schema (the component it references, when it references one).
 */
export function eventDataSchemas(doc: OpenApiDocument, streamSchemaAt: string): Map<string, string> {
  const stream = deref(doc, get(doc, streamSchemaAt), streamSchemaAt);
  const result = new Map<string, string>();
  const content = stream.value.contentSchema;
  if (!isObject(content) || !isObject(content.items)) return result;
  const item = deref(doc, content.items, `${stream.at}/contentSchema/items`);
  const variants = Array.isArray(item.value.oneOf) ? item.value.oneOf : [item.value];
  for (const [index, variant] of variants.entries()) {
    const event = deref(doc, variant, `${item.at}/oneOf/${index}`);
    const properties = isObject(event.value.properties) ? event.value.properties : {};
    // One value: a one-value `enum` (generators keep it a literal type where some make `const` any).
    const tag = isObject(properties.event) ? properties.event : undefined;
    const name = tag && Array.isArray(tag.enum) && tag.enum.length === 1 ? tag.enum[0] : tag?.const;
    if (typeof name !== 'string' || !isObject(properties.data)) continue;
    const data = properties.data;
    result.set(name, typeof data.$ref === 'string' ? data.$ref : `${event.at}/properties/data`);
  }
  return result;
}

/** A value for a parameter from the contract: its `example`, first named example, or schema example/default. */
export function parameterExample(parameter: Parameter): Json | undefined {
  const { object } = parameter;
  if (object.example !== undefined) return object.example;
  if (isObject(object.examples)) {
    const first = Object.values(object.examples)[0];
    if (isObject(first) && first.value !== undefined) return first.value;
  }
  const schema = object.schema;
  if (isObject(schema)) {
    if (schema.example !== undefined) return schema.example;
    if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0] as Json;
    if (schema.default !== undefined) return schema.default;
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0] as Json;
  }
  return undefined;
}

/** A regular expression matching the encoded request paths of a path template. */
export function pathPattern(template: string): RegExp {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}
