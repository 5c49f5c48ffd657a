// Sends webhook deliveries (resources/webhook-deliveries.ts holds the rows, the truth), straight from their table:
//   - a commit that makes deliveries due (a new event's, a redelivery) NOTIFYs the dispatchers, which look at once;
//     a ticker looks too, for retries coming due by the injected clock and for a NOTIFY lost in an outage;
//   - a look claims what is due in one statement (with the endpoints and events), as many as the dispatcher has
//     slots free, no endpoint beyond WEBHOOK_ENDPOINT_CONCURRENCY attempts at once (a failing one beyond one) and no
//     workspace beyond a fair share of the slots, skipping endpoints whose circuit is open (cooling);
//   - each claim is a lease that counts the attempt; the attempt POSTs over a kept-alive connection (SSRF-checked
//     when it was made), and its end makes the dispatcher look again (its endpoint has room); the outcomes that
//     ended meanwhile are settled together, rows and endpoints: succeeded, pending again at the next moment of the
//     retry schedule, or failed when the schedule runs out;
//   - claims and settlings run on connections of the dispatcher's own (DELIVERY_SESSION: no wait for the disk at
//     their commits, the claim planned once).
// At least once: a worker killed after the receiver answered but before the row was settled lets go of it when
// its lease runs out, and it is sent again; the attempt it made is counted.

import type { KeyObject } from 'node:crypto';
import type { Kysely } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { WebhookConfig } from '../config.ts';
import type { Database } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { type ClaimedDelivery, claimDeliveries, DELIVERIES_DUE_CHANNEL, type Settled, settleDeliveries } from '../resources/webhook-deliveries.ts';
import { disableFailingEndpoint, type EndpointOutcomes, recordEndpointOutcomes, signingSecrets } from '../resources/webhook-endpoints.ts';
import type { SecretBox } from '../services/secrets.ts';
import type { Resolver } from '../services/ssrf.ts';
import { type AttemptOutcome, WebhookSender, webhookSignature, webhookSigningKey } from '../services/webhooks.ts';
import { metrics } from '../telemetry/metrics.ts';
import { contextOf, inSpan, SpanKind, tracing } from '../telemetry/tracing.ts';

/**
 * Seconds from a failed attempt to the next, by the number of attempts made (Standard Webhooks' and Svix's
 * schedule), then every 10 hours until the retry window ends.
 */
const RETRY_DELAYS = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600];
/** No attempt is made later than this after the first (or after a redelivery). */
export const RETRY_WINDOW_SECONDS = 3 * 86_400;
/** A claim outlives its attempt (the timeout) by this much (real seconds), for the settling. */
const LEASE_MARGIN_SECONDS = 5;
/**
 * When the dispatcher claims (real ms): CLAIM_GATHER_MS after it was first asked to (an attempt ended, a NOTIFY),
 * and no sooner than CLAIM_INTERVAL_MS after the last claim started. A claim costs PostgreSQL nearly as much for
 * one delivery as for forty (about 1 ms of CPU, 50 µs more a delivery); claiming at every attempt's end kept a claim
 * running back to back at any rate, about 16 deliveries a claim under the benchmark's load. The attempts a claim
 * started end close together on a fast receiver, so the next claim waits a moment after the first of them ends and
 * takes them all; a claim on a fixed beat would start anywhere among their ends and leave the later ones waiting
 * for the next beat.
 */
const CLAIM_GATHER_MS = 2;
const CLAIM_INTERVAL_MS = 10;
/**
 * Real ms from the start of one settling to the next, so that a settling takes what ended over that time at once
 * (11 outcomes a statement under the benchmark's load, settled as they ended). An ended attempt takes no room of
 * its endpoint meanwhile; a probe's waits this much longer for its circuit to be set.
 */
const SETTLE_INTERVAL_MS = 20;

/** When to try again after `attempts` failed attempts (±10 % jitter, so failures do not retry in lockstep); undefined: give up. */
export function nextAttemptAt(attempts: number, firstAttemptAt: number, now: number, random: () => number = Math.random): number | undefined {
  const base = RETRY_DELAYS[Math.min(attempts, RETRY_DELAYS.length) - 1]!;
  const at = now + Math.max(1, Math.round(base * (0.9 + 0.2 * random())));
  return at <= firstAttemptAt + RETRY_WINDOW_SECONDS ? at : undefined;
}

export interface DispatcherOptions {
  db: Kysely<Database>;
  /**
   * Connections of its own for the claims and the settlings, opened with DELIVERY_SESSION
   * (resources/webhook-deliveries.ts says why); closed by stop().
   */
  leases: { db: Kysely<Database>; close(): Promise<void> };
  connectionString: string;
  clock: Clock;
  logger: Logger;
  /** Opens the endpoints' signing secrets. */
  secrets: SecretBox;
  /** Resolves endpoints' host names for the SSRF check made before every connection. */
  resolve: Resolver;
  config: WebhookConfig;
  /** How often (real ms) the ticker looks for due deliveries. */
  tickMs: number;
}

/** An attempt that ended, waiting to be settled. */
interface Ended {
  delivery: ClaimedDelivery;
  outcome: AttemptOutcome;
}

/** An attempt's outcome as a label: succeeded, http_error (a status other than 2xx), not_sent (refused before sending), no_answer. */
function attemptOutcome({ status, error }: AttemptOutcome): string {
  if (error === undefined) return 'succeeded';
  if (status !== undefined) return 'http_error';
  return error.startsWith('Not sent') ? 'not_sent' : 'no_answer';
}

/** Signing keys kept, at most this many (then forgotten together). */
const SIGNING_KEYS = 10_000;

/**
 * Each sealed secret's signing key, made once: opening the secret (AES-GCM, with a key object made per call) took
 * about 12 % of the dispatcher's CPU under load, and importing its bytes into an HMAC key about 10 % more, for every
 * attempt. A rotated secret is sealed anew, so it is another key.
 */
function signingKeys(box: SecretBox): (sealed: Buffer) => KeyObject {
  const keys = new Map<string, KeyObject>();
  return (sealed) => {
    const id = sealed.toString('base64');
    let key = keys.get(id);
    if (key === undefined) {
      if (keys.size >= SIGNING_KEYS) keys.clear();
      key = webhookSigningKey(box.open(sealed));
      keys.set(id, key);
    }
    return key;
  };
}

/** Request bodies kept, at most this many (then forgotten together): an event's deliveries are claimed close together. */
const BODIES = 1_000;

export class WebhookDispatcher {
  private readonly options: DispatcherOptions;
  private readonly sender: WebhookSender;
  private readonly signingKey: (sealed: Buffer) => KeyObject;
  /**
   * Each event's body, made once for all its deliveries (the feed's JSON, parsed and written as the API writes it),
   * with the event's created_at (its delivery lag's start).
   */
  private readonly bodies = new Map<string, { text: string; createdAt: number }>();
  private ticker: NodeJS.Timeout | undefined;
  /** Slots held (attempts under way), in all and by workspace. */
  private holding = 0;
  private readonly held = new Map<string, number>();
  private readonly attempts = new Set<Promise<void>>();
  private looking = false;
  /** When (performance.now()) the last claim started. */
  private claimedAt = -Infinity;
  /**
   * When a look was first asked for since the last claim started (a NOTIFY arrived, slots were freed; undefined:
   * none), and the timer of the look that waits for CLAIM_GATHER_MS and CLAIM_INTERVAL_MS.
   */
  private askedAt: number | undefined;
  private waiting: NodeJS.Timeout | undefined;
  private ended: Ended[] = [];
  /** The batch being settled. */
  private settlingBatch: Ended[] = [];
  private settling: Promise<void> | undefined;
  /** When (performance.now()) the last settling started. */
  private settledAt = -Infinity;
  /** The connection LISTENing for due deliveries; undefined until connected, or after it dropped. */
  private listener: pg.Client | undefined;
  private listening: Promise<void> | undefined;
  private listenFailing = false;
  private stopped = false;

  constructor(options: DispatcherOptions) {
    this.options = options;
    this.signingKey = signingKeys(options.secrets);
    this.sender = new WebhookSender({ resolve: options.resolve, allowHttpLoopback: options.config.allowHttpLoopback });
  }

  /** Starts listening and the ticker, and looks at once. */
  async run(): Promise<void> {
    await this.listen();
    this.ticker = setInterval(() => void this.look(), this.options.tickMs);
    void this.look();
  }

  /**
   * LISTENs for commits that make deliveries due. Without it (not yet connected, or dropped by an outage) the
   * ticker still sends everything, only later; the next tick connects again.
   */
  private listen(): Promise<void> {
    this.listening ??= (async () => {
      const client = new pg.Client({ connectionString: this.options.connectionString });
      const drop = () => {
        if (this.listener === client) this.listener = undefined;
        client.end().catch(() => {});
      };
      client.on('error', drop);
      client.on('end', drop);
      client.on('notification', () => void this.look());
      try {
        await client.connect();
        await client.query(`LISTEN ${DELIVERIES_DUE_CHANNEL}`);
        if (this.stopped) drop();
        else this.listener = client;
        this.listenFailing = false;
      } catch (error) {
        drop();
        // Told once per outage: the next ticks try again.
        if (!this.listenFailing) this.options.logger.warn({ err: error }, 'webhook dispatcher cannot LISTEN; the ticker sends deliveries meanwhile');
        this.listenFailing = true;
      }
    })().finally(() => {
      this.listening = undefined;
    });
    return this.listening;
  }

  /** Stops claiming, lets the attempts under way end (within the timeout) and settles them. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    clearTimeout(this.waiting);
    await this.listener?.end().catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.attempts),
      new Promise((resolve) => {
        timer = setTimeout(resolve, this.options.config.timeoutMs + 1000);
      }),
    ]);
    clearTimeout(timer);
    while (this.settling) await this.settling;
    this.sender.close();
    await this.options.leases.close();
  }

  /**
   * Claims due deliveries while slots are free and starts their attempts; one look at a time, and a look asked
   * for meanwhile runs after it, at the moment CLAIM_GATHER_MS and CLAIM_INTERVAL_MS give. Returns how many
   * attempts it started. A look that fails is made again on the next tick.
   */
  async look(): Promise<number> {
    if (this.stopped) return 0;
    this.askedAt ??= performance.now();
    if (this.looking) return 0;
    const wait = Math.max(this.askedAt + CLAIM_GATHER_MS, this.claimedAt + CLAIM_INTERVAL_MS) - performance.now();
    if (wait > 0) {
      this.waiting ??= setTimeout(() => {
        this.waiting = undefined;
        void this.look();
      }, wait);
      return 0;
    }
    this.askedAt = undefined;
    if (!this.listener) void this.listen();
    this.looking = true;
    const { leases, clock, config } = this.options;
    let started = 0;
    try {
      for (;;) {
        const free = config.concurrency - this.holding;
        if (free <= 0) return started;
        this.claimedAt = performance.now();
        const claimed = await claimDeliveries(leases.db, {
          now: clock.now(),
          free,
          slots: config.concurrency,
          held: this.held,
          endpointConcurrency: config.endpointConcurrency,
          ended: [...this.ended, ...this.settlingBatch].map(({ delivery }) => delivery.lease_id),
          leaseSeconds: Math.ceil(config.timeoutMs / 1000) + LEASE_MARGIN_SECONDS,
        });
        for (const delivery of claimed) this.start(delivery);
        started += claimed.length;
        // Fewer than asked: nothing more is due within the limits now.
        if (claimed.length < free || this.stopped) return started;
      }
    } catch (error) {
      this.options.logger.warn({ err: error }, 'webhook claim failed; retrying on the next tick');
      return started;
    } finally {
      this.looking = false;
      if (this.askedAt !== undefined) void this.look();
    }
  }

  private start(delivery: ClaimedDelivery): void {
    this.holding++;
    this.held.set(delivery.workspace_id, (this.held.get(delivery.workspace_id) ?? 0) + 1);
    const attempt = this.observed(delivery).then((outcome) => {
      this.attempts.delete(attempt);
      // The slot is free once the attempt ended; the delivery's lease (which keeps the endpoint's count) until it is settled.
      this.holding--;
      const held = this.held.get(delivery.workspace_id)! - 1;
      if (held === 0) this.held.delete(delivery.workspace_id);
      else this.held.set(delivery.workspace_id, held);
      this.ended.push({ delivery, outcome });
      void this.settle();
      // Its endpoint has room again (an ended attempt takes none while it waits to be settled).
      void this.look();
    });
    this.attempts.add(attempt);
  }

  /**
   * An attempt as a span of the trace that recorded its event (the request's, or the workflow step's), counted by
   * outcome; a success's lag from the event's commit measured.
   */
  private observed(delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    if (!metrics && !tracing) return this.attempt(delivery);
    const attributes = { 'webhook.event_id': delivery.event_id, 'webhook.endpoint_id': delivery.endpoint_id, 'webhook.attempt': delivery.attempts };
    return inSpan(
      'webhook delivery',
      attributes,
      async (span) => {
        const outcome = await this.attempt(delivery);
        const kind = attemptOutcome(outcome);
        span?.setAttributes({ 'webhook.outcome': kind, ...(outcome.status === undefined ? {} : { 'http.response.status_code': outcome.status }) });
        if (metrics) {
          metrics.webhookAttempts.inc({ outcome: kind });
          const created = this.bodies.get(delivery.event_id)?.createdAt;
          if (kind === 'succeeded' && created !== undefined) metrics.webhookLag.observe(Math.max(0, this.options.clock.now() - created));
        }
        return outcome;
      },
      { parent: contextOf(delivery.trace_parent), kind: SpanKind.CLIENT },
    );
  }

  /** One attempt: the event as the feed has it, signed, POSTed. */
  private async attempt(delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    const timestamp = this.options.clock.now();
    const { event_id: eventId } = delivery;
    try {
      // The exact bytes that are signed are the bytes sent.
      const body = this.body(eventId, delivery.event);
      const signature = signingSecrets(delivery, this.signingKey, timestamp)
        .map((key) => webhookSignature(key, eventId, timestamp, body))
        .join(' ');
      const headers = { 'webhook-id': eventId, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature, 'user-agent': 'platform-webhooks/1' };
      return await this.sender.send(delivery.url, headers, body, this.options.config.timeoutMs);
    } catch (error) {
      return { durationMs: 0, error: `Not sent: ${(error as Error).message}.` };
    }
  }

  /** The body of an event's deliveries: its JSON as the API writes it (the database's spacing and number forms differ). */
  private body(eventId: string, json: string): string {
    let body = this.bodies.get(eventId);
    if (body === undefined) {
      if (this.bodies.size >= BODIES) this.bodies.clear();
      const event = JSON.parse(json) as { created_at: number };
      body = { text: JSON.stringify(event), createdAt: event.created_at };
      this.bodies.set(eventId, body);
    }
    return body.text;
  }

  /**
   * Settles every attempt that ended, together (one statement for the deliveries, one for the endpoints whose
   * state changes). One settling at a time, at most one each SETTLE_INTERVAL_MS: what ends meanwhile waits for the
   * next, so the batches grow with the load. An ended attempt takes no room of its endpoint (the claim is told of
   * it), but a probe's lease does until its circuit is set: after a probe the dispatcher looks again (a success
   * sends what waited).
   */
  private settle(): Promise<void> {
    this.settling ??= (async () => {
      while (this.ended.length > 0) {
        const wait = this.settledAt + SETTLE_INTERVAL_MS - performance.now();
        if (wait > 0 && !this.stopped) await new Promise((resolve) => setTimeout(resolve, wait));
        this.settledAt = performance.now();
        const batch = this.ended;
        this.ended = [];
        this.settlingBatch = batch;
        await this.settleBatch(batch);
        this.settlingBatch = [];
        if (batch.some(({ delivery }) => delivery.probe)) void this.look();
      }
    })().finally(() => {
      this.settling = undefined;
    });
    return this.settling;
  }

  private async settleBatch(batch: Ended[]): Promise<void> {
    const { db, leases, clock, config, logger } = this.options;
    const now = clock.now();
    const settled: Settled[] = [];
    const endpoints = new Map<string, EndpointOutcomes>();
    for (const { delivery, outcome } of batch) {
      const next = outcome.error === undefined ? undefined : nextAttemptAt(delivery.attempts, delivery.first_attempt_at, now);
      settled.push({
        id: delivery.id,
        lease_id: delivery.lease_id,
        response_status: outcome.status ?? null,
        duration_ms: outcome.durationMs,
        settlement:
          outcome.error === undefined
            ? { status: 'succeeded' }
            : next === undefined
              ? { status: 'failed', error: outcome.error }
              : { status: 'pending', next_attempt_at: next, error: outcome.error },
      });
      // Only a failure, or a success ending a run of failures, changes the endpoint (the common case skips it).
      const endpoint = endpoints.get(delivery.endpoint_id);
      if (outcome.error === undefined) {
        if (endpoint) Object.assign(endpoint, { succeeded: true, failures: 0 });
        else if (delivery.consecutive_failures > 0) endpoints.set(delivery.endpoint_id, { id: delivery.endpoint_id, succeeded: true, failures: 0 });
      } else if (endpoint) Object.assign(endpoint, { failures: endpoint.failures + 1, error: outcome.error });
      else endpoints.set(delivery.endpoint_id, { id: delivery.endpoint_id, succeeded: false, failures: 1, error: outcome.error });
    }
    try {
      // One transaction: an outcome counts on its endpoint only with its delivery settled, or an attempt sent again
      // after its lease would count twice (and open the circuit early). The endpoints first: a cooling endpoint's
      // probe keeps its lease (no second probe) until its circuit is set.
      const failingLong = await inTransaction(leases.db, async (trx) => {
        const failing = await recordEndpointOutcomes(trx, [...endpoints.values()], {
          now,
          circuitFailures: config.circuitFailures,
          disableAfterSeconds: config.disableAfterDays * 86_400,
        });
        await settleDeliveries(trx, settled, now);
        return failing;
      });
      for (const { id, error } of failingLong) {
        if (await disableFailingEndpoint(db, id, { now, days: config.disableAfterDays, error: error ?? 'no answer' })) {
          logger.warn({ endpoint: id }, 'webhook endpoint disabled after failing for days');
        }
      }
    } catch (error) {
      // An outage: the leases run out and the deliveries are claimed again (the attempts stay counted).
      logger.warn({ err: error, deliveries: batch.length }, 'webhook settling failed; the deliveries are sent again when their leases run out');
    }
  }
}
