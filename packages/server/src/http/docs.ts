// /docs: the API reference that `pnpm gen` builds into @platform/docs, and the Redoc script that page runs, both
// served from here so that the page needs nothing from the network. Outside the contract, like /device.
// GET and HEAD (Koa answers HEAD with GET's headers and no body).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Context } from 'koa';

interface DocsFile {
  type: string;
  body: Buffer;
}

export type DocsFiles = ReadonlyMap<string, DocsFile>;

/** The built docs by path, or undefined when @platform/docs has not been built. */
export async function loadDocs(): Promise<DocsFiles | undefined> {
  const require = createRequire(import.meta.url);
  try {
    const [page, script] = await Promise.all([
      readFile(require.resolve('@platform/docs/dist/index.html')),
      readFile(require.resolve('@platform/docs/dist/redoc.standalone.js')),
    ]);
    const html = { type: 'text/html; charset=utf-8', body: page };
    return new Map([
      ['/docs', html],
      ['/docs/', html],
      ['/docs/redoc.standalone.js', { type: 'text/javascript; charset=utf-8', body: script }],
    ]);
  } catch {
    return undefined;
  }
}

/** Answers a docs request; false when the request is not one. */
export function serveDocs(ctx: Context, files: DocsFiles | undefined): boolean {
  const file = (ctx.method === 'GET' || ctx.method === 'HEAD') && files?.get(ctx.path);
  if (!file) return false;
  ctx.type = file.type;
  ctx.set('Cache-Control', 'public, max-age=300');
  // The page carries its own Content-Security-Policy (a <meta> with its inline scripts' hashes, made by `pnpm gen`).
  ctx.remove('Content-Security-Policy');
  ctx.body = file.body;
  return true;
}
