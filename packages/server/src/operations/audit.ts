import * as auditEvents from '../resources/audit-events.ts';
import type { Handler } from './types.ts';

export const listAuditEvents: Handler<'listAuditEvents'> = async (input, { db }) => ({
  status: 200,
  body: await auditEvents.listWorkspaceAuditEvents(db, input),
});

export const listUserAuditEvents: Handler<'listUserAuditEvents'> = async ({ query, caller }, { db }) => ({
  status: 200,
  body: await auditEvents.listUserAuditEvents(db, caller, query),
});
