// The variables that turn metrics and traces on (METRICS_PORT/METRICS_HOST, and the OpenTelemetry specification's
// OTEL_* as it defines them; a malformed one stops start-up with one line naming it), and the deadline of the
// gauges a scrape reads from the database.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { DATABASE_READ_DEADLINE_MS, enableMetrics, observeDatabase } from '../src/telemetry/metrics.ts';

describe('metrics', () => {
  it('listen on 9464 of HOST by default, on the port and host given, or not at all', () => {
    expect(loadConfig({}).metrics).toEqual({ port: 9464, host: '127.0.0.1' });
    expect(loadConfig({ HOST: '0.0.0.0' }).metrics).toEqual({ port: 9464, host: '0.0.0.0' });
    expect(loadConfig({ METRICS_PORT: '0', METRICS_HOST: '10.0.0.5' }).metrics).toEqual({ port: 0, host: '10.0.0.5' });
    expect(loadConfig({ METRICS_PORT: 'off' }).metrics).toBeUndefined();
    expect(() => loadConfig({ METRICS_PORT: 'nine' })).toThrow(new ConfigError('METRICS_PORT must be an integer from 0 to 65535, got "nine"'));
  });
});

describe('traces', () => {
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

  it('are off without an exporter or an OTLP endpoint, and when disabled', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).tracing).toBeUndefined();
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
  });

  it('are on with an OTLP endpoint or the otlp exporter, every trace kept unless a sampler says otherwise', () => {
    expect(loadConfig(endpoint).tracing).toEqual({ sampler: 'parentbased_always_on', ratio: 1 });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }).tracing).toBeDefined();
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).tracing).toBeDefined();
    expect(loadConfig({ ...endpoint, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }).tracing).toEqual({
      sampler: 'parentbased_traceidratio',
      ratio: 0.1,
    });
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER must be otlp or none, got "zipkin"'],
    [{ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf (OTLP over HTTP), got "grpc"'],
    [
      { ...endpoint, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' },
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http/protobuf (OTLP over HTTP), got "http/json"',
    ],
    [
      { ...endpoint, OTEL_TRACES_SAMPLER: 'sometimes' },
      'OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio, got "sometimes"',
    ],
    [{ ...endpoint, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '10' }, 'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "10"'],
    [{ ...endpoint, OTEL_SDK_DISABLED: 'yes' }, 'OTEL_SDK_DISABLED must be true or false, got "yes"'],
  ])('refuse %o with one line naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(new ConfigError(message));
  });
});

describe('the gauges read from the database', () => {
  it('are left out of a scrape whose reading does not answer within the deadline, which is counted', async () => {
    const { registry } = enableMetrics();
    observeDatabase(() => new Promise(() => {}));
    const started = performance.now();
    const text = await registry.metrics();
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(DATABASE_READ_DEADLINE_MS - 50);
    expect(text).not.toMatch(/^platform_workflows\{/m);
    expect(text).toMatch(/^platform_webhook_endpoints_cooling nan$/im);
    expect(text).toMatch(/^platform_workflow_oldest_pending_age_seconds nan$/im);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    // Counted as it happened, so read by the next scrape.
    expect(await registry.getSingleMetricAsString('platform_metrics_database_read_failures_total')).toMatch(/ 1$/m);
  });

  it('are read once for the scrapes of a second', async () => {
    const { registry } = enableMetrics();
    let reads = 0;
    observeDatabase(async () => {
      reads++;
      return { workflows: [{ kind: 'createCluster', status: 'pending', count: 3 }], oldestPendingSeconds: 12, endpointsCooling: 2 };
    });
    const [first] = await Promise.all([registry.metrics(), registry.metrics()]);
    await registry.metrics();
    expect(reads).toBe(1);
    expect(first).toMatch(/^platform_workflows\{kind="createCluster",state="pending"\} 3$/m);
    expect(first).toMatch(/^platform_workflow_oldest_pending_age_seconds 12$/m);
    expect(first).toMatch(/^platform_webhook_endpoints_cooling 2$/m);
  });
});
