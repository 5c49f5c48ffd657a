// A notification and the event of the change it tells speak one vocabulary: every notification type is an event
// type (the server writes both with one type, resources/events.ts: recordEventAndNotify), and a notification names
// its resource as the event names its object. A notification type the events lack fails here.
import { describe, expect, it } from 'vitest';
import { get, loadDocument, type OpenApiDocument, pointer } from '../support/openapi.ts';

const enumAt = (doc: OpenApiDocument, ...path: string[]): string[] => {
  const values = get(doc, pointer('components', 'schemas', ...path, 'enum'));
  if (!Array.isArray(values) || values.length === 0) throw new Error(`${path.join('.')} is not an enum of the contract`);
  return values as string[];
};

/** The values of `sub` that `of` lacks. */
const missing = (sub: string[], of: string[]) => sub.filter((value) => !of.includes(value));

/** Notification types that are no event type. */
const notificationTypesNotEvents = (doc: OpenApiDocument) => missing(enumAt(doc, 'Notification', 'properties', 'type'), enumAt(doc, 'EventType'));

/** Event object types a notification could not name as its resource. */
const objectTypesNotResources = (doc: OpenApiDocument) =>
  missing(enumAt(doc, 'Event', 'properties', 'object_type'), enumAt(doc, 'Notification', 'properties', 'resource_type'));

describe('notification types', () => {
  const doc = loadDocument();

  it('are all event types', () => {
    expect(notificationTypesNotEvents(doc)).toEqual([]);
  });

  it('name their resource as the event names its object', () => {
    expect(objectTypesNotResources(doc)).toEqual([]);
  });

  it('a type the events lack is found', () => {
    const diverged = loadDocument();
    (get(diverged, pointer('components', 'schemas', 'Notification', 'properties', 'type', 'enum')) as string[]).push('cluster.ready');
    expect(notificationTypesNotEvents(diverged)).toEqual(['cluster.ready']);
  });
});
