// Traces through the OpenTelemetry API alone. Until the SDK is started (telemetry/sdk.ts, loaded only when the
// OTEL_* variables ask for traces), `tracing` is false and every site here returns at once: no span, no context.
import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';

export { SpanKind };

/** True once the SDK runs (startTracing). */
export let tracing = false;

/** The tracer of the SDK's provider, once it runs. */
let current: Tracer = trace.getTracer('platform');

/** Called by the SDK's start, once its provider is the global one: the sites below begin making spans. */
export function tracingStarted(): void {
  current = trace.getTracer('platform');
  tracing = true;
}

const tracer = () => current;

/**
 * Runs `work` in a span named `name`, a child of `parent` (default: the active span), ended when it settles; a
 * throw is recorded on it. Without tracing, just runs `work`.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span | undefined) => Promise<T>,
  options: { parent?: Context; kind?: SpanKind } = {},
): Promise<T> {
  if (!tracing) return work(undefined);
  return tracer().startActiveSpan(name, { attributes, kind: options.kind ?? SpanKind.INTERNAL }, options.parent ?? context.active(), async (span) => {
    try {
      return await work(span);
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** A span, a child of the active one, that the caller ends (one that starts no other: an SQL statement). */
export const startSpan = (name: string, options: SpanOptions): Span => tracer().startSpan(name, options, context.active());

/** Runs `work` with `span` active (the parent of what it starts). */
export const withActiveSpan = <T>(span: Span, work: () => T): T => context.with(trace.setSpan(context.active(), span), work);

/**
 * Runs `work` outside any trace: what it starts (a poller that later requests share, a stream's polls for as long
 * as it is open) makes no span of the request that happened to start it.
 */
export const detached = <T>(work: () => T): T => (tracing ? context.with(ROOT_CONTEXT, work) : work());

/** Marks `span` failed with what was thrown. */
export function failed(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** Whether there is a span recording now, which a child (an SQL statement) may join. */
export const recordingSpan = (): Span | undefined => {
  if (!tracing) return undefined;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
};

/** The active span as a W3C traceparent, to carry across the queue (a workflow's row, an event's); null without one. */
export function currentTraceparent(): string | null {
  if (!tracing) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** The context a traceparent (an incoming request's, a stored one) names; the root context for none. */
export function contextOf(carrier: Record<string, string | string[] | undefined> | string | null): Context {
  if (!tracing || carrier === null) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, typeof carrier === 'string' ? { traceparent: carrier } : carrier);
}

/** The trace id of `span` when it is recorded (sampled): what a log line or an error body may point to. */
export const recordedTraceId = (span: Span | undefined): string | undefined => (span?.isRecording() ? span.spanContext().traceId : undefined);
