// `platform webhooks`: the workspace's webhook endpoints (the URLs its events are POSTed to, signed), their
// deliveries, and `listen`: the events feed forwarded to a local URL, each event signed as the platform signs its
// webhooks (Standard Webhooks), so a webhook receiver can be developed on a laptop, as `stripe listen` allows.
import type { Schema } from '@platform/api-types';
import { generateWebhookSecret, PlatformApiError, signWebhook, type WebhookEventType } from '@platform/client';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { confirm, declined, withYes, type YesFlags } from '../confirm.ts';
import { action, example, type PageFlags, positiveInteger, UsageError, withPage } from '../context.ts';
import { followEvents, newestEventId, parseEventTypes } from '../event-feed.ts';
import { type Columns, done, type OutputOptions, printPage, printRecord, time } from '../output.ts';
import { EXIT_INTERRUPTED } from '../wait.ts';

/** How long the receiver has to answer one event. */
const FORWARD_TIMEOUT_MS = 10_000;

interface ListenFlags {
  forwardTo: URL;
  events?: WebhookEventType[];
  secret?: string;
}

const endpointColumns: Columns<Schema<'WebhookEndpoint'>> = [
  ['ID', (e) => e.id],
  ['URL', (e) => e.url],
  ['EVENTS', (e) => (e.event_types.length === 0 ? 'all' : e.event_types.join(' '))],
  ['ENABLED', (e) => (e.enabled ? 'yes' : `no${e.disabled_reason ? `: ${e.disabled_reason}` : ''}`)],
  ['DELIVERY', (e) => deliveryState(e)],
  ['FAILING SINCE', (e) => time(e.failing_since)],
  ['DESCRIPTION', (e) => e.description],
  ['CREATED', (e) => time(e.created_at)],
];

/** Whether deliveries go out (`active`) or wait for the next probe (`cooling`), with the failures that led there. */
function deliveryState(e: Schema<'WebhookEndpoint'>): string {
  const failures = e.consecutive_failures === 0 ? '' : `, ${e.consecutive_failures} failure${e.consecutive_failures === 1 ? '' : 's'}`;
  return `${e.delivery_state === 'cooling' ? `cooling until ${time(e.cooling_until)}` : e.delivery_state}${failures}`;
}

/** One endpoint, as get and update show it: the delivery state field by field, and when a rotated-out secret stops signing. */
const endpointRecord: Columns<Schema<'WebhookEndpoint'>> = [
  ...endpointColumns.filter(([header]) => header !== 'DELIVERY'),
  ['DELIVERY STATE', (e) => e.delivery_state],
  ['CONSECUTIVE FAILURES', (e) => e.consecutive_failures],
  ['COOLING UNTIL', (e) => time(e.cooling_until)],
  ['OLD SECRET SIGNS UNTIL', (e) => time(e.previous_secret_expires_at)],
  ['UPDATED', (e) => time(e.updated_at)],
];

/** An endpoint just created, with the secret shown only then. */
const withSecret: Columns<Schema<'WebhookEndpointWithSecret'>> = [...endpointColumns, ['SECRET', (e) => e.secret]];

const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const satisfies readonly Schema<'WebhookDeliveryStatus'>[];
type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const deliveryColumns: Columns<Schema<'WebhookDelivery'>> = [
  ['ID', (d) => d.id],
  ['EVENT', (d) => d.event_id],
  ['TYPE', (d) => d.event_type],
  ['STATUS', (d) => d.status],
  ['ATTEMPTS', (d) => d.attempts],
  ['LAST ATTEMPT', (d) => time(d.last_attempt_at)],
  ['ANSWER', (d) => d.last_response_status],
  ['ERROR', (d) => d.last_error],
  ['NEXT ATTEMPT', (d) => time(d.next_attempt_at)],
];

/** What one forward came to: the receiver's status, or why there was none. */
type Outcome = { status: number; ms: number } | { error: string; ms: number };

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

function report(out: OutputOptions, event: Schema<'Event'>, outcome: Outcome): void {
  if (out.json) {
    const { id, type, object_id, created_at } = event;
    const result = 'status' in outcome ? { status: outcome.status } : { error: outcome.error };
    out.io.stdout.write(`${JSON.stringify({ id, type, object_id, created_at, ...result, duration_ms: outcome.ms })}\n`);
    return;
  }
  const answer = 'status' in outcome ? `[${outcome.status}]` : `[failed] ${outcome.error}`;
  out.io.stdout.write(`${time(event.created_at)}  ${event.type.padEnd(30)}  ${event.object_id}  ${answer} ${outcome.ms} ms\n`);
}

export function registerWebhooks(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description('webhook endpoints: URLs the workspace’s events are POSTed to, signed (admins); listen, to develop a receiver');
  example(
    webhooks,
    'platform webhooks create --url https://hooks.acme.example/platform --events cluster.running,install.failed',
    'platform webhooks deliveries list whe_01jd… --status failed',
    'platform webhooks listen --forward-to http://localhost:3000/hook',
  );

  example(
    withPage(webhooks.command('list').description('list the webhook endpoints of the workspace')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/webhook_endpoints', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, endpointColumns);
      }),
    ),
    'platform webhooks list --json',
  );

  example(
    webhooks
      .command('create')
      .description('add an endpoint that receives the workspace’s events from now on; its signing secret is shown once')
      .requiredOption('--url <url>', 'an https:// URL with a public host')
      .option('--events <types>', 'only these event types, comma-separated (default: every type, also those added later)', parseEventTypes)
      .option('--description <text>', 'what it is for')
      .option('--disabled', 'create it switched off: no deliveries until `webhooks update <id> --enable`')
      .action(
        action(async ({ api, out }, flags: { url: string; events?: WebhookEventType[]; description?: string; disabled?: boolean }) => {
          const body = { url: flags.url, event_types: flags.events, description: flags.description, enabled: !flags.disabled };
          const created = await api.POST('/v1/webhook_endpoints', { body }).catch((error: unknown) => {
            // A receiver on this machine: `webhooks listen` forwards to it, no public URL needed.
            if (error instanceof PlatformApiError && error.param === 'url' && flags.url.startsWith('http://'))
              out.io.stderr.write(
                `Hint: for a receiver on your machine run \`platform webhooks listen --forward-to ${flags.url}\`; a server started with WEBHOOK_ALLOW_HTTP_LOOPBACK=true also takes http:// loopback URLs.\n`,
              );
            throw error;
          });
          printRecord(out, created, withSecret);
          if (!out.json) out.io.stderr.write('Store the signing secret now: it cannot be shown again. Verify each delivery’s webhook-signature with it.\n');
        }),
      ),
    'platform webhooks create --url https://hooks.acme.example/platform --description "deploy bot"',
    'platform webhooks create --url https://hooks.acme.example/platform --events install.failed --json | jq -r .secret',
  );

  example(
    webhooks
      .command('get <id>')
      .description('show one webhook endpoint (never its secret)')
      .action(
        action(async ({ api, out }, id: string) => {
          printRecord(out, await api.GET('/v1/webhook_endpoints/{id}', { params: { path: { id } } }), endpointRecord);
        }),
      ),
    'platform webhooks get whe_01jd2xg0m2p4r6t8w0y2a4c6e8',
  );

  example(
    webhooks
      .command('update <id>')
      .description('change an endpoint’s URL, event types or description, or switch it off or on')
      .option('--url <url>', 'a new https:// URL')
      .option('--events <types>', 'only these event types from now on, comma-separated', parseEventTypes)
      .option('--all-events', 'every event type, also those added later')
      .option('--description <text>', 'a new description')
      .option('--enable', 'switch it on again (clears why it was disabled)')
      .option('--disable', 'switch it off: its pending deliveries are cancelled')
      .action(
        action(
          async (
            { api, out },
            id: string,
            flags: { url?: string; events?: WebhookEventType[]; allEvents?: boolean; description?: string; enable?: boolean; disable?: boolean },
          ) => {
            if (flags.enable && flags.disable) throw new UsageError('give --enable or --disable, not both');
            if (flags.events && flags.allEvents) throw new UsageError('give --events or --all-events, not both');
            const eventTypes = flags.allEvents ? [] : flags.events;
            const body = {
              ...(flags.url === undefined ? {} : { url: flags.url }),
              ...(eventTypes === undefined ? {} : { event_types: eventTypes }),
              ...(flags.description === undefined ? {} : { description: flags.description }),
              ...(flags.enable || flags.disable ? { enabled: Boolean(flags.enable) } : {}),
            };
            if (Object.keys(body).length === 0)
              throw new UsageError('give what to change: --url, --events, --all-events, --description, --enable or --disable');
            printRecord(out, await api.PATCH('/v1/webhook_endpoints/{id}', { params: { path: { id } }, body }), endpointRecord);
          },
        ),
      ),
    'platform webhooks update whe_01jd2xg0m2p4r6t8w0y2a4c6e8 --events cluster.running,cluster.failed',
    'platform webhooks update whe_01jd2xg0m2p4r6t8w0y2a4c6e8 --enable',
  );

  example(
    withYes(webhooks.command('delete <id>').description('delete a webhook endpoint and its deliveries (asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Delete webhook endpoint ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/webhook_endpoints/{id}', { params: { path: { id } } });
        done(out, `Deleted webhook endpoint ${id}`);
      }),
    ),
    'platform webhooks delete whe_01jd2xg0m2p4r6t8w0y2a4c6e8 --yes',
  );

  example(
    webhooks
      .command('rotate-secret <id>')
      .description('give an endpoint a new signing secret, shown once; the old one also signs for --overlap seconds')
      .option('--overlap <seconds>', 'how long deliveries are also signed with the old secret, 0 to 604800 (default 86400: a day)', positiveInteger)
      .action(
        action(async ({ api, out }, id: string, flags: { overlap?: number }) => {
          const rotated = await api.POST('/v1/webhook_endpoints/{id}/rotate_secret', {
            params: { path: { id } },
            body: flags.overlap === undefined ? {} : { overlap_seconds: flags.overlap },
          });
          printRecord(out, rotated, [
            ['ID', (e) => e.id],
            ['URL', (e) => e.url],
            ['SECRET', (e) => e.secret],
            ['OLD SECRET SIGNS UNTIL', (e) => time(e.previous_secret_expires_at)],
          ]);
          if (!out.json) out.io.stderr.write('Store the new signing secret now: it cannot be shown again.\n');
        }),
      ),
    'platform webhooks rotate-secret whe_01jd2xg0m2p4r6t8w0y2a4c6e8 --overlap 3600',
  );

  const deliveries = webhooks.command('deliveries').description('what was sent to an endpoint, how it went, and sending it again');
  example(deliveries, 'platform webhooks deliveries list whe_01jd… --status failed', 'platform webhooks deliveries redeliver whe_01jd… whd_01jd…');

  example(
    withPage(
      deliveries
        .command('list <endpoint-id>')
        .description('list an endpoint’s deliveries with the outcome of their latest attempt')
        .addOption(new Option('--status <status>', 'only deliveries in this status').choices(DELIVERY_STATUSES)),
    ).action(
      action(async ({ api, out }, id: string, flags: PageFlags & { status?: DeliveryStatus }) => {
        const page = await api.GET('/v1/webhook_endpoints/{id}/deliveries', {
          params: { path: { id }, query: { status: flags.status, limit: flags.limit, cursor: flags.cursor } },
        });
        printPage(out, page, deliveryColumns);
      }),
    ),
    'platform webhooks deliveries list whe_01jd2xg0m2p4r6t8w0y2a4c6e8 --status failed',
  );

  example(
    deliveries
      .command('redeliver <endpoint-id> <delivery-id>')
      .description('send a delivery’s event to its endpoint again, now (the endpoint must be enabled)')
      .action(
        action(async ({ api, out }, id: string, deliveryId: string) => {
          printRecord(
            out,
            await api.POST('/v1/webhook_endpoints/{id}/deliveries/{deliveryId}/redeliver', { params: { path: { id, deliveryId } } }),
            deliveryColumns,
          );
        }),
      ),
    'platform webhooks deliveries redeliver whe_01jd2xg0m2p4r6t8w0y2a4c6e8 whd_01jd2xh1n3q5s7v9x1z3b5d7f9',
  );

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
          'Each event is POSTed as JSON (the event as `platform events list --json` shows it) with the Standard',
          'Webhooks headers webhook-id (the event id), webhook-timestamp and webhook-signature, signed with the secret',
          'printed at the start; verify them with verifyWebhook() of @platform/client or any Standard Webhooks library.',
          'Only events recorded after the start are sent; one line per event shows its time, type, object id, the',
          'answer (or why there was none) and how long it took. A dropped feed is resumed after the last event received.',
        ].join('\n'),
      )
      .action(
        action(async ({ api, out, settings }, flags: ListenFlags) => {
          // Ctrl-C ends the feed and any forward in flight; the exit code says it was interrupted.
          const controller = new AbortController();
          const { signal } = controller;
          const interrupt = () => controller.abort();
          const stopListening = out.io.onInterrupt(interrupt);
          const secret = flags.secret ?? generateWebhookSecret();
          const wanted = flags.events === undefined ? undefined : new Set<string>(flags.events);
          try {
            // Only what happens from now on: the feed starts after the newest event recorded so far.
            const after = await newestEventId(api, {}, signal);
            const workspace = settings.workspace === undefined ? 'your default workspace' : `workspace ${settings.workspace}`;
            out.io.stderr.write(
              `Ready. Forwarding the events of ${workspace} to ${flags.forwardTo.href} (Ctrl-C to stop).\nWebhook signing secret: ${secret}\n`,
            );
            for await (const event of followEvents(api, { filters: {}, after, signal, stderr: out.io.stderr, reconnectMs: out.io.pace?.feedReconnectMs })) {
              if (wanted?.has(event.type) === false) continue;
              report(out, event, await forward(flags.forwardTo, event, secret, signal));
            }
          } catch (error) {
            if (signal.aborted) return EXIT_INTERRUPTED;
            throw error;
          } finally {
            stopListening();
          }
        }),
      ),
    'platform webhooks listen --forward-to http://localhost:3000/hook',
    'platform webhooks listen --forward-to http://localhost:3000/hook --events cluster.running,install.failed --secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  );
}
