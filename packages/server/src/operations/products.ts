import * as products from '../resources/products.ts';
import { requireWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import { type Handler, staged } from './types.ts';

export const listProducts: Handler<'listProducts'> = async (input, { db }) => ({
  status: 200,
  body: await products.listProducts(db, input),
});

export const createProduct = staged<'createProduct'>({
  // A workspace the caller may not act in is refused before any host is resolved.
  before: async ({ body, headers, caller }, { db, resolveHost }) => {
    await requireWorkspace(db, caller, headers['X-Workspace-Id']);
    await products.checkSourceUrls(body, resolveHost);
  },
  change: async ({ body, headers, caller }, { db, clock, workflows }) => {
    const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
    return { status: 201, body: await products.createProduct(db, workspace, body, { now: clock.now(), workflows }) };
  },
});

export const getProduct: Handler<'getProduct'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await products.getProduct(db, caller, params.id) };
};

export const updateProduct = staged<'updateProduct'>({
  before: ({ params, body, caller }, { db, resolveHost }) => products.checkUpdate(db, caller, params.id, body, resolveHost),
  change: async ({ params, headers, body, caller }, { db, clock, workflows }) => {
    await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
    return { status: 200, body: await products.updateProduct(db, caller, params.id, body, { now: clock.now(), workflows }) };
  },
});

export const deleteProduct: Handler<'deleteProduct'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  await products.deleteProduct(db, caller, params.id);
  return { status: 204, body: undefined };
};
