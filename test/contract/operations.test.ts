// Every operation of the contract, called through @platform/client against the Prism mock: the request the
// client sends is one Prism accepts for that operation, and what comes back (on the wire and as the client
// returns it) validates against the operation's documented response. Then every documented error example,
// picked with Prism's `Prefer` header, must reach the caller as a PlatformApiError with the body's fields: a shared
// error response (components/responses) once for each way the client sends (HTTP method, stream or not), since
// every operation's call goes through the same code for it; declared-errors.test.ts checks that every operation
// declares the shared responses it must.
import { createPlatformClient, PlatformApiError } from '@platform/client';
import { describe, expect, test } from 'vitest';
import { useMockPrism } from '../support/mock-prism.ts';
import {
  distinctBy,
  eventDataSchemas,
  isSuccess,
  type Json,
  listOperations,
  loadDocument,
  type Operation,
  parseSse,
  pathPattern,
  responsesOf,
  SchemaValidator,
} from '../support/openapi.ts';
import { calls } from './calls.ts';

const doc = loadDocument();
const validator = new SchemaValidator(doc);
const operations = listOperations(doc);
const token = 'svc_pat_8fKq2LmN4pR7sT1vW3xY5zA9bC0dE2gH6jK1';

const prism = useMockPrism();

interface Exchange {
  method: string;
  url: URL;
  requestHeaders: Headers;
  status: number;
  headers: Headers;
  /** The response body as sent, read from a clone so the client's own reading is untouched. */
  text: Promise<string>;
}

/** A fetch that records every exchange the client makes (and adds `prefer`, to pick Prism's answer). */
function recordingFetch(exchanges: Exchange[], prefer?: string): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    if (prefer) request.headers.set('prefer', prefer);
    const response = await fetch(request.clone());
    exchanges.push({
      method: request.method,
      url: new URL(request.url),
      requestHeaders: request.headers,
      status: response.status,
      headers: response.headers,
      text: response.clone().text(),
    });
    return response;
  };
}

test('the call table has an entry for every operation of the document', () => {
  expect(Object.keys(calls).sort()).toEqual(operations.map((operation) => operation.operationId).sort());
});

describe('every operation through the client against the mock', () => {
  test.each(operations.map((operation) => [`${operation.operationId}: ${operation.method.toUpperCase()} ${operation.path}`, operation] as const))(
    '%s',
    async (_name, operation) => {
      const call = calls[operation.operationId as keyof typeof calls];
      expect(call, `no entry for ${operation.operationId} in test/contract/calls.ts`).toBeDefined();
      const exchanges: Exchange[] = [];
      const api = createPlatformClient({ baseUrl: prism.url, token, fetch: recordingFetch(exchanges) });

      const result = await call(api);

      // One request, to this operation, accepted by Prism as valid for it.
      expect(exchanges, 'one HTTP request per call').toHaveLength(1);
      const [exchange] = exchanges as [Exchange];
      expect(exchange.method).toBe(operation.method.toUpperCase());
      expect(exchange.url.pathname).toMatch(pathPattern(operation.path));
      expect(exchange.requestHeaders.get('authorization')).toBe(`Bearer ${token}`);
      const violations = exchange.headers.get('sl-violations');
      expect(violations, `Prism found the request invalid: ${violations}`).toBeNull();

      // A documented success response, valid against its schema, and returned as such by the client.
      const response = responsesOf(doc, operation).find((entry) => entry.status === String(exchange.status));
      expect(response && isSuccess(response.status), `status ${exchange.status} is a documented 2xx`).toBe(true);
      const text = await exchange.text;
      const media = response?.content.find((entry) => (exchange.headers.get('content-type') ?? '').includes(entry.mediaType));
      if (!response?.content.length) {
        expect(text).toBe('');
        expect(result).toBeUndefined();
        return;
      }
      expect(media, `content type ${exchange.headers.get('content-type')} is documented`).toBeDefined();
      const schemaAt = media?.schemaAt as string;
      if (media?.mediaType === 'text/event-stream') {
        const schemas = eventDataSchemas(doc, schemaAt);
        const { events } = parseSse(text);
        expect(events.length).toBeGreaterThan(0);
        // What the client yields is what was sent, each event's data valid against its schema.
        const sent = events.map((event) => ({
          type: event.event,
          ...(event.id === undefined ? {} : { id: event.id }),
          data: JSON.parse(event.data) as Json,
        }));
        // streamEvents yields the data of its one kind of event (an Event), the log stream whole events.
        expect(result).toEqual(operation.operationId === 'streamEvents' ? sent.map((event) => event.data) : sent);
        for (const event of sent) {
          expect(validator.errors(schemas.get(event.type) as string, event.data), `${event.type} event`).toEqual([]);
        }
      } else {
        const body = JSON.parse(text) as Json;
        expect(validator.errors(schemaAt, body)).toEqual([]);
        expect(result).toEqual(body);
      }
    },
  );
});

/** The streams have a client code path of their own (an async generator); every other call goes through `send`. */
const isStream = (operation: Operation) =>
  responsesOf(doc, operation).some((response) => response.content.some((media) => media.mediaType === 'text/event-stream'));

const errorCases = distinctBy(
  operations.flatMap((operation) =>
    responsesOf(doc, operation)
      .filter((response) => !isSuccess(response.status))
      .flatMap((response) => response.content.flatMap((media) => media.examples.map((example) => ({ operation, response, example })))),
  ),
  ({ operation, response, example }) => `${response.at} ${example.at} ${operation.method}${isStream(operation) ? ' stream' : ''}`,
).map(
  (errorCase) => [`${errorCase.operation.operationId} ${errorCase.response.status} "${errorCase.example.name}" (${errorCase.response.at})`, errorCase] as const,
);

type ErrorCase = (typeof errorCases)[number][1];
async function expectApiError({ operation, response, example }: ErrorCase): Promise<void> {
  const call = calls[operation.operationId as keyof typeof calls];
  const exchanges: Exchange[] = [];
  const api = createPlatformClient({
    baseUrl: prism.url,
    token,
    retry: false,
    fetch: recordingFetch(exchanges, `code=${response.status}, example=${example.name}`),
  });
  const error = await call(api).then(
    () => expect.fail('the call resolved'),
    (rejection: unknown) => rejection,
  );
  expect(error).toBeInstanceOf(PlatformApiError);
  // The shared body is {error: {code, message, …}}; the device token endpoint's OAuth 2.0 body (RFC 6749 §5.2)
  // is {error: code, error_description}, which the client reads into the same fields.
  const value = example.value as { error: Record<string, unknown> | string; error_description?: string };
  const body = typeof value.error === 'string' ? { code: value.error, message: value.error_description } : value.error;
  const exchange = exchanges[0] as Exchange;
  expect(exchanges).toHaveLength(1);
  expect(exchange.headers.get('sl-violations')).toBeNull();
  expect({ ...(error as PlatformApiError) }).toMatchObject({
    status: Number(response.status),
    code: body.code,
    param: body.param,
    suggestion: body.suggestion,
    details: body.details,
    requestId: exchange.headers.get('x-request-id'),
  });
  expect((error as PlatformApiError).message).toBe(body.message);
}

describe("every documented error through the client: a PlatformApiError with the body's fields", () => {
  test.each(errorCases)('%s', (_name, errorCase) => expectApiError(errorCase));
});
