import * as events from '../resources/events.ts';
import type { Handler } from './types.ts';

export const listEvents: Handler<'listEvents'> = async (input, { db }) => ({
  status: 200,
  body: await events.listEvents(db, input),
});
