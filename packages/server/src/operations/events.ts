import * as events from '../resources/events.ts';
import { callerKey, type Handler } from './types.ts';

export const listEvents: Handler<'listEvents'> = async (input, { db }) => ({
  status: 200,
  body: await events.listEvents(db, input),
});

export const streamEvents: Handler<'streamEvents'> = async ({ headers, query, caller, workspace, signal }, { db, clock, shutdown, config }) => {
  const { id: workspaceId } = workspace;
  const request = { workspaceId, type: query.type, object_id: query.object_id, lastEventId: headers['Last-Event-ID'] };
  const env = { db, clock, signal, shutdown, pollMs: config.eventPollMs };
  return {
    status: 200,
    stream: await events.openEventStream(request, env, { key: callerKey(caller), limit: config.logStreamsPerUser }),
    workspaceId,
  };
};
