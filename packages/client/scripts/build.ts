// `pnpm --filter @platform/client build` (and `pnpm pack`, through prepack): dist/ as consumers install it.
//   - dist/*.js and dist/*.d.ts from src/ (tsconfig.build.json: DOM lib, no Node types);
//   - the contract's generated types inlined under dist/api-types/, since @platform/api-types is private and
//     unpublished: the declarations' imports of it are pointed there. Its imports are type-only, so the
//     JavaScript needs nothing from it.
//   - relative `.ts` specifiers in the declarations rewritten to `.js`, which every resolution mode accepts.
import { execFile } from 'node:child_process';
import { cp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const apiTypesDir = join(packageDir, '..', 'api-types');
const dist = join(packageDir, 'dist');
const tsc = join(packageDir, '..', '..', 'node_modules', '.bin', 'tsc');
const run = promisify(execFile);

async function compile(args: string[]): Promise<void> {
  try {
    await run(tsc, args, { cwd: packageDir });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`tsc ${args.join(' ')} failed:\n${stdout}${stderr}`);
  }
}

await rm(dist, { recursive: true, force: true });
await compile(['-p', 'tsconfig.build.json']);
// The helper types of @platform/api-types, as declarations beside a copy of the generated schema.
await compile([
  join(apiTypesDir, 'src', 'index.ts'),
  ...['--declaration', '--emitDeclarationOnly', '--skipLibCheck', '--strict', '--allowImportingTsExtensions'],
  ...['--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2023'],
  ...['--rootDir', apiTypesDir, '--outDir', join(dist, 'api-types')],
]);
for (const generated of ['schema.d.ts', 'defaults.d.ts']) {
  await cp(join(apiTypesDir, 'generated', generated), join(dist, 'api-types', 'generated', generated));
}

const apiTypesEntry = join(dist, 'api-types', 'src', 'index.d.ts');
async function* files(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}
for await (const file of files(dist)) {
  const text = await readFile(file, 'utf8');
  if (!file.endsWith('.d.ts')) {
    if (/['"]@platform\//.test(text)) throw new Error(`${relative(packageDir, file)} imports a private package`);
    continue;
  }
  let entry = relative(dirname(file), apiTypesEntry).replace(/\.d\.ts$/, '.js');
  if (!entry.startsWith('.')) entry = `./${entry}`;
  const rewritten = text.replace(/(['"])@platform\/api-types\1/g, `'${entry}'`).replace(/(['"])(\.{1,2}\/[^'"]*?)(?:\.d)?\.ts\1/g, `'$2.js'`);
  if (/['"]@platform\//.test(rewritten)) throw new Error(`${relative(packageDir, file)} still refers to a private package`);
  if (rewritten !== text) await writeFile(file, rewritten);
}
console.log(`built ${relative(process.cwd(), dist) || 'dist'}`);
