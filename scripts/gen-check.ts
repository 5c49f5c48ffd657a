// `pnpm gen:check`: regenerates into a scratch folder and fails when a committed generated file differs,
// so the contract and everything derived from it cannot drift apart.
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate, generatedFiles, generatorInputs, repoRoot } from './gen.ts';

const scratch = await mkdtemp(join(tmpdir(), 'platform-gen-check-'));
try {
  await cp(join(repoRoot, 'openapi'), join(scratch, 'openapi'), { recursive: true });
  await cp(join(repoRoot, 'redocly.yaml'), join(scratch, 'redocly.yaml'));
  for (const input of generatorInputs) await cp(join(repoRoot, input), join(scratch, input), { recursive: true });
  await generate(scratch);
  const stale: string[] = [];
  for (const file of generatedFiles) {
    const fresh = await readFile(join(scratch, file), 'utf8');
    const committed = await readFile(join(repoRoot, file), 'utf8').catch(() => null);
    if (committed !== fresh) stale.push(file);
  }
  if (stale.length > 0) {
    console.error(`Generated files are stale: ${stale.join(', ')}.\nRun \`pnpm gen\` and commit the result.`);
    process.exitCode = 1;
  } else {
    console.log(`gen:check: ${generatedFiles.length} generated files are fresh.`);
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}
