// What the server answers outside the API: the bundled contract, the reference docs and the device sign-in page.
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import type { Middleware } from 'koa';
import { devicePage } from './device-page.ts';
import { loadDocs, serveDocs } from './docs.ts';

export async function pages(): Promise<Middleware> {
  const openapiJson = JSON.stringify(definition);
  const docs = await loadDocs();
  return async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/openapi.json') {
      ctx.type = 'application/json';
      ctx.body = openapiJson;
      return;
    }
    if (serveDocs(ctx, docs)) return;
    if (ctx.method === 'GET' && ctx.path === '/device') {
      ctx.type = 'text/html';
      ctx.set(devicePage.headers);
      ctx.body = devicePage.html;
      return;
    }
    await next();
  };
}
