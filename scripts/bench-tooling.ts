// `pnpm bench:tooling`: times `pnpm gen` (bundle + types + docs) and `pnpm lint:api` over several runs and
// prints the medians. Targets on the project's 2-core machines: gen under 5 s, lint under 2 s.
import { execFileSync } from 'node:child_process';
import { repoRoot } from './gen.ts';
import { median } from './stats.ts';

const runs = Number(process.env.BENCH_RUNS ?? 5);

export function timeCommand(args: string[]): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    execFileSync('pnpm', args, { cwd: repoRoot, stdio: 'ignore' });
    times.push(performance.now() - started);
  }
  return median(times);
}

export function benchTooling(): { gen: number; lint: number } {
  return { gen: timeCommand(['gen']), lint: timeCommand(['lint:api']) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { gen, lint } = benchTooling();
  console.log(
    `tooling (median of ${runs} runs): pnpm gen ${(gen / 1000).toFixed(2)} s (target < 5 s), pnpm lint:api ${(lint / 1000).toFixed(2)} s (target < 2 s)`,
  );
}
