// The periodic check of an open stream (STREAM_REAUTH_SECONDS, 1 here): a change nobody announces (a token that
// expires) ends the stream within that time, with its reason; so does one written by hand (the database announces it).
import { beforeAll, describe, expect, it } from 'vitest';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer({ env: { STREAM_REAUTH_SECONDS: '1' } });
const { clock } = app;
let owner: TestUser;

beforeAll(async () => {
  owner = await newUser(app.db, clock);
});

/** Opens the events stream; resolves with its text once the server closes it, or 'open' after `ms`. */
async function streamFor(token: string, ms: number): Promise<{ text: string } | 'open'> {
  const abort = new AbortController();
  const response = await fetch(`${app.baseUrl}/v1/events/stream`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'x-workspace-id': owner.workspaceId },
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  const timer = setTimeout(() => abort.abort(), ms);
  try {
    return { text: await response.text() };
  } catch {
    return 'open';
  } finally {
    clearTimeout(timer);
  }
}

const endedWith = (text: string) => JSON.parse(/event: access_ended\ndata: (.*)\n/.exec(text)?.[1] ?? 'null') as { reason: string } | null;

describe('an open stream', () => {
  it('ends with unauthenticated once its PAT expires, within STREAM_REAUTH_SECONDS', async () => {
    const pat = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: owner.token, body: { name: 'short', expires_at: clock.now() + 60 } });
    expect(pat.status).toBe(201);
    const stream = streamFor(pat.body.token, 5000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    clock.advance(61);
    const result = await stream;
    expect(result).not.toBe('open');
    expect(endedWith((result as { text: string }).text)).toMatchObject({ reason: 'unauthenticated' });
  });

  it('ends with membership_ended once a membership is removed by hand', async () => {
    const member = await newUser(app.db, clock);
    await app.db
      .insertInto('workspace_members')
      .values({ workspace_id: owner.workspaceId, user_id: member.userId, role: 'member', created_at: clock.now() })
      .execute();
    const stream = streamFor(member.token, 5000);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    await app.db.deleteFrom('workspace_members').where('workspace_id', '=', owner.workspaceId).where('user_id', '=', member.userId).execute();
    const removedAt = Date.now();
    const result = await stream;
    expect(result).not.toBe('open');
    expect(endedWith((result as { text: string }).text)).toMatchObject({ reason: 'membership_ended' });
    // Closed within about one period of the removal at the latest.
    expect(Date.now() - removedAt).toBeLessThan(2500);
  });
});
