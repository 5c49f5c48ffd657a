// Every named example of the contract is a test. Prism serves examples without checking them, so each one is
// requested from the mock (`Prefer: code=<status>, example=<name>`) and both the example and what the mock
// returns are validated against the schema of their response (or request body). The log stream's example is
// parsed as Server-Sent Events, and each event's data validated against the schema its event names.
import { describe, expect, test } from 'vitest';
import { useMockPrism } from '../support/mock-prism.ts';
import {
  deref,
  distinctBy,
  eventDataSchemas,
  get,
  isObject,
  isSuccess,
  type Json,
  listOperations,
  loadDocument,
  type MediaEntry,
  type NamedExample,
  type Operation,
  parameterExample,
  parseSse,
  pointer,
  type ResponseEntry,
  requestBodyOf,
  responsesOf,
  SchemaValidator,
} from '../support/openapi.ts';

const doc = loadDocument();
const validator = new SchemaValidator(doc);
const operations = listOperations(doc);
const token = 'svc_pat_8fKq2LmN4pR7sT1vW3xY5zA9bC0dE2gH6jK1';

const prism = useMockPrism();

/**
 * A request the mock accepts for the operation: parameters from the contract's examples, and `body` or else
 * the first example of the JSON request body.
 */
function requestFor(operation: Operation, accept: string, prefer: string, body?: Json): Request {
  let path = operation.path;
  const url = new URL('http://mock.invalid');
  const headers = new Headers({ authorization: `Bearer ${token}`, accept, prefer });
  for (const parameter of operation.parameters) {
    if (parameter.in !== 'path' && !parameter.required) continue;
    const value = parameterExample(parameter);
    if (value === undefined) throw new Error(`${operation.operationId}: parameter ${parameter.name} has no example`);
    if (parameter.in === 'path') path = path.replace(`{${parameter.name}}`, encodeURIComponent(String(value)));
    else if (parameter.in === 'query') url.searchParams.set(parameter.name, String(value));
    else if (parameter.in === 'header') headers.set(parameter.name, String(value));
  }
  const json = requestBodyOf(doc, operation)?.content.find((media) => media.mediaType === 'application/json');
  body ??= json?.examples[0]?.value;
  if (body !== undefined) headers.set('content-type', 'application/json');
  return new Request(`${prism.url}${path}${url.search}`, {
    method: operation.method.toUpperCase(),
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** Sends the request; fails when Prism reports that the request itself breaks the contract. */
async function send(request: Request): Promise<Response> {
  const response = await fetch(request);
  const violations = response.headers.get('sl-violations');
  expect(violations, `Prism found the request invalid: ${violations}`).toBeNull();
  return response;
}

/** Every header the response documents is sent, with a value its schema accepts. */
function expectDocumentedHeaders(response: Response, entry: ResponseEntry): void {
  if (!isObject(entry.object.headers)) return;
  for (const [name, raw] of Object.entries(entry.object.headers)) {
    const header = deref(doc, raw, `${entry.at}/headers/${name}`);
    const value = response.headers.get(name);
    expect(value, `header ${name}`).not.toBeNull();
    const schema = isObject(header.value.schema) ? header.value.schema : {};
    const typed = schema.type === 'integer' || schema.type === 'number' ? Number(value) : value;
    expect(validator.errors(`${header.at}/schema`, typed), `header ${name}: ${value}`).toEqual([]);
  }
}

function expectValidEventStream(text: string, media: MediaEntry): void {
  const { events, trailing } = parseSse(text);
  expect(trailing, 'the stream ends with a complete event (blank line)').toBe('');
  expect(events.length).toBeGreaterThan(0);
  const schemas = eventDataSchemas(doc, media.schemaAt as string);
  const stream = deref(doc, get(doc, media.schemaAt as string), media.schemaAt as string);
  for (const [index, event] of events.entries()) {
    const schemaAt = schemas.get(event.event);
    expect(schemaAt, `event ${index} "${event.event}" has a data schema in the stream's contentSchema`).toBeDefined();
    let data: unknown;
    expect(() => (data = JSON.parse(event.data)), `event ${index} data is JSON: ${event.data}`).not.toThrow();
    expect(validator.errors(schemaAt as string, data), `event ${index} (${event.event}): ${event.data}`).toEqual([]);
    // The event as a whole (its name, id and data) is one of the stream's LogEvent variants.
    const whole = { event: event.event, ...(event.id === undefined ? {} : { id: event.id }), data };
    expect(validator.errors(`${stream.at}/contentSchema/items`, whole), `event ${index}`).toEqual([]);
  }
}

interface ResponseCase {
  operation: Operation;
  response: ResponseEntry;
  media: MediaEntry;
  example: NamedExample;
}

// A shared response (components/responses) is one response object for every operation that declares it, and Prism
// serves it the same way for each: it is requested once, through the first of them (declared-errors.test.ts checks
// that every operation declares the shared responses it must).
const responseCases: ResponseCase[] = distinctBy(
  operations.flatMap((operation) =>
    responsesOf(doc, operation).flatMap((response) =>
      response.content.flatMap((media) => media.examples.map((example) => ({ operation, response, media, example }))),
    ),
  ),
  ({ response, media, example }) => `${response.at} ${media.mediaType} ${example.at}`,
);

describe('response examples, served by the mock', () => {
  test.each(responseCases.map((c) => [`${c.operation.operationId} ${c.response.status} ${c.media.mediaType} "${c.example.name}"`, c] as const))(
    '%s',
    async (_name, { operation, response, media, example }) => {
      // The example itself.
      expect(media.schemaAt, `${media.at} has a schema`).toBeDefined();
      const schemaAt = media.schemaAt as string;
      expect(validator.errors(schemaAt, example.value), `example ${example.at} is invalid`).toEqual([]);

      // What the mock serves for it.
      const served = await send(requestFor(operation, media.mediaType, `code=${response.status}, example=${example.name}`));
      expect(served.status).toBe(Number(response.status));
      expect(served.headers.get('content-type') ?? '').toContain(media.mediaType);
      expectDocumentedHeaders(served, response);
      const text = await served.text();
      if (media.mediaType === 'text/event-stream') {
        expect(text).toBe(example.value);
        expect(validator.errors(schemaAt, text)).toEqual([]);
        expectValidEventStream(text, media);
      } else {
        const body = JSON.parse(text) as Json;
        expect(body).toEqual(example.value);
        expect(validator.errors(schemaAt, body)).toEqual([]);
      }
    },
  );
});

const emptyCases = operations.flatMap((operation) =>
  responsesOf(doc, operation)
    .filter((response) => response.content.length === 0)
    .map((response) => [`${operation.operationId} ${response.status} (no body)`, { operation, response }] as const),
);

describe('responses without a body, served by the mock', () => {
  test.each(emptyCases)('%s', async (_name, { operation, response }) => {
    const served = await send(requestFor(operation, '*/*', `code=${response.status}`));
    expect(served.status).toBe(Number(response.status));
    expectDocumentedHeaders(served, response);
    expect(await served.text()).toBe('');
  });
});

const requestCases = operations.flatMap((operation) =>
  (requestBodyOf(doc, operation)?.content ?? []).flatMap((media) =>
    media.examples.map((example) => [`${operation.operationId} ${media.mediaType} "${example.name}"`, { operation, media, example }] as const),
  ),
);

describe('request body examples, accepted by the mock', () => {
  test.each(requestCases)('%s', async (_name, { operation, media, example }) => {
    expect(media.schemaAt, `${media.at} has a schema`).toBeDefined();
    expect(validator.errors(media.schemaAt as string, example.value), `example ${example.at} is invalid`).toEqual([]);

    const success = responsesOf(doc, operation).find((response) => isSuccess(response.status));
    expect(success, `${operation.operationId} documents a 2xx response`).toBeDefined();
    const served = await send(requestFor(operation, '*/*', `code=${success?.status}`, example.value));
    expect(served.status).toBe(Number(success?.status));
    await served.body?.cancel();
  });
});

describe('the log stream', () => {
  test('the stream schema, its LogEvent variants, their discriminator and its grammar agree on LogLine, LogStreamEnd and StreamAccessEnded', () => {
    const logs = operations.find((operation) => operation.operationId === 'streamInstallLogs');
    const media = logs && responsesOf(doc, logs).find((r) => r.status === '200')?.content[0];
    expect(media?.mediaType).toBe('text/event-stream');
    expect(Object.fromEntries(eventDataSchemas(doc, media?.schemaAt as string))).toEqual({
      log: pointer('components', 'schemas', 'LogLine'),
      end: pointer('components', 'schemas', 'LogStreamEnd'),
      access_ended: pointer('components', 'schemas', 'StreamAccessEnded'),
    });
    // The discriminator maps each event name to the variant whose `event` is that one value.
    const event = deref(doc, { $ref: pointer('components', 'schemas', 'LogEvent') }, '');
    const mapping = (event.value.discriminator as { mapping: Record<string, string> }).mapping;
    for (const [name, at] of Object.entries(mapping)) {
      expect(get(doc, `${at}/properties/event/enum`), `discriminator ${name}`).toEqual([name]);
    }
    expect(Object.keys(mapping).sort()).toEqual(['access_ended', 'end', 'log']);
    // The stream's description gives the wire grammar: each event's data is the component named there.
    const stream = deref(doc, get(doc, media?.schemaAt as string), media?.schemaAt as string);
    expect(stream.value.description).toMatch(/"event: log" LF "data: " LogLine-JSON/);
    expect(stream.value.description).toMatch(/"event: end" LF "data: " LogStreamEnd-JSON/);
    expect(stream.value.description).toMatch(/"event: access_ended" LF "data: " StreamAccessEnded-JSON/);
  });

  test('the SSE check rejects a log line that breaks LogLine, and an unterminated event', () => {
    const logs = operations.find((operation) => operation.operationId === 'streamInstallLogs') as Operation;
    const media = responsesOf(doc, logs).find((r) => r.status === '200')?.content[0] as MediaEntry;
    const bad = 'id: 1\nevent: log\ndata: {"pod":"p","container":"c","line":"no timestamp"}\n\n';
    expect(() => expectValidEventStream(bad, media)).toThrow(/timestamp/);
    expect(() => expectValidEventStream('event: end\ndata: {"reason":"backlog_sent"}\n', media)).toThrow(/blank line/);
  });
});
