// Calls to the compute provider and the cluster driver: a duration by provider, operation (the method's name) and
// status (ok, the provider error's kind, or error), and a client span of each. A log's lines (an async generator)
// and a method that answers at once pass unmeasured. Without metrics or traces the provider is handed back as it is.
import { ProviderError } from '../providers/types.ts';
import { metrics } from './metrics.ts';
import { failed, SpanKind, startSpan, tracing, withActiveSpan } from './tracing.ts';

const statusOf = (error: unknown): string => (error instanceof ProviderError ? error.kind : 'error');

export function observeCalls<T extends object>(target: T, provider: string): T {
  if (!metrics && !tracing) return target;
  const wrapped = new Map<string, (...args: unknown[]) => unknown>();
  const observed =
    (name: string, method: (...args: unknown[]) => unknown) =>
    (...args: unknown[]) => {
      const started = performance.now();
      const span = tracing
        ? startSpan(`${provider} ${name}`, { kind: SpanKind.CLIENT, attributes: { 'platform.provider': provider, 'platform.provider.operation': name } })
        : undefined;
      const end = (error?: unknown) => {
        metrics?.providerCalls.observe(
          { provider, operation: name, status: error === undefined ? 'ok' : statusOf(error) },
          (performance.now() - started) / 1000,
        );
        if (span && error !== undefined) failed(span, error);
        span?.end();
      };
      let result: unknown;
      try {
        result = span ? withActiveSpan(span, () => method.apply(target, args)) : method.apply(target, args);
      } catch (error) {
        end(error);
        throw error;
      }
      if (!(result instanceof Promise)) {
        span?.end();
        return result;
      }
      return result.then(
        (value: unknown) => {
          end();
          return value;
        },
        (error: unknown) => {
          end(error);
          throw error;
        },
      );
    };
  return new Proxy(target, {
    get(object, name) {
      const value = Reflect.get(object, name, object) as unknown;
      if (typeof value !== 'function' || typeof name !== 'string') return value;
      let call = wrapped.get(name);
      if (call === undefined) {
        const method = value as (...args: unknown[]) => unknown;
        // A log's lines (an async generator) are read over minutes: not a call to measure or a span.
        call = method.constructor.name === 'AsyncGeneratorFunction' ? method.bind(object) : observed(name, method);
        wrapped.set(name, call);
      }
      return call;
    },
  });
}
