// Nothing in the contract goes untested: every operation is in the call table, and every response and request
// body with content has a named example (which examples.test.ts then validates through the mock).
// The check is a pure function of the document; it is also run on mutated copies to show that it can fail.
import { describe, expect, test } from 'vitest';
import { checkCoverage, isObject, type JsonObject, listOperations, loadDocument } from '../support/openapi.ts';
import { calls } from './calls.ts';

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
