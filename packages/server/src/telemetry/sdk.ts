// The OpenTelemetry SDK, imported only when the OTEL_* variables ask for traces (main.ts): spans of the
// API's sites (telemetry/tracing.ts) batched and exported as OTLP over HTTP (protobuf). The exporter reads its
// endpoint, headers and timeout from the standard variables itself (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, …).
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, resourceAttributesEnvDetector, resourceFromAttributes, serviceNameEnvDetector } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config.ts';
import { tracingStarted } from './tracing.ts';

/** OTEL_TRACES_SAMPLER's values, as the OpenTelemetry specification defines them. */
function samplerOf({ sampler, ratio }: TracingConfig): Sampler {
  const root = sampler.endsWith('traceidratio')
    ? new TraceIdRatioBasedSampler(ratio)
    : sampler.endsWith('always_off')
      ? new AlwaysOffSampler()
      : new AlwaysOnSampler();
  return sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

export interface Tracing {
  /** Exports what is batched (tests; a process's end). */
  flush(): Promise<void>;
  /** Exports what is left and stops. */
  shutdown(): Promise<void>;
}

export function startTracing(config: TracingConfig): Tracing {
  const resource = resourceFromAttributes({ 'service.name': 'platform-api' }).merge(
    detectResources({ detectors: [resourceAttributesEnvDetector, serviceNameEnvDetector] }),
  );
  const provider = new TracerProvider({
    resource,
    sampler: samplerOf(config),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  tracingStarted();
  return { flush: () => provider.forceFlush(), shutdown: () => provider.shutdown() };
}
