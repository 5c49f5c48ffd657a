// The benchmarks' order statistics (scripts/stats.ts): the ratios they print against targets are medians of pairs.
import { describe, expect, it } from 'vitest';
import { median, percentile } from '../scripts/stats.ts';

describe('median', () => {
  it('is the middle value, and the mean of the two middle ones for an even count (two pairs: not the larger)', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([0.92, 0.81])).toBeCloseTo(0.865);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('percentile', () => {
  it('is the nearest rank', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([percentile(values, 50), percentile(values, 99), percentile(values, 100)]).toEqual([51, 100, 100]);
  });
});
