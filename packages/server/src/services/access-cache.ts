// What requests read of their callers' access (a token's row with the workspace it names), kept for the next
// requests of the same token, so that a busy token costs one query a second instead of one a request (the list
// benchmark: about a quarter of a request's CPU). Kept only while this process hears every announced change of
// access (access-changes.ts): each one it hears forgets everything, and a request that made one answers only once
// it has been heard (dispatch.ts), so its caller's next request meets the change. Another process hears it within
// a notification's delivery. A change nothing announces (a row edited by hand) is met after TTL_MS at the latest.
import type { AccessChanges } from './access-changes.ts';

const TTL_MS = 1000;
/** Entries beyond this push the oldest out (one per token and named workspace). */
const MAX_ENTRIES = 10_000;

export class AccessCache<V> {
  #entries = new Map<string, { value: V; until: number }>();
  /** Counts the forgettings: a value read before one is not kept. */
  #generation = 0;
  readonly #changes: AccessChanges;
  readonly #ttlMs: number;

  constructor(changes: AccessChanges, ttlMs = TTL_MS) {
    this.#changes = changes;
    this.#ttlMs = ttlMs;
    changes.watchAll(() => {
      this.#generation++;
      this.#entries.clear();
    });
  }

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (!this.#changes.listening || performance.now() >= entry.until) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** To hand to `set` with what is read next. */
  get generation(): number {
    return this.#generation;
  }

  /** Keeps `value`, read after `generation` was taken, unless a change was heard since or none can be heard now. */
  set(key: string, value: V, generation: number): void {
    if (generation !== this.#generation || !this.#changes.listening) return;
    if (this.#entries.size >= MAX_ENTRIES && !this.#entries.has(key)) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { value, until: performance.now() + this.#ttlMs });
  }

  /** Drops what is kept under `key` (it was found out of date). */
  delete(key: string): void {
    this.#entries.delete(key);
  }
}
