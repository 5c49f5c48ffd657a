import * as deliveries from '../resources/webhook-deliveries.ts';
import * as endpoints from '../resources/webhook-endpoints.ts';
import type { WebhookUrlRules } from '../services/webhooks.ts';
import { type Handler, type HandlerEnv, staged } from './types.ts';

const urlRules = ({ resolveHost, config }: HandlerEnv): WebhookUrlRules => ({ resolve: resolveHost, allowHttpLoopback: config.webhooks.allowHttpLoopback });

export const listWebhookEndpoints: Handler<'listWebhookEndpoints'> = async (input, { db }) => ({
  status: 200,
  body: await endpoints.listWebhookEndpoints(db, input),
});

export const createWebhookEndpoint = staged<'createWebhookEndpoint'>({
  before: ({ body }, env) => endpoints.checkWebhookUrl(body.url, urlRules(env)),
  change: async ({ body, workspace }, { db, clock, secrets, config }) => {
    const limits = { now: clock.now(), secrets, perWorkspace: config.webhooks.endpointsPerWorkspace };
    return { status: 201, body: await endpoints.createWebhookEndpoint(db, workspace, body, limits) };
  },
});

export const getWebhookEndpoint: Handler<'getWebhookEndpoint'> = async ({ params, caller }, { db }) => {
  return { status: 200, body: await endpoints.getWebhookEndpoint(db, caller, params.id) };
};

export const updateWebhookEndpoint = staged<'updateWebhookEndpoint'>({
  // An endpoint the caller cannot see is 404 before a new URL's host is resolved.
  before: async ({ params, body, caller }, env) => {
    await endpoints.getWebhookEndpoint(env.db, caller, params.id);
    if (body.url !== undefined) await endpoints.checkWebhookUrl(body.url, urlRules(env));
  },
  change: async ({ params, body, caller }, { db, clock }) => {
    return { status: 200, body: await endpoints.updateWebhookEndpoint(db, caller, params.id, body, { now: clock.now() }) };
  },
});

export const deleteWebhookEndpoint: Handler<'deleteWebhookEndpoint'> = async ({ params, caller }, { db }) => {
  await endpoints.deleteWebhookEndpoint(db, caller, params.id);
  return { status: 204, body: undefined };
};

export const rotateWebhookEndpointSecret: Handler<'rotateWebhookEndpointSecret'> = async ({ params, body, caller }, { db, clock, secrets }) => {
  return { status: 200, body: await endpoints.rotateWebhookEndpointSecret(db, caller, params.id, body, { now: clock.now(), secrets }) };
};

export const listWebhookDeliveries: Handler<'listWebhookDeliveries'> = async ({ params, query, caller }, { db }) => {
  return { status: 200, body: await deliveries.listWebhookDeliveries(db, caller, params.id, query) };
};

export const redeliverWebhookDelivery: Handler<'redeliverWebhookDelivery'> = async ({ params, caller }, { db, clock }) => {
  return { status: 202, body: await deliveries.redeliver(db, caller, params.id, params.deliveryId, clock.now()) };
};
