// `pnpm gen`: derives everything generated from the contract in openapi/.
//   1. the bundled document (one file consumers load): packages/api-types/generated/openapi.json
//   2. the TypeScript types (openapi-typescript, from the bundle): packages/api-types/generated/schema.d.ts
//   3. the reference docs (Redocly build-docs, with request samples from scripts/code-samples.ts):
//      packages/docs/dist/index.html and the Redoc script it runs, packages/docs/dist/redoc.standalone.js, both
//      served by the server under /docs so that the page needs nothing from the network
//   4. the client's operation-named methods (scripts/gen-client.ts): packages/client/src/operations.ts
//   5. the Hetzner driver's types from its committed API extract (openapi-typescript)
// `generate(root)` works on any folder holding openapi/ and redocly.yaml, so gen:check can regenerate elsewhere.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { codeSampleLanguages, serverUrl, withCodeSamples } from './code-samples.ts';
import { clientOperationsFile, generateClientOperations } from './gen-client.ts';

const run = promisify(execFile);
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Files `generate` writes, relative to the root it is given. */
export const generatedFiles = [
  'packages/api-types/generated/openapi.json',
  'packages/api-types/generated/schema.d.ts',
  'packages/docs/dist/index.html',
  'packages/docs/dist/redoc.standalone.js',
  clientOperationsFile,
  'packages/server/src/providers/hetzner/contract/schema.d.ts',
  'packages/api-types/generated/defaults.d.ts',
] as const;
/** Inputs besides openapi/ and redocly.yaml, which gen:check copies too. */
export const generatorInputs = ['packages/server/src/providers/hetzner/contract/openapi.json'] as const;
const [bundle, types, docs, redocScript, , hetznerTypes, defaults] = generatedFiles;

// build-docs makes a page that imports Redoc from Redocly's CDN; the installed @redocly/cli ships that very file
// (the page's integrity hash is computed from it), so the page imports the copy the server serves instead.
const installedRedoc = join(repoRoot, 'node_modules', '@redocly', 'cli', 'lib', 'chunks', 'redoc.standalone.js');
const redocScriptUrl = '/docs/redoc.standalone.js';
/** The navigation entry under which the docs list every schema (Redoc's `schemaDefinitionsTagName`). */
const schemasTagName = 'Schemas';

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

type Schema = { $ref?: string; default?: unknown; properties?: Record<string, Schema> };
type Operation = {
  operationId: string;
  'x-requires-workspace'?: boolean;
  parameters?: ({ $ref: string } | { name: string; in: string; schema?: Schema })[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
};

/**
 * The request fields the contract gives a default (the server's validator fills them in), per operation, as types:
 * handlers see them as always present, and no code restates a default. Likewise the operations that act in a
 * workspace: their handlers see one as always there.
 */
async function writeDefaults(root: string): Promise<void> {
  const document = JSON.parse(await readFile(join(root, bundle), 'utf8')) as {
    paths: Record<string, Record<string, Operation>>;
    components: { parameters: Record<string, { name: string; in: string; schema?: Schema }>; schemas: Record<string, Schema> };
  };
  const deref = (schema: Schema | undefined): Schema | undefined => (schema?.$ref ? deref(document.components.schemas[schema.$ref.split('/').pop()!]) : schema);
  const query: string[] = [];
  const body: string[] = [];
  const needWorkspace: string[] = [];
  const union = (names: string[]) => names.map((name) => `'${name}'`).join(' | ');
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      if (!operation?.operationId) continue;
      if (operation['x-requires-workspace'] === true) needWorkspace.push(operation.operationId);
      const parameters = (operation.parameters ?? []).map((p) => ('$ref' in p ? document.components.parameters[p.$ref.split('/').pop()!]! : p));
      const queryNames = parameters.filter((p) => p.in === 'query' && p.schema?.default !== undefined).map((p) => p.name);
      if (queryNames.length > 0) query.push(`  ${operation.operationId}: ${union(queryNames)};`);
      const properties = deref(operation.requestBody?.content?.['application/json']?.schema)?.properties ?? {};
      const bodyNames = Object.entries(properties)
        .filter(([, schema]) => deref(schema)?.default !== undefined)
        .map(([name]) => name);
      if (bodyNames.length > 0) body.push(`  ${operation.operationId}: ${union(bodyNames)};`);
    }
  }
  const text = [
    '// Generated by `pnpm gen` from the contract; do not edit. The request fields that have a default, which the',
    "// server's validator fills in when a request leaves them out, and the operations that act in a workspace",
    '// (`x-requires-workspace`), which the binding gives them or answers 422 naming X-Workspace-Id.',
    '',
    '/** Query parameters with a default, per operationId. */',
    `export interface QueryDefaults {\n${query.sort().join('\n')}\n}`,
    '',
    '/** Top-level JSON body fields with a default, per operationId. */',
    `export interface BodyDefaults {\n${body.sort().join('\n')}\n}`,
    '',
    '/** Operations that act in a workspace: their handlers always get one. */',
    `export type WorkspaceRequired = ${union(needWorkspace.sort())};`,
    '',
  ].join('\n');
  await writeFile(join(root, defaults), text);
}

/** Bundles `root`'s openapi/openapi.yaml into `output` (a path from `root`, or absolute) as consumers load it. */
export async function bundleContract(root: string, output: string): Promise<void> {
  await tool('redocly', ['bundle', 'openapi/openapi.yaml', '--output', output], root);
  await sortComponents(resolve(root, output));
}

export async function generate(root: string): Promise<void> {
  await Promise.all(generatedFiles.map((file) => mkdir(join(root, dirname(file)), { recursive: true })));
  await bundleContract(root, bundle);
  await Promise.all([
    // A field with a default is optional for the caller who sends it (ClusterCreate.kaas_version), so defaults
    // must not make request properties required.
    writeTypes(root),
    writeDefaults(root),
    // Run in the extract's folder, so that no configuration of ours applies to it.
    tool('openapi-typescript', ['openapi.json', '--output', basename(hetznerTypes)], join(root, dirname(hetznerTypes))),
    buildDocs(root),
    generateClientOperations(root, bundle),
  ]);
}

async function buildDocs(root: string): Promise<void> {
  // The docs read a copy of the bundle with request samples; the bundle itself stays the bare contract.
  const scratch = await mkdtemp(join(tmpdir(), 'platform-docs-'));
  try {
    const source = join(scratch, 'openapi.json');
    await writeFile(source, JSON.stringify(withDeprecationNotes(withRoleNotes(withCodeSamples(JSON.parse(await readFile(join(root, bundle), 'utf8')))))));
    // Every schema of the contract gets a page of its own, listed under a "Schemas" entry of the navigation.
    const options = JSON.stringify({ codeSamples: { languages: codeSampleLanguages }, schemaDefinitionsTagName: schemasTagName });
    await tool('redocly', ['build-docs', source, '--output', docs, '--title', 'Platform Management API reference', '--openapi', options], root);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const script = offlineRedoc(await readFile(installedRedoc, 'utf8'));
  await writeFile(join(root, redocScript), script);
  const definition = JSON.parse(await readFile(join(root, bundle), 'utf8')) as { servers?: Record<string, unknown>[] };
  const published = definition.servers?.[0] ? serverUrl(definition.servers[0]) : undefined;
  if (!published) throw new Error('the contract names no server for the samples');
  await writeFile(join(root, docs), offlinePage(await readFile(join(root, docs), 'utf8'), published, script));
}

type DocOperation = { description?: string; security?: unknown[]; 'x-required-role'?: string; 'x-audited'?: boolean };

/**
 * Starts each operation's description with the role its `x-required-role` declares, and says which operations
 * the audit log records (every authenticated one but GET, and the reads marked `x-audited`), for readers of the docs.
 */
function withRoleNotes(doc: Record<string, unknown>): Record<string, unknown> {
  const rootSecurity = (doc.security as unknown[] | undefined) ?? [];
  for (const item of Object.values(doc.paths as Record<string, Record<string, DocOperation>>)) {
    for (const [method, operation] of Object.entries(item)) {
      if (typeof operation !== 'object' || !['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue;
      const authenticated = (operation.security ?? rootSecurity).length > 0;
      if (authenticated && (method !== 'get' || operation['x-audited'] === true)) {
        operation.description = `${operation.description ?? ''}\n\n**Recorded in the audit log** (see Audit).`;
      }
      const role = operation['x-required-role'];
      if (role) operation.description = `**Requires the \`${role}\` role** in the workspace (see Roles).\n\n${operation.description ?? ''}`;
    }
  }
  return doc;
}

type Deprecatable = {
  description?: string;
  deprecated?: boolean;
  'x-deprecated-at'?: string;
  'x-sunset'?: string;
  'x-successor'?: string;
  parameters?: ({ $ref: string } | Deprecatable)[];
  name?: string;
};

/** What the docs say of a deprecation beside Redoc's "Deprecated" mark: since when, until when, what replaces it. */
function deprecationNote(node: Deprecatable, successorLink: (successor: string) => string): string {
  const parts = [`**Deprecated** since ${node['x-deprecated-at']}`];
  if (node['x-sunset']) parts.push(`it stops answering on ${node['x-sunset']}`);
  if (node['x-successor']) parts.push(`use ${successorLink(node['x-successor'])} instead`);
  return `${parts.join('; ')}. Its answers say so in the \`Deprecation\`, \`Sunset\` and \`Link\` headers (see Compatibility).`;
}

/** Starts the description of each deprecated operation and parameter with its deprecation note. */
export function withDeprecationNotes(doc: Record<string, unknown>): Record<string, unknown> {
  const parameters = ((doc.components as { parameters?: Record<string, Deprecatable> }).parameters ?? {}) as Record<string, Deprecatable>;
  const noted = new Set<Deprecatable>();
  const note = (node: Deprecatable, successorLink: (successor: string) => string) => {
    if (node.deprecated !== true || noted.has(node)) return;
    noted.add(node);
    node.description = `${deprecationNote(node, successorLink)}\n\n${node.description ?? ''}`;
  };
  for (const item of Object.values(doc.paths as Record<string, Record<string, Deprecatable>>)) {
    for (const [method, operation] of Object.entries(item)) {
      if (typeof operation !== 'object' || !['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue;
      note(operation, (successor) => `[\`${successor}\`](#operation/${successor})`);
      for (const parameter of operation.parameters ?? []) {
        const resolved = '$ref' in parameter ? parameters[parameter.$ref.split('/').pop()!] : parameter;
        if (resolved) note(resolved, (successor) => `the \`${successor}\` parameter`);
      }
    }
  }
  return doc;
}

// Redoc's sidebar footer ("API docs by" and Redocly's logo, linking to redocly.com) loads the logo from Redocly's
// CDN, which the page's policy refuses (an error in the console) and an offline reader cannot reach; no option turns
// it off. The copy the server serves shows the name as a small inline image instead, the link kept.
const redoclyLogos = ['https://cdn.redoc.ly/redoc/logo-mini-full.svg', 'https://cdn.redoc.ly/redoc/logo-mini.svg'];
const redoclyWordmark = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="16" viewBox="0 0 64 16"><text x="0" y="13" font-family="sans-serif" font-size="13" font-weight="600" fill="#0044d4">Redocly</text></svg>',
)}`;

function offlineRedoc(script: string): string {
  for (const logo of redoclyLogos) {
    const uses = script.split(logo).length - 1;
    if (uses !== 1) throw new Error(`expected Redoc to name ${logo} once, found ${uses}: its footer changed and needs a look`);
  }
  return redoclyLogos.reduce((text, logo) => text.replace(logo, redoclyWordmark), script);
}

/**
 * What the page runs before Redoc when the API's own server serves it (the server adds `<meta name="platform-api">`):
 * the API is at the page's origin, so the samples call it and the servers box lists it first. The file as built
 * (published elsewhere, or opened from disk) keeps the contract's servers.
 */
function servedHere(published: string): string {
  return `
      if (document.querySelector('meta[name="platform-api"]')) {
        const here = location.origin;
        for (const item of Object.values(__redoc_definition.paths ?? {}))
          for (const operation of Object.values(item))
            for (const sample of operation?.["x-codeSamples"] ?? []) sample.source = sample.source.replaceAll(${JSON.stringify(published)}, here);
        // The contract's templated server stands for this one; a fixed one (the local server) stays when elsewhere.
        __redoc_definition.servers = [
          { url: here, description: "This server, the one that serves this page." },
          ...(__redoc_definition.servers ?? []).filter((server) => server.url !== here && !server.url.includes("{")),
        ];
      }
`;
}

/**
 * Points the page at the served copy of Redoc, keeps its server-rendered links on the page, and adds a
 * Content-Security-Policy that lets it load nothing from elsewhere: scripts from this origin and the page's own
 * inline scripts (by hash), images from this origin only (Redoc's footer would otherwise fetch Redocly's logo).
 */
function offlinePage(html: string, published: string, script: string): string {
  // The preload's integrity hash is the installed file's; the served copy differs by its footer's logo.
  const integrity = / integrity="sha384-[A-Za-z0-9+/=]+"/g;
  const integrities = html.match(integrity)?.length ?? 0;
  if (integrities !== 1) throw new Error(`expected build-docs's page to carry one integrity hash, found ${integrities}`);
  html = html.replace(integrity, ` integrity="sha384-${createHash('sha384').update(script).digest('base64')}"`);
  const cdn = /https:\/\/cdn\.redocly\.com\/redoc\/v[\d.]+\/bundles\/redoc\.standalone\.js/g;
  const uses = html.match(cdn)?.length ?? 0;
  // The preload link and the import: anything else means build-docs changed its page, and this needs a look.
  if (uses !== 2) throw new Error(`expected build-docs's page to name Redoc's CDN script twice, found ${uses}`);
  // The server-rendered links say /<section> (build-docs renders for a site root) where Redoc, once running,
  // links #/<section>: before it runs (or without JavaScript) a click would leave the page for the API's 404.
  const start = html.indexOf('<div id="redoc">');
  const end = html.indexOf('<script type="module">', start);
  if (start < 0 || end < 0) throw new Error('build-docs\'s page has no <div id="redoc"> followed by its module script');
  const rendered = html.slice(start, end).replace(/ href="\/(?!\/)/g, ' href="#/');
  const hydrate = 'hydrate(__redoc_definition,';
  if (html.split(hydrate).length !== 2) throw new Error(`expected build-docs's page to call ${hydrate} once`);
  const page = `${html.slice(0, start)}${rendered}${html.slice(end)}`.replace(cdn, redocScriptUrl).replace(hydrate, () => `${servedHere(published)}${hydrate}`);
  const hashes = [...page.matchAll(/<script(?![^>]*\ssrc=)[^>]*>([\s\S]*?)<\/script>/g)].map(
    ([, body]) =>
      `'sha256-${createHash('sha256')
        .update(body ?? '')
        .digest('base64')}'`,
  );
  const csp = [
    "default-src 'self'",
    `script-src 'self' ${hashes.join(' ')}`,
    // Redoc's styled-components write <style> elements and style attributes at run time.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
  ].join('; ');
  const head = '<head>';
  if (!page.includes(head)) throw new Error('the docs page has no <head>');
  // No icon of its own: the browser would ask the API for /favicon.ico (a 404 in the console).
  return page.replace(head, `${head}\n  <meta http-equiv="Content-Security-Policy" content="${csp}" />\n  <link rel="icon" href="data:," />`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = performance.now();
  await generate(repoRoot);
  console.log(`generated ${generatedFiles.join(', ')} in ${Math.round(performance.now() - started)} ms`);
}
