// Type tests of the webhook helpers (vitest typecheck): the payload is the contract's Event, one member per event
// type; the header forms that Node servers and fetch handlers have are accepted. Nothing here is executed.
import type { IncomingHttpHeaders } from 'node:http';
import type { Schema } from '@platform/api-types';
import { describe, expectTypeOf, test } from 'vitest';
import {
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookHeaders,
  type WebhookPayload,
  type WebhookSignatureHeaders,
} from '../src/index.ts';

describe('WebhookEvent', () => {
  test('is the contract’s Event, with every event type and object type', () => {
    expectTypeOf<WebhookEvent>().toExtend<Schema<'Event'>>();
    expectTypeOf<WebhookEvent['type']>().toEqualTypeOf<Schema<'EventType'>>();
    expectTypeOf<WebhookEventType>().toEqualTypeOf<Schema<'EventType'>>();
    // No event type lost its object: each prefix names one of the contract's object types.
    expectTypeOf<WebhookEvent['object_type']>().toEqualTypeOf<Schema<'Event'>['object_type']>();
  });

  test('is narrowed by type and by object_type', () => {
    const event = {} as WebhookEvent;
    if (event.type === 'install.failed') {
      expectTypeOf(event.object_type).toEqualTypeOf<'install'>();
      expectTypeOf(event.object).toEqualTypeOf<Schema<'Install'>>();
    }
    if (event.object_type === 'machine') {
      expectTypeOf(event.type).toEqualTypeOf<'machine.ready' | 'machine.provision_failed' | 'machine.failed'>();
      expectTypeOf(event.object).toEqualTypeOf<Schema<'Machine'>>();
    }
    expectTypeOf<Extract<WebhookEvent, { type: 'cluster.running' }>['object']>().toEqualTypeOf<Schema<'Cluster'>>();
  });
});

describe('verifyWebhook', () => {
  test('takes raw bodies and the headers of Node and fetch, and resolves to the event', () => {
    expectTypeOf<Buffer>().toExtend<WebhookPayload>();
    expectTypeOf<IncomingHttpHeaders>().toExtend<WebhookHeaders>();
    expectTypeOf<Headers>().toExtend<WebhookHeaders>();
    expectTypeOf<WebhookSignatureHeaders>().toExtend<WebhookHeaders>();
    expectTypeOf(verifyWebhook('{}', new Headers(), 'whsec_x')).resolves.toEqualTypeOf<WebhookEvent>();
    // @ts-expect-error a parsed body cannot be verified: the signature is over the raw bytes
    void verifyWebhook({ id: 'evt_1' }, new Headers(), 'whsec_x');
  });
});
