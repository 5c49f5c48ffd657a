// Idempotency while the first request is still running: a second request with the same key does not run the
// work again and does not wait; it gets 409 conflict naming the key at once (the decisions' rule). After the
// first finishes, the same key replays its response.
import { beforeAll, expect, it } from 'vitest';
import { ApiError } from '../src/errors.ts';
import { requestHash, withIdempotencyKey } from '../src/services/idempotency.ts';
import { newUser, TestClock, type TestUser, useTestDatabase } from './support.ts';

const database = useTestDatabase();
let user: TestUser;
const clock = new TestClock();

beforeAll(async () => {
  user = await newUser(database.db, clock, 'pro');
});

it('a second request with the key of one still in flight is 409 conflict; once it ends, the key replays', { timeout: 30_000 }, async () => {
  const scope = { userId: user.userId, key: `in-flight-${Date.now()}`, operation: 'createInstall', hash: requestHash('createInstall', { a: 1 }) };
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started!: () => void;
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  let runs = 0;
  const work = async () => {
    runs++;
    started();
    await gate;
    return { status: 202, body: { id: 'ins_first' } };
  };
  const first = withIdempotencyKey(database.db, clock, scope, work);
  await running;

  const second = await withIdempotencyKey(database.db, clock, scope, work).catch((error: unknown) => error);
  expect(second).toBeInstanceOf(ApiError);
  expect(second).toMatchObject({ status: 409, code: 'conflict', param: 'idempotency-key' });
  expect(runs).toBe(1);

  release();
  expect(await first).toEqual({ response: { status: 202, body: { id: 'ins_first' } }, replayed: false });
  expect(await withIdempotencyKey(database.db, clock, scope, work)).toEqual({ response: { status: 202, body: { id: 'ins_first' } }, replayed: true });
  expect(runs).toBe(1);
});
