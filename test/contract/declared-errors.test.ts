// Every operation declares the error responses the server can send it whatever its handler does (the rules of
// openapi/README.md, step 3). The shared responses themselves are checked once each (examples.test.ts through the
// mock, operations.test.ts through the client); this is what makes once enough: an operation that stops declaring
// one fails here. The check is a pure function of the document, also run on mutated copies to show it can fail.
import { describe, expect, test } from 'vitest';
import { isObject, type Json, type JsonObject, listOperations, loadDocument, type OpenApiDocument, type Operation, requestBodyOf } from '../support/openapi.ts';

/** Who needs a token: the operation's own `security`, else the document's; `{}` among them means none is needed. */
function needsToken(doc: OpenApiDocument, operation: Operation): boolean {
  const security = (operation.object.security ?? doc.security) as Json;
  return Array.isArray(security) && security.length > 0 && !security.some((entry) => isObject(entry) && Object.keys(entry).length === 0);
}

/** Each status an operation must declare, and why. */
const RULES: { status: string; why: string; applies(doc: OpenApiDocument, operation: Operation): boolean }[] = [
  { status: '500', why: 'any request can fail unexpectedly', applies: () => true },
  { status: '415', why: 'Content-Type and Content-Encoding are checked before routing', applies: () => true },
  { status: '429', why: 'every request counts against the rate limit', applies: () => true },
  { status: '503', why: 'the database can be unreachable or the server draining', applies: () => true },
  { status: '401', why: 'it needs a token', applies: needsToken },
  // Ending one's own session needs no role and no scope.
  { status: '403', why: 'it needs a role or a scope', applies: (doc, op) => needsToken(doc, op) && op.operationId !== 'logout' },
  { status: '404', why: 'it addresses something by a path parameter', applies: (_doc, op) => op.parameters.some((p) => p.in === 'path') },
  { status: '422', why: 'its path parameters are validated', applies: (_doc, op) => op.parameters.some((p) => p.in === 'path') },
  { status: '400', why: 'its body may be malformed JSON', applies: (doc, op) => requestBodyOf(doc, op) !== undefined },
  { status: '413', why: 'its body may be too large', applies: (doc, op) => requestBodyOf(doc, op) !== undefined },
];

/** One line per missing declaration; empty when every operation declares what it must. */
function undeclaredErrors(doc: OpenApiDocument): string[] {
  return listOperations(doc).flatMap((operation) => {
    const declared = isObject(operation.object.responses) ? operation.object.responses : {};
    return RULES.filter((rule) => rule.applies(doc, operation) && !(rule.status in declared)).map(
      (rule) => `${operation.operationId}: declares no ${rule.status} (${rule.why})`,
    );
  });
}

function responsesAt(doc: OpenApiDocument, path: string, method: string): JsonObject {
  const operation = doc.paths[path]?.[method];
  if (!isObject(operation) || !isObject(operation.responses)) throw new Error(`no responses at ${method} ${path}`);
  return operation.responses;
}

test('every operation declares the error responses the server can send it', () => {
  expect(undeclaredErrors(loadDocument())).toEqual([]);
});

test('each rule applies to some operation (none is vacuous)', () => {
  const doc = loadDocument();
  const operations = listOperations(doc);
  for (const rule of RULES) expect(operations.filter((op) => rule.applies(doc, op)).length, `${rule.status}: ${rule.why}`).toBeGreaterThan(1);
});

describe('the check fails', () => {
  test('when an operation with a path parameter stops declaring 404', () => {
    const doc = loadDocument();
    delete responsesAt(doc, '/v1/clusters/{clusterId}', 'get')['404'];
    expect(undeclaredErrors(doc)).toEqual(['getCluster: declares no 404 (it addresses something by a path parameter)']);
  });

  test('when an operation with a body stops declaring 413', () => {
    const doc = loadDocument();
    delete responsesAt(doc, '/v1/workspaces', 'post')['413'];
    expect(undeclaredErrors(doc)).toEqual(['createWorkspace: declares no 413 (its body may be too large)']);
  });

  test('when an operation needing a token stops declaring 401 or 429', () => {
    const doc = loadDocument();
    const responses = responsesAt(doc, '/v1/regions', 'get');
    delete responses['401'];
    delete responses['429'];
    expect(undeclaredErrors(doc)).toEqual([
      'listRegions: declares no 429 (every request counts against the rate limit)',
      'listRegions: declares no 401 (it needs a token)',
    ]);
  });
});
