import * as products from '../resources/products.ts';
import { requireWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import type { Handler } from './types.ts';

export const listProducts: Handler<'listProducts'> = async (input, { db }) => ({
  status: 200,
  body: await products.listProducts(db, input),
});

export const createProduct: Handler<'createProduct'> = async ({ body, headers, caller }, { db, clock, workflows, resolveHost }) => {
  const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 201, body: await products.createProduct(db, workspace, body, { now: clock.now(), workflows, resolveHost }) };
};

export const getProduct: Handler<'getProduct'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await products.getProduct(db, caller, params.id) };
};

export const updateProduct: Handler<'updateProduct'> = async ({ params, headers, body, caller }, { db, clock, workflows, resolveHost }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await products.updateProduct(db, caller, params.id, body, { now: clock.now(), workflows, resolveHost }) };
};

export const deleteProduct: Handler<'deleteProduct'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  await products.deleteProduct(db, caller, params.id);
  return { status: 204, body: undefined };
};
