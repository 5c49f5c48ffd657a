// Order statistics for the benchmarks and load scenarios: one definition, so their figures compare.

/** The p-th percentile (0..100) by nearest rank; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

export const median = (values: readonly number[]): number => percentile(values, 50);
