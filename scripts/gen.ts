// `pnpm gen`: derives everything generated from the contract in openapi/.
//   1. the bundled document (one file consumers load): packages/api-types/generated/openapi.json
//   2. the TypeScript types (openapi-typescript, output set in redocly.yaml): packages/api-types/generated/schema.d.ts
//   3. the reference docs (Redocly build-docs): packages/docs/dist/index.html
//   4. the Hetzner driver's types from its committed API extract (openapi-typescript)
// `generate(root)` works on any folder holding openapi/ and redocly.yaml, so gen:check can regenerate elsewhere.
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Files `generate` writes, relative to the root it is given. */
export const generatedFiles = [
  'packages/api-types/generated/openapi.json',
  'packages/api-types/generated/schema.d.ts',
  'packages/docs/dist/index.html',
  'packages/server/src/providers/hetzner/contract/schema.d.ts',
] as const;
/** Inputs besides openapi/ and redocly.yaml, which gen:check copies too. */
export const generatorInputs = ['packages/server/src/providers/hetzner/contract/openapi.json'] as const;
const [bundle, , docs, hetznerTypes] = generatedFiles;

// Redocly would otherwise try to reach the network for telemetry and update notices.
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

async function tool(name: string, args: string[], cwd: string): Promise<void> {
  try {
    await run(join(repoRoot, 'node_modules', '.bin', name), args, { cwd, env });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${name} ${args.join(' ')} failed:\n${stdout}${stderr}`);
  }
}

export async function generate(root: string): Promise<void> {
  await Promise.all(generatedFiles.map((file) => mkdir(join(root, dirname(file)), { recursive: true })));
  await tool('redocly', ['bundle', 'openapi/openapi.yaml', '--output', bundle], root);
  await Promise.all([
    // A field with a default is optional for the caller who sends it (ClusterCreate.kaas_version), so defaults
    // must not make request properties required.
    tool('openapi-typescript', ['--redocly', 'redocly.yaml', '--default-non-nullable=false'], root),
    // Run in the extract's folder: in the root, openapi-typescript would pick up redocly.yaml and write our own types.
    tool('openapi-typescript', ['openapi.json', '--output', basename(hetznerTypes)], join(root, dirname(hetznerTypes))),
    tool('redocly', ['build-docs', bundle, '--output', docs, '--title', 'Platform Management API reference'], root),
  ]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = performance.now();
  await generate(repoRoot);
  console.log(`generated ${generatedFiles.join(', ')} in ${Math.round(performance.now() - started)} ms`);
}
