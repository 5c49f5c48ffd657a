// `pnpm contracts:extract`: makes the reduced extract of Hetzner Cloud's published OpenAPI description that
// the Hetzner driver's types and contract tests use: only the operations the driver calls and the schemas they
// reach, with descriptions and named examples stripped. Schema-level `example` values stay: they are small, and with
// them a Prism mock of the extract answers a plausible catalogue (a server type `cpx22`, a location `fsn1`) that a
// compute config's filter can match, instead of the word "string". The tests read only the committed extract.
//   node scripts/extract-provider-contracts.ts [path/to/hetzner-cloud/openapi.json]
import { existsSync } from 'node:fs';
import { chmod, copyFile, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
// The published descriptions sit beside the clone (../shared/provider-contracts), or beside a worktree's parent.
const candidates = [join(repoRoot, '..'), join(repoRoot, '..', '..')].map((dir) => join(dir, 'shared', 'provider-contracts', 'hetzner-cloud', 'openapi.json'));
const source = process.argv[2] ?? candidates.find((file) => existsSync(file)) ?? candidates[0]!;
const target = join(repoRoot, 'packages', 'server', 'src', 'providers', 'hetzner', 'contract');

/** The operations the driver calls (path → methods). */
export const OPERATIONS: Record<string, string[]> = {
  '/servers': ['get', 'post'],
  '/servers/{id}': ['get', 'delete'],
  '/servers/{id}/actions/shutdown': ['post'],
  '/servers/{id}/actions/poweroff': ['post'],
  '/servers/{id}/actions/poweron': ['post'],
  '/servers/{id}/actions/create_image': ['post'],
  '/images': ['get'],
  '/images/{id}': ['get', 'delete'],
  '/actions/{id}': ['get'],
  '/server_types': ['get'],
  '/locations': ['get'],
  '/firewalls': ['get', 'post'],
  '/firewalls/{id}': ['delete'],
  '/firewalls/{id}/actions/set_rules': ['post'],
  '/load_balancers': ['get'],
  '/load_balancers/{id}': ['put', 'delete'],
};

/** Documentation-only keys, removed everywhere except inside `properties` (where they are property names). */
const STRIPPED = new Set(['description', 'summary', 'examples', 'externalDocs', 'title', 'x-codeSamples']);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** `within` is the key that holds `node`: in `properties` keys are names; in `responses`, Response Objects. */
function strip(node: Json, within?: string): Json {
  if (Array.isArray(node)) return node.map((item) => strip(item));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(node)) {
    if (within !== 'properties' && STRIPPED.has(key)) continue;
    out[key] = strip(value, within === 'properties' || within === 'responses' ? undefined : key);
    // A Response Object must have a description (OpenAPI 3.0): kept, emptied.
    if (within === 'responses') out[key] = { description: '', ...(out[key] as Record<string, Json>) };
  }
  return out;
}

function refsIn(node: Json, found: Set<string>): void {
  if (Array.isArray(node)) for (const item of node) refsIn(item, found);
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.add(value);
      else refsIn(value, found);
    }
  }
}

const document = JSON.parse(await readFile(source, 'utf8')) as Record<string, any>;
const paths: Record<string, Json> = {};
for (const [path, methods] of Object.entries(OPERATIONS)) {
  const item = document.paths[path];
  if (!item) throw new Error(`${path} is not in ${source}`);
  const kept: Record<string, Json> = {};
  if (item.parameters) kept.parameters = item.parameters;
  for (const method of methods) {
    if (!item[method]) throw new Error(`${method.toUpperCase()} ${path} is not in ${source}`);
    kept[method] = item[method];
  }
  paths[path] = kept;
}

/**
 * Hetzner's API changes after the source's date, each as hcloud-go (github.com/hetznercloud/hcloud-go) reads the API
 * since, applied before the schemas are collected:
 * - a server type's per-location entry tells whether the type is on sale there (`available`) and recommended
 *   (`recommended`): hcloud/schema/server_type.go `ServerTypeLocation`, CHANGELOG v2.38.0;
 * - a server has no `datacenter` any more (removed 2026-07-01), its `location` says where it is:
 *   hcloud/schema/server.go `Server`, CHANGELOG v2.45.0.
 */
export const AMENDMENTS = ['server_type_location: `available` and `recommended` (booleans, required)', 'server: `datacenter` removed'];
function amend(components: Record<string, any>): void {
  const location = components.schemas.server_type_location;
  location.properties.available = { type: 'boolean', example: true };
  location.properties.recommended = { type: 'boolean', example: true };
  location.required = [...location.required, 'available', 'recommended'].sort();
  const server = components.schemas.server;
  delete server.properties.datacenter;
  server.required = server.required.filter((name: string) => name !== 'datacenter');
}

amend(document.components);

// The schemas the kept operations reach, transitively.
const schemas: Record<string, Json> = {};
const pending = new Set<string>();
refsIn(paths as Json, pending);
while (pending.size > 0) {
  const [ref] = pending;
  pending.delete(ref!);
  const match = /^#\/components\/schemas\/(.+)$/.exec(ref!);
  if (!match) throw new Error(`unexpected reference ${ref}`);
  const name = match[1]!;
  if (name in schemas) continue;
  const schema = document.components.schemas[name];
  if (!schema) throw new Error(`${ref} does not resolve in ${source}`);
  schemas[name] = schema;
  const inner = new Set<string>();
  refsIn(schema, inner);
  for (const r of inner) if (!(r.replace('#/components/schemas/', '') in schemas)) pending.add(r);
}

const extract = {
  openapi: document.openapi,
  info: { title: `${document.info.title} (reduced extract)`, version: document.info.version },
  servers: [{ url: 'https://api.hetzner.cloud/v1' }],
  security: document.security,
  paths: strip(paths as Json),
  components: {
    securitySchemes: document.components.securitySchemes,
    schemas: Object.fromEntries(
      Object.keys(schemas)
        .sort()
        .map((name) => [name, strip(schemas[name]!)]),
    ),
  },
};
await writeFile(join(target, 'openapi.json'), `${JSON.stringify(extract, null, 2)}\n`);
const operationCount = Object.values(OPERATIONS).reduce((n, methods) => n + methods.length, 0);
await copyFile(join(dirname(source), 'LICENSE'), join(target, 'LICENSE'));
await chmod(join(target, 'LICENSE'), 0o644);
const list = Object.entries(OPERATIONS).flatMap(([path, methods]) => methods.map((m) => `- ${m.toUpperCase()} ${path}`));
await writeFile(
  join(target, 'PROVENANCE.md'),
  `# Provenance of the Hetzner Cloud API extract

- Source: github.com/MaximilianKoestler/hcloud-openapi, \`openapi/hcloud.json\` at commit 5f93a6da71d3 (2026-02),
  an OpenAPI ${document.openapi} description converted from Hetzner's official API documentation
  (API version ${document.info.version}). License: MIT, see LICENSE in this folder.
- Made by \`pnpm contracts:extract\` (scripts/extract-provider-contracts.ts); \`pnpm gen\` derives schema.d.ts from it.
- Kept: the ${operationCount} operations below and the ${Object.keys(schemas).length} component schemas they reach (of
  ${Object.keys(document.components.schemas).length}); the security scheme; the public server URL.
- Removed: every other path and schema; path-level \`servers\`; the documentation keys (a Response Object's required
  \`description\` is kept, emptied) ${[...STRIPPED].map((k) => `\`${k}\``).join(', ')}.
- Amended to Hetzner's API since the source's date, as hcloud-go reads it (scripts/extract-provider-contracts.ts
  names the hcloud-go files):
${AMENDMENTS.map((a) => `  - ${a}`).join('\n')}

  Nothing else was changed.

${list.join('\n')}
`,
);
console.log(
  `wrote ${target}/openapi.json: ${operationCount} operations, ${Object.keys(schemas).length} schemas (of ${Object.keys(document.components.schemas).length})`,
);
