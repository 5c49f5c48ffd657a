// Sends webhook deliveries (resources/webhook-deliveries.ts holds the rows, the truth). Like the workflow engine:
//   - a commit that makes deliveries due (a new event's, a redelivery) NOTIFYs the workers, which look at once;
//   - each worker's ticker sends a pg-boss job for every delivery due by the injected clock (a new event's, a
//     retry's, a redelivery's) and for orphans (an attempt whose worker died: its lease ran out and its job is no
//     longer waiting), in the transaction that marks them sent;
//   - a job leases its delivery for one attempt (so two deliveries of a job never attempt it twice at once),
//     POSTs the event to the address the SSRF check approved, and settles the row: succeeded, pending again at
//     the next moment of the retry schedule, or failed when the schedule runs out.
// At least once: a worker killed after the receiver answered but before the row was settled sends it again.

import type { Kysely } from 'kysely';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { WebhookConfig } from '../config.ts';
import type { Database } from '../db/schema.ts';
import { eventById } from '../resources/events.ts';
import { DELIVERIES_DUE_CHANNEL, leaseDelivery, type Settlement, settleDelivery, takeDueDeliveries } from '../resources/webhook-deliveries.ts';
import { endpointById, endpointFailed, endpointSucceeded, signingSecrets } from '../resources/webhook-endpoints.ts';
import type { SecretBox } from '../services/secrets.ts';
import type { Resolver } from '../services/ssrf.ts';
import { type AttemptOutcome, postWebhook, webhookSignature, webhookTarget } from '../services/webhooks.ts';
import { onTransaction } from './engine.ts';

export const WEBHOOK_QUEUE = 'webhook-delivery';

/**
 * Seconds from a failed attempt to the next, by the number of attempts made (Standard Webhooks' and Svix's
 * schedule), then every 10 hours until the retry window ends.
 */
const RETRY_DELAYS = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600];
/** No attempt is made later than this after the first (or after a redelivery). */
export const RETRY_WINDOW_SECONDS = 3 * 86_400;

/** When to try again after `attempts` failed attempts (±10 % jitter, so failures do not retry in lockstep); undefined: give up. */
export function nextAttemptAt(attempts: number, firstAttemptAt: number, now: number, random: () => number = Math.random): number | undefined {
  const base = RETRY_DELAYS[Math.min(attempts, RETRY_DELAYS.length) - 1]!;
  const at = now + Math.max(1, Math.round(base * (0.9 + 0.2 * random())));
  return at <= firstAttemptAt + RETRY_WINDOW_SECONDS ? at : undefined;
}

export interface DispatcherOptions {
  db: Kysely<Database>;
  connectionString: string;
  clock: Clock;
  logger: Logger;
  /** Opens the endpoints' signing secrets. */
  secrets: SecretBox;
  /** Resolves endpoints' host names for the SSRF check made before every connection. */
  resolve: Resolver;
  config: WebhookConfig;
  /** How often (real ms) the ticker looks for due and orphaned deliveries. */
  tickMs: number;
  /** A delivery sent to the queue longer ago than this (real seconds), not held by a worker nor waiting, is resent. */
  orphanAfterSeconds: number;
}

export class WebhookDispatcher {
  private readonly options: DispatcherOptions;
  private readonly boss: PgBoss;
  private ticker: NodeJS.Timeout | undefined;
  private ticking = false;
  /** Asked to look again while a look was under way (a NOTIFY arrived meanwhile). */
  private again = false;
  /** The connection LISTENing for due deliveries; undefined until connected, or after it dropped. */
  private listener: pg.Client | undefined;
  private listening: Promise<void> | undefined;
  private listenFailing = false;
  private stopped = false;
  private started = false;

  constructor(options: DispatcherOptions) {
    this.options = options;
    this.boss = new PgBoss({ connectionString: options.connectionString, schema: 'pgboss', max: 2, useListenNotify: true });
    this.boss.on('error', (error) => {
      if (!this.stopped) options.logger.error({ err: { message: error.message, code: (error as { code?: string }).code } }, 'pg-boss error (webhooks)');
    });
  }

  /** Starts the queue and, in this process, the ticker and the workers that attempt deliveries. */
  async run(): Promise<void> {
    this.started = true;
    await this.boss.start();
    // An attempt lasts the timeout at most; its job expires well after, and is never retried by pg-boss (the
    // row's schedule decides, and the orphan scan resends what a dead worker held).
    await this.boss.createQueue(WEBHOOK_QUEUE, { policy: 'standard', retryLimit: 0, expireInSeconds: 300, notify: true });
    const batchSize = Math.min(4, this.options.config.concurrency);
    await this.boss.work<{ delivery_id: string }>(
      WEBHOOK_QUEUE,
      {
        batchSize,
        burstWhenBatchFull: batchSize > 1,
        localConcurrency: Math.ceil(this.options.config.concurrency / batchSize),
        pollingIntervalSeconds: 0.5,
        notifyPollingIntervalSeconds: 2,
      },
      async (jobs) => {
        await Promise.all(jobs.map((job) => this.deliver(job.data.delivery_id, job.id)));
      },
    );
    await this.listen();
    this.ticker = setInterval(() => void this.tick(), this.options.tickMs);
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
      client.on('notification', () => void this.tick());
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

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    await this.listener?.end().catch(() => {});
    if (this.started) await this.boss.stop({ graceful: true, timeout: this.options.config.timeoutMs + 1000 });
  }

  /** One beat of the ticker: sends a job for each due delivery and each orphan; a beat that fails is retried on the next. */
  async tick(): Promise<number> {
    if (this.stopped) return 0;
    if (this.ticking) {
      this.again = true;
      return 0;
    }
    if (!this.listener) void this.listen();
    this.ticking = true;
    try {
      return await this.options.db.transaction().execute(async (trx) => {
        const taken = await takeDueDeliveries(trx, {
          now: this.options.clock.now(),
          queue: WEBHOOK_QUEUE,
          orphanAfterSeconds: this.options.orphanAfterSeconds,
          limit: 500,
        });
        if (taken.length > 0) {
          await this.boss.insert(
            WEBHOOK_QUEUE,
            taken.map((d) => ({ id: d.job_id, data: { delivery_id: d.id } })),
            { db: onTransaction(trx) },
          );
        }
        return taken.length;
      });
    } catch (error) {
      this.options.logger.warn({ err: error }, 'webhook tick failed; retrying on the next tick');
      return 0;
    } finally {
      this.ticking = false;
      if (this.again) {
        this.again = false;
        void this.tick();
      }
    }
  }

  /** One attempt of one delivery, when this job still holds it. */
  async deliver(deliveryId: string, jobId: string): Promise<void> {
    const { db, clock, config, logger } = this.options;
    try {
      // Held a little longer than an attempt can take; a worker that dies lets go when it runs out.
      const delivery = await leaseDelivery(db, deliveryId, jobId, Math.ceil(config.timeoutMs / 1000) + 2);
      if (!delivery) return;
      const settle = (attempt: { made: boolean; response_status?: number; duration_ms?: number }, settlement: Settlement) =>
        settleDelivery(db, delivery, attempt, settlement, clock.now());
      const endpoint = await endpointById(db, delivery.endpoint_id);
      if (!endpoint?.enabled) {
        await settle({ made: false }, { status: 'cancelled', error: 'Cancelled: the endpoint was disabled.' });
        return;
      }
      const event = await eventById(db, delivery.event_id);
      if (!event) {
        await settle({ made: false }, { status: 'failed', error: 'The event is no longer kept (retention).' });
        return;
      }
      // The exact bytes that are signed are the bytes sent.
      const body = JSON.stringify(event);
      const timestamp = clock.now();
      const target = await webhookTarget(endpoint.url, { resolve: this.options.resolve, allowHttpLoopback: config.allowHttpLoopback });
      let outcome: AttemptOutcome;
      if ('refused' in target) outcome = { durationMs: 0, error: `Not sent: the URL ${target.refused}.` };
      else if (target.addresses.length === 0) outcome = { durationMs: 0, error: `Not sent: ${target.url.hostname} does not resolve.` };
      else {
        const signature = signingSecrets(endpoint, this.options.secrets, timestamp)
          .map((secret) => webhookSignature(secret, event.id, timestamp, body))
          .join(' ');
        const headers = { 'webhook-id': event.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature, 'user-agent': 'platform-webhooks/1' };
        outcome = await postWebhook(target.url, target.addresses[0]!, headers, body, config.timeoutMs);
      }
      const attempt = { made: true, response_status: outcome.status, duration_ms: outcome.durationMs };
      const now = clock.now();
      if (outcome.error === undefined) {
        await settle(attempt, { status: 'succeeded' });
        // Only a failing endpoint has a run of failures to end (the common case skips the round trip).
        if (endpoint.failing_since !== null) await endpointSucceeded(db, endpoint.id);
        return;
      }
      const next = nextAttemptAt(delivery.attempts + 1, delivery.first_attempt_at, now);
      await settle(
        attempt,
        next === undefined ? { status: 'failed', error: outcome.error } : { status: 'pending', next_attempt_at: next, error: outcome.error },
      );
      const disabled = await endpointFailed(db, endpoint.id, { now, disableAfterSeconds: config.disableAfterDays * 86_400, error: outcome.error });
      if (disabled) logger.warn({ endpoint: endpoint.id }, 'webhook endpoint disabled after failing for days');
    } catch (error) {
      // An outage mid-attempt: the lease runs out and the orphan scan sends the delivery again.
      logger.warn({ err: error, delivery: deliveryId }, 'webhook delivery interrupted');
    }
  }
}
