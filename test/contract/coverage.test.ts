// Nothing in the contract goes untested: every operation is in the call table (written, or derived for a list),
// and every response and request body with content has a named example (which examples.test.ts then validates
// through the mock). The check is a pure function of the document; it is also run on mutated copies to show that
// it can fail.
import type { PlatformClient } from '@platform/client';
import { describe, expect, test } from 'vitest';
import { checkCoverage, isListOperation, isObject, type JsonObject, listOperations, loadDocument, type OpenApiDocument } from '../support/openapi.ts';
import { calls, ids, listCalls, writtenCalls } from './calls.ts';

const exercised = Object.keys(calls);

function at(doc: JsonObject, ...keys: string[]): JsonObject {
  let node: unknown = doc;
  for (const key of keys) {
    node = isObject(node) ? node[key] : undefined;
    if (!isObject(node)) throw new Error(`no object at ${keys.join(' > ')}`);
  }
  return node as JsonObject;
}

describe('operation coverage', () => {
  test('the call table has exactly the operationIds of the document', () => {
    const operationIds = listOperations(loadDocument()).map((operation) => operation.operationId);
    expect(new Set(operationIds).size, 'operationIds are unique').toBe(operationIds.length);
    expect([...exercised].sort()).toEqual([...operationIds].sort());
  });

  test('the contract is fully covered', () => {
    expect(checkCoverage(loadDocument(), exercised)).toEqual([]);
  });
});

describe('the coverage check fails', () => {
  test('when an inline response example is deleted', () => {
    const doc = loadDocument();
    delete at(doc, 'paths', '/v1/clusters/{clusterId}', 'get', 'responses', '200', 'content', 'application/json').examples;
    expect(checkCoverage(doc, exercised)).toEqual([
      'getCluster (GET /v1/clusters/{clusterId}): response 200 application/json has no named example ' +
        '(#/paths/~1v1~1clusters~1{clusterId}/get/responses/200/content/application~1json)',
    ]);
  });

  test('when the example of a shared response component is deleted, for every operation using it', () => {
    const doc = loadDocument();
    at(doc, 'components', 'responses', 'NotFound', 'content', 'application/json').examples = {};
    const problems = checkCoverage(doc, exercised);
    const users = listOperations(doc).filter((operation) => {
      const notFound = at(operation.object, 'responses')['404'];
      return isObject(notFound) && notFound.$ref === '#/components/responses/NotFound';
    });
    expect(users.length).toBeGreaterThan(1);
    expect(problems).toHaveLength(users.length);
    for (const problem of problems) {
      expect(problem).toMatch(/: response 404 application\/json has no named example \(#\/components\/responses\/NotFound\//);
    }
  });

  test('when a response has only an unnamed `example`', () => {
    const doc = loadDocument();
    const media = at(doc, 'paths', '/v1/regions', 'get', 'responses', '200', 'content', 'application/json');
    media.example = { data: [], pagination: { cursor: '', has_more: false } };
    delete media.examples;
    expect(checkCoverage(doc, exercised)).toEqual([
      expect.stringMatching(/^listRegions \(GET \/v1\/regions\): response 200 application\/json has no named example/),
    ]);
  });

  test('when a request body example is deleted', () => {
    const doc = loadDocument();
    delete at(doc, 'paths', '/v1/workspaces', 'post', 'requestBody', 'content', 'application/json').examples;
    expect(checkCoverage(doc, exercised)).toEqual([
      expect.stringMatching(/^createWorkspace \(POST \/v1\/workspaces\): request body application\/json has no named example/),
    ]);
  });

  test('when an example points at nothing or has no inline value', () => {
    const doc = loadDocument();
    const examples = at(doc, 'paths', '/v1/regions', 'get', 'responses', '200', 'content', 'application/json', 'examples');
    examples.first_page = { $ref: '#/components/examples/Missing' };
    examples.remote = { externalValue: 'https://example.com/regions.json' };
    const problems = checkCoverage(doc, exercised);
    expect(problems).toContainEqual(expect.stringContaining('#/components/examples/Missing does not resolve'));
    expect(problems).toContainEqual(expect.stringContaining('example "remote" has no inline value'));
  });

  test('when an operation is not exercised by the call table', () => {
    const doc = loadDocument();
    expect(
      checkCoverage(
        doc,
        exercised.filter((id) => id !== 'getQuota'),
      ),
    ).toEqual(['getQuota (GET /v1/quotas/{metric}): not exercised by the contract tests (add it to the call table)']);
  });

  test('when the document gains an operation the table does not know', () => {
    const doc = loadDocument();
    const regions = at(doc, 'paths', '/v1/regions');
    regions.post = { ...at(regions, 'get'), operationId: 'createRegion' };
    expect(checkCoverage(doc, exercised)).toEqual(['createRegion (POST /v1/regions): not exercised by the contract tests (add it to the call table)']);
  });

  test('when the table exercises an operation the document no longer has', () => {
    const doc = loadDocument();
    delete at(doc, 'paths', '/v1/auth/logout').post;
    expect(checkCoverage(doc, exercised)).toEqual(['logout: exercised by the tests but not an operation of the document']);
  });
});

/** The call table a document gets: the written calls, and the derived ones of the lists they leave out. */
const tableOf = (doc: OpenApiDocument): Record<string, (api: PlatformClient) => Promise<unknown>> => ({ ...listCalls(doc, writtenCalls), ...writtenCalls });

/** A client that records which operation-named method each call takes, and with what. */
function recordingClient(seen: [string, unknown][]): PlatformClient {
  return new Proxy({} as PlatformClient, {
    get: (_target, name) => (init: unknown) => {
      seen.push([String(name), init]);
      return Promise.resolve(undefined);
    },
  });
}

/** A copy of the document with a workspace list of suspensions at a path of its own, as a new list would come. */
function withWorkspaceSuspensions(doc: OpenApiDocument): OpenApiDocument {
  const list = structuredClone(at(doc, 'paths', '/v1/compute/suspensions', 'get'));
  list.operationId = 'listWorkspaceSuspensions';
  doc.paths['/v1/workspaces/{workspaceId}/suspensions'] = {
    parameters: [{ $ref: '#/components/parameters/WorkspacePathId' }],
    get: list,
  };
  return doc;
}

describe('the calls of lists are derived from the contract', () => {
  test('every list the written table leaves out, and nothing else, is derived', () => {
    const doc = loadDocument();
    const lists = listOperations(doc).filter((operation) => isListOperation(doc, operation));
    const derived = Object.keys(listCalls(doc, writtenCalls));
    expect(derived.sort()).toEqual(
      lists
        .map((list) => list.operationId)
        .filter((id) => !(id in writtenCalls))
        .sort(),
    );
    // Lists run through a derived call today (operations.test.ts runs them), not only in the tests below.
    expect(derived.length).toBeGreaterThan(0);
    const unwritten = listOperations(doc).filter((operation) => !isListOperation(doc, operation) && !(operation.operationId in writtenCalls));
    expect(unwritten.map((operation) => operation.operationId)).toEqual([]);
  });

  test('a list added to the contract is covered with no entry written, called with the examples of its path parameters', async () => {
    const doc = withWorkspaceSuspensions(loadDocument());
    const table = tableOf(doc);
    expect(checkCoverage(doc, Object.keys(table))).toEqual([]);
    const seen: [string, unknown][] = [];
    await table.listWorkspaceSuspensions?.(recordingClient(seen));
    expect(seen).toEqual([['listWorkspaceSuspensions', { workspaceId: ids.workspace }]]);
  });

  test('a required query parameter is given its example; the optional ones are left out', async () => {
    const doc = loadDocument();
    const seen: [string, unknown][] = [];
    await listCalls(doc, {}).listWebhookDeliveries?.(recordingClient(seen));
    // The path's endpoint id; neither `status` nor `cursor` nor `limit`, which are optional.
    expect(seen).toEqual([['listWebhookDeliveries', { id: ids.webhookEndpoint }]]);
    const members = at(doc, 'paths', '/v1/workspaces/{workspaceId}/members', 'get');
    members.parameters = [...(members.parameters as JsonObject[]), { name: 'role', in: 'query', required: true, schema: { type: 'string', example: 'admin' } }];
    await listCalls(doc, {}).listWorkspaceMembers?.(recordingClient(seen));
    expect(seen.at(-1)).toEqual(['listWorkspaceMembers', { workspaceId: ids.workspace, role: 'admin' }]);
  });

  test('is not done for an operation that is not a list: it is reported as not exercised', () => {
    const doc = loadDocument();
    doc.paths['/v1/workspaces/{workspaceId}/suspensions'] = {
      parameters: [{ $ref: '#/components/parameters/WorkspacePathId' }],
      get: { ...structuredClone(at(doc, 'paths', '/v1/compute/suspensions/{id}', 'get')), operationId: 'getWorkspaceSuspension' },
    };
    expect(checkCoverage(doc, Object.keys(tableOf(doc)))).toEqual([
      'getWorkspaceSuspension (GET /v1/workspaces/{workspaceId}/suspensions): not exercised by the contract tests (add it to the call table)',
    ]);
  });

  test('stops at a list with a required parameter that has no example, naming it', () => {
    const doc = withWorkspaceSuspensions(loadDocument());
    const list = at(doc, 'paths', '/v1/workspaces/{workspaceId}/suspensions', 'get');
    list.parameters = [...(list.parameters as JsonObject[]), { name: 'machine', in: 'query', required: true, schema: { type: 'string' } }];
    expect(() => listCalls(doc, writtenCalls)).toThrow(
      'listWorkspaceSuspensions: its required query parameter machine cannot be derived from the contract; write its call in test/contract/calls.ts',
    );
  });
});
