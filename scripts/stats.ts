// Order statistics for the benchmarks and load scenarios: one definition, so their figures compare.

/** The p-th percentile (0..100) by nearest rank; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** The middle value, the mean of the two middle ones for an even count (so two pairs' median is not the larger); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = Float64Array.from(values).sort();
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
