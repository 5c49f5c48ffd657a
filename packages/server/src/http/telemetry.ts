// Each API request measured (platform_http_request_duration_seconds by operationId and status, the requests in
// flight) and traced: a server span named by its operationId, a child of the caller's W3C traceparent, under which
// run its SQL, provider calls and the workflows and deliveries it starts. Installed only when metrics or traces
// are on (app.ts); the span's trace id goes into the access log line and a 500's details (ctx.state.traceId).
import type { Context, Middleware, Next } from 'koa';
import { metrics } from '../telemetry/metrics.ts';
import { contextOf, failed, inSpan, recordedTraceId, SpanKind, tracing } from '../telemetry/tracing.ts';
import type { OperationMeta } from './contract.ts';

/** The operation the request was routed to (dispatch.ts sets it), else `none` (404, 405, the probes, the docs). */
const operationOf = (ctx: Context): string => routed(ctx)?.operationId ?? 'none';
const routed = (ctx: Context) => ctx.state.operation as OperationMeta | undefined;

export function requestTelemetry(): Middleware {
  const traced = (ctx: Context, next: Next) =>
    inSpan(
      ctx.method,
      { 'http.request.method': ctx.method },
      async (span) => {
        ctx.state.traceId = recordedTraceId(span);
        try {
          await next();
        } finally {
          const operation = operationOf(ctx);
          span?.updateName(operation);
          span?.setAttributes({ 'http.response.status_code': ctx.status, 'http.route': routed(ctx)?.path ?? '', 'platform.operation': operation });
          if (span && ctx.status >= 500) failed(span, new Error(`${ctx.status}`));
        }
      },
      { parent: contextOf(ctx.req.headers), kind: SpanKind.SERVER },
    );
  // Each operation and status's histogram child, found once: prom-client hashes a label object on every observe.
  const durations = new Map<string, Map<number, { observe(seconds: number): void }>>();
  const durationOf = (operation: string, status: number) => {
    let byStatus = durations.get(operation);
    if (byStatus === undefined) durations.set(operation, (byStatus = new Map()));
    let child = byStatus.get(status);
    if (child === undefined) byStatus.set(status, (child = metrics!.requestDuration.labels({ operation, status })));
    return child;
  };
  return async (ctx, next) => {
    const m = metrics;
    const started = performance.now();
    m?.requestsInFlight.inc();
    try {
      await (tracing ? traced(ctx, next) : next());
    } finally {
      if (m) {
        m.requestsInFlight.dec();
        durationOf(operationOf(ctx), ctx.status).observe((performance.now() - started) / 1000);
      }
    }
  };
}
