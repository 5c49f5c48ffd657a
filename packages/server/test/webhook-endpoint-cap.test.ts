// The cap on webhook endpoints per workspace (WEBHOOK_ENDPOINTS_PER_WORKSPACE, 3 here): creations beyond it, also
// at once, are refused with quota_exceeded saying how to raise it; deleting one makes room.
import { beforeAll, describe, expect, it } from 'vitest';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer({ env: { WEBHOOK_ENDPOINTS_PER_WORKSPACE: '3' } });
let owner: TestUser;

beforeAll(async () => {
  owner = await newUser(app.db, app.clock);
});

const create = (n: number) =>
  call(app.baseUrl, 'POST', '/v1/webhook_endpoints', {
    token: owner.token,
    body: { url: `https://hooks.example.com/${n}`, event_types: ['cluster.running'] },
  });

describe('webhook endpoints per workspace', () => {
  it('refuses the one beyond the cap, also among creations at once, with a clear error; a deletion makes room', async () => {
    const replies = await Promise.all([1, 2, 3, 4, 5].map(create));
    const statuses = replies.map((reply) => reply.status).sort();
    expect(statuses).toEqual([201, 201, 201, 403, 403]);
    const refused = replies.find((reply) => reply.status === 403)!;
    expect(refused.body.error).toMatchObject({ code: 'quota_exceeded', details: { limit: 3, usage: 3 } });
    expect(refused.body.error.message).toContain('WEBHOOK_ENDPOINTS_PER_WORKSPACE=3');
    expect(refused.body.error.suggestion).toContain('raise WEBHOOK_ENDPOINTS_PER_WORKSPACE');
    const made = replies.find((reply) => reply.status === 201)!;
    expect((await call(app.baseUrl, 'DELETE', `/v1/webhook_endpoints/${made.body.id}`, { token: owner.token })).status).toBe(204);
    expect((await create(6)).status).toBe(201);
  });
});
