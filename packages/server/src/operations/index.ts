// The handler map: every handler exported by the operation files, one per operationId. `satisfies Handlers` makes
// an operation added to the contract without a handler a type error; a handler added to an existing file needs no
// change here.
import * as audit from './audit.ts';
import * as clusters from './clusters.ts';
import * as compute from './compute.ts';
import * as deviceSignIn from './device-sign-in.ts';
import * as events from './events.ts';
import * as installs from './installs.ts';
import * as notifications from './notifications.ts';
import * as products from './products.ts';
import * as quotas from './quotas.ts';
import * as registry from './registry.ts';
import * as tokens from './tokens.ts';
import type { Handlers } from './types.ts';
import * as webhooks from './webhooks.ts';
import * as workspaces from './workspaces.ts';

export const handlers = {
  ...workspaces,
  ...clusters,
  ...compute,
  ...registry,
  ...products,
  ...installs,
  ...notifications,
  ...events,
  ...audit,
  ...webhooks,
  ...tokens,
  ...deviceSignIn,
  ...quotas,
} satisfies Handlers;
