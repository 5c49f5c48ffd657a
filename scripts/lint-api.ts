// `pnpm lint:api`: Redocly on the contract (our rules, redocly.yaml) and Spectral with the OWASP ruleset on the
// bundle (.spectral.yaml), side by side: each is mostly one core's work, and together they take the time of the
// slower. A failing one's report is printed whole; one that passes says so in a line. The exit code is 1 when either
// fails.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './gen.ts';

const bin = (name: string) => join(repoRoot, 'node_modules', '.bin', name);

const linters: { name: string; command: string; args: string[] }[] = [
  { name: 'Redocly', command: bin('redocly'), args: ['lint', '--config', 'redocly.yaml'] },
  {
    name: 'Spectral',
    command: bin('spectral'),
    args: ['lint', 'packages/api-types/generated/openapi.json', '--ruleset', '.spectral.yaml', '--fail-severity', 'warn', '--quiet'],
  },
];

function run({ name, command, args }: (typeof linters)[number]): Promise<{ name: string; output: string; code: number }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('error', (error) => resolve({ name, output: `${output}${error.message}\n`, code: 1 }));
    child.once('close', (code, signal) => resolve({ name, output, code: code ?? (signal ? 1 : 0) }));
  });
}

const started = performance.now();
const results = await Promise.all(linters.map(run));
for (const { name, output, code } of results) {
  if (code === 0) continue;
  process.stdout.write(output);
  console.error(`${name} failed (exit ${code}).`);
}
const passed = results.filter((result) => result.code === 0).map((result) => result.name);
if (passed.length > 0) console.log(`${passed.join(' and ')}: no problem in the contract (${((performance.now() - started) / 1000).toFixed(1)} s).`);
process.exitCode = results.some((result) => result.code !== 0) ? 1 : 0;
