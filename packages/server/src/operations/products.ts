import * as products from '../resources/products.ts';
import { type Handler, staged } from './types.ts';

export const listProducts: Handler<'listProducts'> = async (input, { db }) => ({
  status: 200,
  body: await products.listProducts(db, input),
});

export const createProduct = staged<'createProduct'>({
  before: ({ body }, { resolveHost }) => products.checkSourceUrls(body, resolveHost),
  change: async ({ body, workspace }, { db, clock, workflows }) => {
    return { status: 201, body: await products.createProduct(db, workspace, body, { now: clock.now(), workflows }) };
  },
});

export const getProduct: Handler<'getProduct'> = async ({ params, caller }, { db }) => {
  return { status: 200, body: await products.getProduct(db, caller, params.id) };
};

export const updateProduct = staged<'updateProduct'>({
  before: ({ params, body, caller }, { db, resolveHost }) => products.checkUpdate(db, caller, params.id, body, resolveHost),
  change: async ({ params, body, caller }, { db, clock, workflows }) => {
    return { status: 200, body: await products.updateProduct(db, caller, params.id, body, { now: clock.now(), workflows }) };
  },
});

export const deleteProduct: Handler<'deleteProduct'> = async ({ params, caller }, { db }) => {
  await products.deleteProduct(db, caller, params.id);
  return { status: 204, body: undefined };
};
