// `--values <source>=<file>`: a helm values file per product source, as `helm install -f` takes it. The service
// wants `{template_helm_source_id, values}` and the source ids change whenever a product's sources are replaced,
// so the CLI reads the product and finds each source by a name a person knows.
import type { RequestBody, Schema } from '@platform/api-types';
import { UsageError } from './context.ts';
import { readDocument } from './files.ts';
import type { Io } from './io.ts';

type Source = Schema<'ProductSource'>;
export type Overrides = NonNullable<RequestBody<'createInstall'>['overrides']>;

/**
 * A source's name: `metadata.name` when the product gives one, else the chart's name in its chart repository,
 * else the last folder of its path in a Git repository (`deploy/charts/web` → `web`). Its id works as well.
 */
export function sourceName(source: Source): string {
  const label = source.metadata.name;
  if (typeof label === 'string' && label !== '') return label;
  return source.chart.chart ?? source.chart.path?.replace(/\/+$/, '').split('/').at(-1) ?? source.id;
}

/** Collects repeated `--values` options (commander calls this once per occurrence). */
export function collectValues(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Turns `name=file` options into overrides of the product's sources; unknown, ambiguous or repeated names are usage errors. */
export async function valuesOverrides(io: Io, specs: readonly string[], product: Schema<'Product'>): Promise<Overrides> {
  const known = () => product.sources.map((s) => `${sourceName(s)} (${s.id})`).join(', ') || 'none';
  const overrides: Overrides = [];
  for (const spec of specs) {
    const at = spec.indexOf('=');
    const name = spec.slice(0, at);
    const path = spec.slice(at + 1);
    if (at < 1 || path === '') throw new UsageError(`--values ${spec}: expected <source>=<file>, e.g. --values web=values.yaml`);
    const matches = product.sources.filter((s) => s.id === name || sourceName(s) === name);
    if (matches.length === 0) throw new UsageError(`--values ${spec}: product ${product.id} has no source named ${name}. Its sources: ${known()}`);
    if (matches.length > 1)
      throw new UsageError(
        `--values ${spec}: ${matches.length} sources of product ${product.id} are named ${name}; name one by its id: ${matches.map((s) => s.id).join(', ')}`,
      );
    const source = matches[0]!;
    if (overrides.some((o) => o.template_helm_source_id === source.id))
      throw new UsageError(`--values ${spec}: source ${name} (${source.id}) is given twice; merge the values into one file`);
    const values = (await readDocument(io, path)) ?? {}; // an empty file is an empty values file, as for helm
    if (typeof values !== 'object' || Array.isArray(values)) throw new UsageError(`${path} must hold a map of helm values`);
    overrides.push({ template_helm_source_id: source.id, values: values as Record<string, unknown> });
  }
  return overrides;
}
