// `pnpm fuzz [--runs N] [--seed S]`: the contract fuzzer (test/fuzz) with more cases than CI runs, under a
// seed that is printed first, so a failure can be repeated exactly: `pnpm fuzz --runs N --seed S`.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

function flag(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

const runs = Number(flag('runs') ?? 500);
const seed = Number(flag('seed') ?? Math.floor(Math.random() * 2 ** 31));
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
  console.error('usage: pnpm fuzz [--runs N] [--seed S]   (N ≥ 1, S an integer)');
  process.exit(2);
}
console.log(`fuzz: ${runs} runs per operation and kind, seed ${seed} (repeat with: pnpm fuzz --runs ${runs} --seed ${seed})`);
const result = spawnSync(join(repoRoot, 'node_modules', '.bin', 'vitest'), ['run', 'test/fuzz', '--testTimeout', '0', '--hookTimeout', '120000'], {
  cwd: repoRoot,
  stdio: 'inherit',
  env: { ...process.env, FUZZ_RUNS: String(runs), FUZZ_SEED: String(seed) },
});
console.log(`fuzz: seed ${seed}, ${runs} runs per operation and kind: ${result.status === 0 ? 'passed' : 'FAILED'}`);
process.exit(result.status ?? 1);
