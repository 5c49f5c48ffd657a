// `platform webhooks listen`: the workspace's events feed forwarded to a local URL, each event signed as the
// platform signs its webhooks (Standard Webhooks), so a webhook receiver can be developed on a laptop, as
// `stripe listen` allows.
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Schema } from '@platform/api-types';
import { generateWebhookSecret, PlatformApiError, PlatformNetworkError, signWebhook, type WebhookEventType } from '@platform/client';
import { type Command, InvalidArgumentError } from 'commander';
import { action, example } from '../context.ts';
import { time } from '../output.ts';
import { EXIT_INTERRUPTED } from '../wait.ts';

/** How long the receiver has to answer one event. */
const FORWARD_TIMEOUT_MS = 10_000;
/** The pause before opening the feed again once the client has given up reconnecting. */
const RECONNECT_MS = 2_000;

interface ListenFlags {
  forwardTo: URL;
  events?: WebhookEventType[];
  secret?: string;
}

/** What one forward came to: the receiver's status, or why there was none. */
type Outcome = { status: number; ms: number } | { error: string; ms: number };

let eventTypes: readonly string[] | undefined;

/** The contract's EventType enum, from the bundled document; read only when --events is given. */
function knownEventTypes(): readonly string[] {
  eventTypes ??= (createRequire(import.meta.url)('@platform/api-types/openapi.json') as { components: { schemas: { EventType: { enum: string[] } } } })
    .components.schemas.EventType.enum;
  return eventTypes;
}

function parseEventTypes(value: string): WebhookEventType[] {
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

function parseUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected an http:// or https:// URL, e.g. http://localhost:3000/hook');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('expected an http:// or https:// URL');
  return url;
}

function parseSecret(value: string): string {
  if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(value)) throw new InvalidArgumentError('expected whsec_ followed by base64, as the receiver is configured with');
  return value;
}

/** A failure that passes: the API is restarting, overloaded or out of reach for a while. */
function transient(error: unknown): error is PlatformNetworkError | PlatformApiError {
  return error instanceof PlatformNetworkError || (error instanceof PlatformApiError && (error.status === 429 || error.status >= 500));
}

/** The reason a request got no answer, in a few words (fetch hides it in `cause`). */
function failureOf(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return `no answer within ${FORWARD_TIMEOUT_MS / 1000} s`;
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

async function forward(url: URL, event: Schema<'Event'>, secret: string, signal: AbortSignal): Promise<Outcome> {
  // The body as the platform's webhooks carry it: the event exactly as the API returns it.
  const body = JSON.stringify(event);
  const headers = await signWebhook(body, { id: event.id, secret });
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  try {
    const response = await fetch(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'user-agent': 'platform-cli webhooks listen', ...headers },
      redirect: 'manual',
      signal: AbortSignal.any([signal, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
    });
    // Read to the end, so the connection can carry the next event.
    await response.arrayBuffer();
    return { status: response.status, ms: ms() };
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    return { error: failureOf(error), ms: ms() };
  }
}

function report(json: boolean, event: Schema<'Event'>, outcome: Outcome): void {
  if (json) {
    const { id, type, object_id, created_at } = event;
    const result = 'status' in outcome ? { status: outcome.status } : { error: outcome.error };
    process.stdout.write(`${JSON.stringify({ id, type, object_id, created_at, ...result, duration_ms: outcome.ms })}\n`);
    return;
  }
  const answer = 'status' in outcome ? `[${outcome.status}]` : `[failed] ${outcome.error}`;
  process.stdout.write(`${time(event.created_at)}  ${event.type.padEnd(30)}  ${event.object_id}  ${answer} ${outcome.ms} ms\n`);
}

export function registerWebhooks(program: Command): void {
  const webhooks = program.command('webhooks').description('develop a webhook receiver: the workspace’s events, signed as webhooks');
  example(webhooks, 'platform webhooks listen --forward-to http://localhost:3000/hook');

  example(
    webhooks
      .command('listen')
      .description('forward the workspace’s new events to a local URL, signed as webhooks, until Ctrl-C')
      .requiredOption('--forward-to <url>', 'where to POST each event, e.g. http://localhost:3000/hook', parseUrl)
      .option('--events <types>', 'only these event types, comma-separated (e.g. cluster.running,install.failed)', parseEventTypes)
      .option('--secret <whsec_…>', 'sign with this secret instead of a new one for the session', parseSecret)
      .addHelpText(
        'after',
        [
          '',
          'Each event is POSTed as JSON (the event as `GET /v1/events` lists it) with the Standard Webhooks headers',
          'webhook-id (the event id), webhook-timestamp and webhook-signature, signed with the secret printed at the',
          'start; verify them with verifyWebhook() of @platform/client or any Standard Webhooks library. Only events',
          'recorded after the start are sent; one line per event shows its time, type, object id, the answer',
          '(or why there was none) and how long it took. A dropped feed is resumed after the last event received.',
        ].join('\n'),
      )
      .action(
        action(async ({ api, out, settings }, flags: ListenFlags) => {
          // Ctrl-C ends the feed and any forward in flight; the exit code says it was interrupted.
          const controller = new AbortController();
          const { signal } = controller;
          const interrupt = () => controller.abort();
          process.once('SIGINT', interrupt);
          const secret = flags.secret ?? generateWebhookSecret();
          const wanted = flags.events === undefined ? undefined : new Set<string>(flags.events);
          try {
            // Only what happens from now on: the feed starts after the newest event recorded so far.
            let lastEventId: string | undefined;
            for await (const event of api.paginate('listEvents', { limit: 100, signal })) lastEventId = event.id;
            const workspace = settings.workspace === undefined ? 'your default workspace' : `workspace ${settings.workspace}`;
            process.stderr.write(
              `Ready. Forwarding the events of ${workspace} to ${flags.forwardTo.href} (Ctrl-C to stop).\nWebhook signing secret: ${secret}\n`,
            );
            for (;;) {
              try {
                // The client resumes a dropped feed with Last-Event-ID by itself, a few times.
                for await (const event of api.streamEvents({ lastEventId, signal })) {
                  lastEventId = event.id;
                  if (wanted?.has(event.type) === false) continue;
                  report(out.json, event, await forward(flags.forwardTo, event, secret, signal));
                }
              } catch (error) {
                if (signal.aborted || !transient(error)) throw error;
                // The client gave up reconnecting (the API is down, say): keep trying, after the last event received.
                process.stderr.write(`Lost the events feed (${error.message}); reconnecting in ${RECONNECT_MS / 1000} s\n`);
                await sleep(RECONNECT_MS, undefined, { signal });
              }
            }
          } catch (error) {
            if (signal.aborted) return EXIT_INTERRUPTED;
            throw error;
          } finally {
            process.off('SIGINT', interrupt);
          }
        }),
      ),
    'platform webhooks listen --forward-to http://localhost:3000/hook',
    'platform webhooks listen --forward-to http://localhost:3000/hook --events cluster.running,install.failed --secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  );
}
