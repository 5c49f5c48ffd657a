import * as deliveries from '../resources/webhook-deliveries.ts';
import * as endpoints from '../resources/webhook-endpoints.ts';
import { requireWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import type { WebhookUrlRules } from '../services/webhooks.ts';
import type { Handler, HandlerEnv } from './types.ts';

const urlRules = ({ resolveHost, config }: HandlerEnv): WebhookUrlRules => ({ resolve: resolveHost, allowHttpLoopback: config.webhooks.allowHttpLoopback });

export const listWebhookEndpoints: Handler<'listWebhookEndpoints'> = async (input, { db }) => ({
  status: 200,
  body: await endpoints.listWebhookEndpoints(db, input),
});

export const createWebhookEndpoint: Handler<'createWebhookEndpoint'> = async ({ body, headers, caller }, env) => {
  const workspace = await requireWorkspace(env.db, caller, headers['X-Workspace-Id']);
  const options = { now: env.clock.now(), secrets: env.secrets, urlRules: urlRules(env) };
  return { status: 201, body: await endpoints.createWebhookEndpoint(env.db, workspace, body, options) };
};

export const getWebhookEndpoint: Handler<'getWebhookEndpoint'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await endpoints.getWebhookEndpoint(db, caller.userId, params.id) };
};

export const updateWebhookEndpoint: Handler<'updateWebhookEndpoint'> = async ({ params, body, headers, caller }, env) => {
  await resolveWorkspace(env.db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return {
    status: 200,
    body: await endpoints.updateWebhookEndpoint(env.db, caller.userId, params.id, body, { now: env.clock.now(), urlRules: urlRules(env) }),
  };
};

export const deleteWebhookEndpoint: Handler<'deleteWebhookEndpoint'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  await endpoints.deleteWebhookEndpoint(db, caller.userId, params.id);
  return { status: 204, body: undefined };
};

export const rotateWebhookEndpointSecret: Handler<'rotateWebhookEndpointSecret'> = async ({ params, body, headers, caller }, { db, clock, secrets }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await endpoints.rotateWebhookEndpointSecret(db, caller.userId, params.id, body, { now: clock.now(), secrets }) };
};

export const listWebhookDeliveries: Handler<'listWebhookDeliveries'> = async ({ params, query, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await deliveries.listWebhookDeliveries(db, caller.userId, params.id, query) };
};

export const redeliverWebhookDelivery: Handler<'redeliverWebhookDelivery'> = async ({ params, headers, caller }, { db, clock }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 202, body: await deliveries.redeliver(db, caller.userId, params.id, params.deliveryId, clock.now()) };
};
