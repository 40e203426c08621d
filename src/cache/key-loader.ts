// One load per key at a time: concurrent misses and a refresh share it, and every waiter gets its
// result or its error (errors are never stored). With other replicas the load is also one across
// them: a value another replica holds will do, else one replica queries under the key's lock.
// A waiter that leaves (a request whose client went) is answered its signal's reason at once; the
// load itself is stopped only when every waiter has left and none that stays (a refresh, a watch, a
// request that cannot leave) ever joined it.

import { type CachePolicy, type Entry, entryOf, type Load, SECOND } from "./entry.ts";
import type { EntryStore } from "./entry-store.ts";
import { strongEtag } from "./etag.ts";
import type { SharedResults, SharedValue } from "./shared-results.ts";

/** A flight's outcome: the entry, and whether a query ran for it (else it came from Redis as it was). */
export interface Loaded {
  entry: Entry;
  fromEngine: boolean;
}

interface Flight {
  done: Promise<Loaded>;
  /** A request waits for it, so its value is stored even when it began as a refresh. */
  awaited: boolean;
  /** Aborted when nobody waits for the load any more. */
  stop: AbortController;
  /** Waiters that may still leave. */
  leavers: number;
  /** A waiter that cannot leave joined: the load runs to its end. */
  kept: boolean;
}

export interface KeyLoaderParts {
  entries: EntryStore;
  now: () => number;
  shared: SharedResults | undefined;
  /** Stores a loaded entry (and arms its timer, tells its watchers). */
  keep: (key: string, entry: Entry) => void;
  closed: () => boolean;
}

export class KeyLoader {
  readonly #inFlight = new Map<string, Flight>();
  readonly #parts: KeyLoaderParts;

  constructor(parts: KeyLoaderParts) {
    this.#parts = parts;
  }

  /** Whether a load of `key` is running. */
  has(key: string): boolean {
    return this.#inFlight.has(key);
  }

  /**
   * The one load of `key` in flight, started here if there is none. `refreshOf` marks a background
   * refresh of that entry; without it, a request is waiting. `left` aborts when this waiter goes.
   */
  flight(
    key: string,
    policy: CachePolicy,
    load: Load,
    refreshOf?: Entry,
    minComputedAt = Number.NEGATIVE_INFINITY,
    left?: AbortSignal,
  ): Promise<Loaded> {
    if (left?.aborted) return Promise.reject(left.reason);
    const running = this.#inFlight.get(key);
    if (running) {
      running.awaited ||= refreshOf === undefined;
      return this.#wait(running, left);
    }
    const stop = new AbortController();
    const flight: Flight = {
      awaited: refreshOf === undefined,
      stop,
      leavers: 0,
      kept: false,
      done: this.#load(key, policy, load, refreshOf, () => flight.awaited, minComputedAt, stop),
    };
    this.#inFlight.set(key, flight);
    const forget = () => this.#inFlight.delete(key);
    flight.done.then(forget, forget);
    return this.#wait(flight, left);
  }

  /** The flight's outcome for one waiter, or the reason it left as soon as it leaves. */
  #wait(flight: Flight, left: AbortSignal | undefined): Promise<Loaded> {
    if (!left) {
      flight.kept = true;
      return flight.done;
    }
    flight.leavers++;
    return new Promise((resolve, reject) => {
      const leave = () => {
        reject(left.reason);
        flight.leavers--;
        if (flight.leavers === 0 && !flight.kept) flight.stop.abort(left.reason);
      };
      left.addEventListener("abort", leave, { once: true });
      flight.done.then(resolve, reject).finally(() => left.removeEventListener("abort", leave));
    });
  }

  async #load(
    key: string,
    policy: CachePolicy,
    load: Load,
    refreshOf: Entry | undefined,
    awaited: () => boolean,
    minComputedAt: number,
    stop: AbortController,
  ): Promise<Loaded> {
    const { entries, now, shared } = this.#parts;
    const compute = async (): Promise<SharedValue> => {
      const computedAt = now();
      const payload = await load(stop.signal);
      return { payload, etag: strongEtag(payload.body, payload.headers), computedAt };
    };
    const ttlMs = policy.ttlSeconds * SECOND;
    let loaded: { value: SharedValue; fromEngine: boolean };
    if (!shared) loaded = { value: await compute(), fromEngine: true };
    else if (refreshOf) {
      // The lease already made this replica the only one refreshing this value.
      loaded = { value: await compute(), fromEngine: true };
      await shared.put(key, loaded.value, ttlMs);
    } else {
      // A value another replica holds will do, unless the caller asked for one newer than it.
      const fresh = (value: SharedValue) =>
        value.computedAt >= minComputedAt && now() < value.computedAt + ttlMs;
      loaded = await shared.once(key, fresh, compute, ttlMs);
    }
    const entry = entryOf(key, loaded.value, policy, load, refreshOf, now());
    // A refresh must not bring back a key evicted or dropped meanwhile, unless a request now waits for it.
    const wanted = awaited() || entries.peek(key) === refreshOf;
    if (wanted && !this.#parts.closed()) this.#parts.keep(key, entry);
    return { entry, fromEngine: loaded.fromEngine };
  }
}
