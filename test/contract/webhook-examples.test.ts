// Every event type of the contract's `webhooks` shows a realistic body in the docs: each has an example of its
// request body, valid against the body's schema (as Redocly's no-invalid-media-type-examples also checks in
// `pnpm lint:api`), of its own type, with the object its `object_type` names.
import { describe, expect, test } from 'vitest';
import { get, isObject, type Json, loadDocument, pointer, SchemaValidator } from '../support/openapi.ts';

const doc = loadDocument();
const validator = new SchemaValidator(doc);
const webhooks = Object.keys(isObject(doc.webhooks) ? doc.webhooks : {});
const eventTypes = get(doc, pointer('components', 'schemas', 'EventType', 'enum'));

describe('webhook body examples', () => {
  test('the contract has a webhook for every event type', () => {
    expect(webhooks.length).toBe(21);
    expect([...webhooks].sort()).toEqual([...(eventTypes as string[])].sort());
  });

  test.each(webhooks)('%s', (name) => {
    const at = pointer('webhooks', name, 'post', 'requestBody', 'content', 'application/json');
    const media = get(doc, at);
    const examples = isObject(media) && isObject(media.examples) ? Object.entries(media.examples) : [];
    expect(examples.length, `${name} has an example body`).toBeGreaterThan(0);
    for (const [exampleName, example] of examples) {
      const value = isObject(example) ? (example.value as Json) : undefined;
      expect(validator.errors(`${at}/schema`, value), `${name} example ${exampleName}`).toEqual([]);
      expect(isObject(value) && value.type).toBe(name);
      expect(isObject(value) && value.object_type).toBe(name.split('.')[0]);
    }
  });
});
