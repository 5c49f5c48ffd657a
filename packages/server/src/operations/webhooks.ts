import * as deliveries from '../resources/webhook-deliveries.ts';
import * as endpoints from '../resources/webhook-endpoints.ts';
import { requireWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import type { WebhookUrlRules } from '../services/webhooks.ts';
import { type Handler, type HandlerEnv, staged } from './types.ts';

const urlRules = ({ resolveHost, config }: HandlerEnv): WebhookUrlRules => ({ resolve: resolveHost, allowHttpLoopback: config.webhooks.allowHttpLoopback });

export const listWebhookEndpoints: Handler<'listWebhookEndpoints'> = async (input, { db }) => ({
  status: 200,
  body: await endpoints.listWebhookEndpoints(db, input),
});

export const createWebhookEndpoint = staged<'createWebhookEndpoint'>({
  // A workspace the caller may not act in is refused before the URL's host is resolved.
  before: async ({ body, headers, caller }, env) => {
    await requireWorkspace(env.db, caller, headers['X-Workspace-Id']);
    await endpoints.checkWebhookUrl(body.url, urlRules(env));
  },
  change: async ({ body, headers, caller }, { db, clock, secrets, config }) => {
    const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
    const limits = { now: clock.now(), secrets, perWorkspace: config.webhooks.endpointsPerWorkspace };
    return { status: 201, body: await endpoints.createWebhookEndpoint(db, workspace, body, limits) };
  },
});

export const getWebhookEndpoint: Handler<'getWebhookEndpoint'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await endpoints.getWebhookEndpoint(db, caller, params.id) };
};

export const updateWebhookEndpoint = staged<'updateWebhookEndpoint'>({
  // An endpoint the caller cannot see is 404 before a new URL's host is resolved.
  before: async ({ params, body, headers, caller }, env) => {
    await resolveWorkspace(env.db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
    await endpoints.getWebhookEndpoint(env.db, caller, params.id);
    if (body.url !== undefined) await endpoints.checkWebhookUrl(body.url, urlRules(env));
  },
  change: async ({ params, body, headers, caller }, { db, clock }) => {
    await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
    return { status: 200, body: await endpoints.updateWebhookEndpoint(db, caller, params.id, body, { now: clock.now() }) };
  },
});

export const deleteWebhookEndpoint: Handler<'deleteWebhookEndpoint'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  await endpoints.deleteWebhookEndpoint(db, caller, params.id);
  return { status: 204, body: undefined };
};

export const rotateWebhookEndpointSecret: Handler<'rotateWebhookEndpointSecret'> = async ({ params, body, headers, caller }, { db, clock, secrets }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await endpoints.rotateWebhookEndpointSecret(db, caller, params.id, body, { now: clock.now(), secrets }) };
};

export const listWebhookDeliveries: Handler<'listWebhookDeliveries'> = async ({ params, query, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: await deliveries.listWebhookDeliveries(db, caller, params.id, query) };
};

export const redeliverWebhookDelivery: Handler<'redeliverWebhookDelivery'> = async ({ params, headers, caller }, { db, clock }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 202, body: await deliveries.redeliver(db, caller, params.id, params.deliveryId, clock.now()) };
};
