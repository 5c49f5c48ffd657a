// What the server answers outside the API: the bundled contract, the reference docs and the device sign-in page.
import type { Middleware } from 'koa';
import { devicePage } from './device-page.ts';
import { loadStaticFiles, requestedFile, sendStaticFile } from './static-files.ts';

export async function pages(): Promise<Middleware> {
  const files = await loadStaticFiles();
  return async (ctx, next) => {
    const file = requestedFile(ctx, files);
    if (file) return sendStaticFile(ctx, file);
    if (ctx.method === 'GET' && ctx.path === '/device') {
      ctx.type = 'text/html';
      ctx.set(devicePage.headers);
      ctx.body = devicePage.html;
      return;
    }
    await next();
  };
}
