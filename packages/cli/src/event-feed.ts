// The workspace's events feed as `events follow` and `webhooks listen` read it: from the newest event on, kept
// open across outages, and the event types the contract knows (for --type and --events).
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import type { QueryParams, Schema } from '@platform/api-types';
import { PlatformApiError, type PlatformClient, PlatformNetworkError, type WebhookEventType } from '@platform/client';
import { InvalidArgumentError } from 'commander';

/** The pause before opening the feed again once the client has given up reconnecting (the run's pace may shorten it). */
const RECONNECT_MS = 2_000;

export type EventFilters = Pick<QueryParams<'listEvents'>, 'type' | 'object_id'>;

let eventTypes: readonly string[] | undefined;

/** The contract's EventType enum, from the bundled document; read only when a type is given. */
function knownEventTypes(): readonly string[] {
  eventTypes ??= (createRequire(import.meta.url)('@platform/api-types/openapi.json') as { components: { schemas: { EventType: { enum: string[] } } } })
    .components.schemas.EventType.enum;
  return eventTypes;
}

/** A comma-separated list of event types (`cluster.running,install.failed`), each one the contract knows. */
export function parseEventTypes(value: string): WebhookEventType[] {
  const types = value
    .split(',')
    .map((type) => type.trim())
    .filter((type) => type !== '');
  const known = knownEventTypes();
  const unknown = types.filter((type) => !known.includes(type));
  if (types.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError(`${unknown.length > 0 ? `unknown event type ${unknown.join(', ')}` : 'no event type'}; the types are ${known.join(', ')}`);
  }
  return types as WebhookEventType[];
}

/** One event type the contract knows. */
export function parseEventType(value: string): WebhookEventType {
  const types = parseEventTypes(value);
  if (types.length > 1) throw new InvalidArgumentError('expected one event type');
  return types[0]!;
}

/** A failure that passes: the API is restarting, overloaded or out of reach for a while. */
function transient(error: unknown): error is PlatformNetworkError | PlatformApiError {
  return error instanceof PlatformNetworkError || (error instanceof PlatformApiError && (error.status === 429 || error.status >= 500));
}

/** The id of the newest event recorded so far (of those filters), to follow only what happens from now on. */
export async function newestEventId(api: PlatformClient, filters: EventFilters, signal: AbortSignal): Promise<string | undefined> {
  let newest: string | undefined;
  for await (const event of api.paginate('listEvents', { ...filters, limit: 100, signal })) newest = event.id;
  return newest;
}

/**
 * The events after `after` (all those recorded so far without it), then each new one, until `signal` ends it.
 * The client resumes a dropped feed with Last-Event-ID by itself, a few times; once it gives up (the API is down,
 * say) this keeps trying, after the last event received, and says so on stderr.
 */
export async function* followEvents(
  api: PlatformClient,
  options: { filters: EventFilters; after: string | undefined; signal: AbortSignal; stderr: NodeJS.WritableStream; reconnectMs?: number },
): AsyncGenerator<Schema<'Event'>, never, undefined> {
  const { filters, signal, reconnectMs = RECONNECT_MS } = options;
  let lastEventId = options.after;
  for (;;) {
    try {
      for await (const event of api.streamEvents({ ...filters, lastEventId, signal })) {
        lastEventId = event.id;
        yield event;
      }
    } catch (error) {
      if (signal.aborted || !transient(error)) throw error;
      options.stderr.write(`Lost the events feed (${error.message}); reconnecting in ${reconnectMs / 1000} s\n`);
      await sleep(reconnectMs, undefined, { signal });
    }
  }
}
