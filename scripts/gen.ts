// `pnpm gen`: derives everything generated from the contract in openapi/.
//   1. the bundled document (one file consumers load): packages/api-types/generated/openapi.json
//   2. the TypeScript types (openapi-typescript, from the bundle): packages/api-types/generated/schema.d.ts
//   3. the reference docs (Redocly build-docs): packages/docs/dist/index.html
// `generate(root)` works on any folder holding openapi/ and redocly.yaml, so gen:check can regenerate elsewhere.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';

const run = promisify(execFile);
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Files `generate` writes, relative to the root it is given. */
export const generatedFiles = [
  'packages/api-types/generated/openapi.json',
  'packages/api-types/generated/schema.d.ts',
  'packages/docs/dist/index.html',
] as const;
const [bundle, types, docs] = generatedFiles;

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

// The Components Object's fields in the order the OpenAPI specification lists them.
const sections = ['schemas', 'responses', 'parameters', 'examples', 'requestBodies', 'headers', 'securitySchemes', 'links', 'callbacks', 'pathItems'];
const byName = ([a]: [string, unknown], [b]: [string, unknown]): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * openapi.yaml registers no components: Redocly bundles each one it meets by $ref, in the order it meets them.
 * Sections in the specification's order and components by name keep the bundle (and the types made from it)
 * from reordering when a path does.
 */
async function sortComponents(file: string): Promise<void> {
  const document = JSON.parse(await readFile(file, 'utf8')) as { components?: Record<string, Record<string, unknown>> };
  const components = document.components ?? {};
  const order = (name: string): number => (sections.includes(name) ? sections.indexOf(name) : sections.length);
  document.components = Object.fromEntries(
    Object.entries(components)
      .sort(([a], [b]) => order(a) - order(b))
      .map(([section, entries]) => [section, Object.fromEntries(Object.entries(entries).sort(byName))]),
  );
  await writeFile(file, JSON.stringify(document, null, 2));
}

/** What `openapi-typescript <bundle> --default-non-nullable=false` writes (the CLI would read redocly.yaml's root instead). */
async function writeTypes(root: string): Promise<void> {
  const ast = await openapiTS(pathToFileURL(join(root, bundle)), { defaultNonNullable: false, silent: true });
  await writeFile(join(root, types), `${COMMENT_HEADER}${astToString(ast)}`);
}

export async function generate(root: string): Promise<void> {
  await Promise.all(generatedFiles.map((file) => mkdir(join(root, dirname(file)), { recursive: true })));
  await tool('redocly', ['bundle', 'openapi/openapi.yaml', '--output', bundle], root);
  await sortComponents(join(root, bundle));
  await Promise.all([
    // A field with a default is optional for the caller who sends it (ClusterCreate.kaas_version), so defaults
    // must not make request properties required.
    writeTypes(root),
    tool('redocly', ['build-docs', bundle, '--output', docs, '--title', 'Platform Management API reference'], root),
  ]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = performance.now();
  await generate(repoRoot);
  console.log(`generated ${generatedFiles.join(', ')} in ${Math.round(performance.now() - started)} ms`);
}
