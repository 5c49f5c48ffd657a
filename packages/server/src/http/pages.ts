// What the server answers outside the API: the bundled contract, the reference docs and the device sign-in page.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import type { Middleware } from 'koa';
import { devicePage } from './device-page.ts';

async function docsHtml(): Promise<string | undefined> {
  const require = createRequire(import.meta.url);
  return readFile(require.resolve('@platform/docs/dist/index.html'), 'utf8').catch(() => undefined);
}

export async function pages(): Promise<Middleware> {
  const openapiJson = JSON.stringify(definition);
  const docs = await docsHtml();
  return async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/openapi.json') {
      ctx.type = 'application/json';
      ctx.body = openapiJson;
      return;
    }
    if (ctx.method === 'GET' && (ctx.path === '/docs' || ctx.path === '/docs/') && docs) {
      ctx.type = 'text/html';
      ctx.set('Cache-Control', 'public, max-age=300');
      ctx.remove('Content-Security-Policy');
      ctx.body = docs;
      return;
    }
    if (ctx.method === 'GET' && ctx.path === '/device') {
      ctx.type = 'text/html';
      ctx.set(devicePage.headers);
      ctx.body = devicePage.html;
      return;
    }
    await next();
  };
}
