// What requests read of their callers' access (a token's row with the workspace it names), kept for the next
// requests of the same token, so that a busy token costs one query a second instead of one a request (the list
// benchmark: about a quarter of a request's CPU). The database announces every change of access, whoever makes it
// (access-changes.ts), and every process forgets everything it kept on each announcement it hears. A request that
// made one answers only once its own process heard it (dispatch.ts), so its caller's next request there meets it;
// another process meets it once it hears it, and uses what it kept only while its listener has answered a round
// trip sent within the listener's deadline, so never later than that deadline after the change committed.
import { metrics } from '../telemetry/metrics.ts';
import type { AccessChanges } from './access-changes.ts';

const TTL_MS = 1000;
/** Entries beyond this push the oldest out (one per token and named workspace). */
const MAX_ENTRIES = 10_000;

export class AccessCache<V> {
  #entries = new Map<string, { value: V; until: number }>();
  /** Reads under way, shared by the requests that ask for the same key meanwhile (the ones of a busy token at once). */
  #reading = new Map<string, Promise<V | undefined>>();
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
      // A request after the change waits for no read begun before it.
      this.#reading.clear();
    });
  }

  /**
   * The value kept under `key` while `usable` says it is, else what `read` gives (undefined: nothing there), which is
   * kept when `keep` says so, unless a change was heard while it was read or none can be heard now.
   */
  read(key: string, read: () => Promise<V | undefined>, usable: (value: V) => boolean, keep: (value: V) => boolean): Promise<V | undefined> {
    const entry = this.#entries.get(key);
    if (entry !== undefined) {
      if (this.#changes.listening && performance.now() < entry.until && usable(entry.value)) {
        metrics?.accessCacheHits.inc();
        return Promise.resolve(entry.value);
      }
      this.#entries.delete(key);
    }
    const under = this.#reading.get(key);
    if (under !== undefined) {
      metrics?.accessCacheShared.inc();
      return under;
    }
    metrics?.accessCacheMisses.inc();
    const generation = this.#generation;
    const reading = read().then((value) => {
      if (value !== undefined && keep(value) && generation === this.#generation && this.#changes.listening) this.#set(key, value);
      return value;
    });
    this.#reading.set(key, reading);
    const done = () => {
      if (this.#reading.get(key) === reading) this.#reading.delete(key);
    };
    reading.then(done, done);
    return reading;
  }

  #set(key: string, value: V): void {
    if (this.#entries.size >= MAX_ENTRIES && !this.#entries.has(key)) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { value, until: performance.now() + this.#ttlMs });
  }
}
