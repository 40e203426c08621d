// Watchers of keys: told of every value stored for a key (a refresh, a newer value another replica
// stored, a reload); they never query. A watched key is in use at each warming tick as a poller's
// requests would make it, so any number of watchers cost the warming of one poller. With replicas, a
// watched key is compared with Redis every half second, so a value another replica refreshed reaches
// this one's watchers within a second; a watched key that went (expired, evicted) is loaded again,
// at most once a warming interval.
import { cacheEntryId } from "./cache-key.ts";
import type { CacheLogger } from "./cache-logger.ts";
import {
  type CacheAnswer,
  type CachePolicy,
  type Entry,
  entryOf,
  type Load,
  SECOND,
  type ValueListener,
  warmingMs,
} from "./entry.ts";
import type { EntryStore } from "./entry-store.ts";
import type { KeyLoader } from "./key-loader.ts";
import type { SharedCopy } from "./shared-copy.ts";

/** How often watched keys are looked after: compared with Redis, loaded again when gone. */
const WATCH_TICK_MS = SECOND / 2;

interface Watch {
  policy: CachePolicy;
  load: Load;
  listeners: Set<ValueListener>;
  /** The entry the listeners were last told of (a rendition stores it again, untold). */
  told: Entry | undefined;
  /** When a watched key that is not held may be loaded again. */
  reloadAt: number;
}

export interface WatchersParts {
  entries: EntryStore;
  loader: KeyLoader;
  sharing: SharedCopy | undefined;
  now: () => number;
  logger: CacheLogger | undefined;
  /** The entry as a request is answered it, in the loaded representation. */
  answer: (key: string, entry: Entry) => CacheAnswer;
  /** Stores an entry (and arms its timer, tells its watchers). */
  keep: (key: string, entry: Entry) => void;
  /** Loads the key as a request that finds it gone would. */
  get: (key: string, policy: CachePolicy, load: Load) => Promise<unknown>;
  closed: () => boolean;
}

export class Watchers {
  readonly #parts: WatchersParts;
  readonly #watched = new Map<string, Watch>();
  /** Watched keys whose shared value is being read, not being held here. */
  readonly #taking = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(parts: WatchersParts) {
    this.#parts = parts;
  }

  /**
   * Tells `listener` of every value stored for `key` from now on, until the returned function is
   * called; of the value held now too (in a microtask) when `tellHeld`, else the caller asks `get`
   * for it. `load` loads the key when it is not held (within half a second) or went while watched.
   */
  add(
    key: string,
    policy: CachePolicy,
    load: Load,
    listener: ValueListener,
    tellHeld: boolean,
  ): () => void {
    const { entries, now } = this.#parts;
    let watch = this.#watched.get(key);
    const held = entries.peek(key);
    if (!watch) {
      watch = { policy, load, listeners: new Set(), told: held, reloadAt: now() };
      this.#watched.set(key, watch);
    }
    if (tellHeld && held && now() < held.expiresAt) {
      const answer = this.#parts.answer(key, held);
      queueMicrotask(() => listener(answer));
    }
    watch.listeners.add(listener);
    this.#arm();
    return () => {
      watch.listeners.delete(listener);
      if (watch.listeners.size === 0 && this.#watched.get(key) === watch) this.#watched.delete(key);
    };
  }

  get size(): number {
    return this.#watched.size;
  }

  has(key: string): boolean {
    return this.#watched.has(key);
  }

  /**
   * After `entry` was stored for `key` (`kept`: it fit the byte bound): its watchers are told, after
   * this turn, so that a request waiting for this value is answered before them. Not kept, a watched
   * key is loaded again a warming interval after it was computed, as a held key would be refreshed.
   */
  stored(key: string, entry: Entry, kept: boolean): void {
    const watch = this.#watched.get(key);
    if (!watch) return;
    if (!kept) watch.reloadAt = entry.computedAt + reloadIntervalMs(watch.policy);
    if (entry !== watch.told) {
      watch.told = entry;
      setImmediate(() => this.#tell(key, entry, watch));
    }
  }

  /** Stops watching the keys `serves` does not keep; their listeners are told nothing more. */
  retain(serves: (key: string) => boolean): void {
    for (const key of [...this.#watched.keys()]) if (!serves(key)) this.#watched.delete(key);
  }

  close(): void {
    this.#watched.clear();
    clearTimeout(this.#timer);
  }

  #tell(key: string, entry: Entry, watch: Watch): void {
    if (this.#parts.closed()) return;
    const answer = this.#parts.answer(key, entry);
    for (const listener of watch.listeners) {
      try {
        listener(answer);
      } catch (error) {
        this.#parts.logger?.warn(
          { entry: cacheEntryId(key), err: error },
          "a watcher of a value failed",
        );
      }
    }
  }

  /** Stores the fresh shared value of a watched key that is not held; without one, loads it when due. */
  async #takeShared(sharing: SharedCopy, key: string, watch: Watch, now: number): Promise<void> {
    const { entries, closed } = this.#parts;
    this.#taking.add(key);
    try {
      const found = await sharing.results.get(key);
      if (closed() || this.#watched.get(key) !== watch || entries.peek(key)) return;
      const ttlMs = watch.policy.ttlSeconds * SECOND;
      if (typeof found === "object" && this.#parts.now() < found.computedAt + ttlMs) {
        const entry = entryOf(key, found, watch.policy, watch.load, undefined, this.#parts.now());
        this.#parts.keep(key, entry);
      } else await this.#reloadWhenDue(key, watch, now);
    } finally {
      this.#taking.delete(key);
    }
  }

  /**
   * Loads a watched key that is not held, as a poller would find it gone; a failing engine is asked
   * again a warming interval later.
   */
  async #reloadWhenDue(key: string, watch: Watch, now: number): Promise<void> {
    if (now < watch.reloadAt || this.#parts.loader.has(key)) return;
    watch.reloadAt = now + reloadIntervalMs(watch.policy);
    await this.#parts.get(key, watch.policy, watch.load).catch((error: unknown) => {
      this.#parts.logger?.warn(
        { entry: cacheEntryId(key), err: error },
        "a watched value could not be loaded; trying again later",
      );
    });
  }

  /** One timer for every watched key, running while any is watched. */
  #arm(): void {
    if (this.#timer !== undefined || this.#parts.closed()) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#watched.size === 0) return;
      this.#lookAfter();
      this.#arm();
    }, WATCH_TICK_MS);
    this.#timer.unref();
  }

  #lookAfter(): void {
    const { entries, loader, sharing } = this.#parts;
    const now = this.#parts.now();
    for (const [key, watch] of this.#watched) {
      // Looked up as a request would: a watched key is among the most recently used.
      const entry = entries.get(key);
      if (entry && now < entry.expiresAt) {
        // A newer shared value is adopted, and so stored and told.
        if (sharing && !sharing.checking(key)) void sharing.checked(key, entry);
      } else if (sharing?.results.up) {
        // Not held (evicted, expired): another replica's value will do, without a query.
        if (!loader.has(key) && !this.#taking.has(key))
          void this.#takeShared(sharing, key, watch, now);
      } else void this.#reloadWhenDue(key, watch, now);
    }
  }
}

/** How often a watched key that is not held is loaded again: as a held one would be refreshed. */
function reloadIntervalMs(policy: CachePolicy): number {
  return Math.min(warmingMs(policy), policy.ttlSeconds * SECOND);
}
