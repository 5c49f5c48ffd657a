// /docs: the API reference that `pnpm gen` builds into @platform/docs, and the Redoc script that page runs, both
// served from here so that the page needs nothing from the network; and /openapi.json, the bundled contract.
// Outside the contract, like /device. GET and HEAD (Koa answers HEAD with GET's headers and no body).
//
// The files are read from disk on each request rather than held in memory: they are 3 MB together and asked for
// rarely, and the API's memory under load is a budget (the server benchmark's peak RSS).
//
// The page is served with one addition, `<meta name="platform-api">`: it tells the page's own script that the API
// answers at the page's origin, so its samples and servers box use that origin (whatever address or proxy the
// browser came through); the file as built, published elsewhere, keeps the contract's servers.
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Context } from 'koa';

interface StaticFile {
  type: string;
  path: string;
}

export type StaticFiles = ReadonlyMap<string, StaticFile>;

const require = createRequire(import.meta.url);

async function file(specifier: string, type: string): Promise<StaticFile> {
  const path = require.resolve(specifier);
  await stat(path);
  return { type, path };
}

/** The bundled contract, and the built docs when @platform/docs has been built, by path. */
export async function loadStaticFiles(): Promise<StaticFiles> {
  const files = new Map([['/openapi.json', await file('@platform/api-types/openapi.json', 'application/json; charset=utf-8')]]);
  try {
    const [page, script] = await Promise.all([
      file('@platform/docs/dist/index.html', 'text/html; charset=utf-8'),
      file('@platform/docs/dist/redoc.standalone.js', 'text/javascript; charset=utf-8'),
    ]);
    files.set('/docs', page).set('/docs/', page).set('/docs/redoc.standalone.js', script);
  } catch {
    // Not built: /docs is a 404 like any unknown path.
  }
  return files;
}

/** The file a GET or HEAD request asks for, if it asks for one. */
export const requestedFile = (ctx: Context, files: StaticFiles): StaticFile | undefined =>
  ctx.method === 'GET' || ctx.method === 'HEAD' ? files.get(ctx.path) : undefined;

/** What the server adds to the docs page it serves (see above). */
const servedMarker = '<meta name="platform-api" content="same-origin" />';

export async function sendStaticFile(ctx: Context, file: StaticFile): Promise<void> {
  ctx.type = file.type;
  ctx.set('Cache-Control', 'public, max-age=300');
  // The docs page carries its own Content-Security-Policy (a <meta> with its inline scripts' hashes, made by
  // `pnpm gen`); the marker is no script, so the hashes still hold.
  if (file.type.startsWith('text/html')) {
    ctx.remove('Content-Security-Policy');
    ctx.body = (await readFile(file.path, 'utf8')).replace('<head>', `<head>\n  ${servedMarker}`);
    return;
  }
  // The size is read now, not at start-up: `pnpm gen` may rewrite the files while a development server runs.
  const { size } = await stat(file.path);
  // Koa destroys the stream when the response ends, HEAD (never read) included.
  ctx.body = createReadStream(file.path);
  ctx.length = size;
}
