// This process's copy of values shared through Redis (REDIS_URL): compared with the shared value at
// most once a second per key, so that no hit serves a value more than a second older than it, and
// replaced by a newer one without a query. What Redis holds and how is shared-results.ts's.

import { UNAVAILABLE } from "../redis/link.ts";
import { type Entry, entryOf, SECOND } from "./entry.ts";
import type { EntryStore } from "./entry-store.ts";
import type { SharedResults, SharedValue } from "./shared-results.ts";

/** A local copy is compared with the shared value at most this often (per key). */
const SHARED_CHECK_MS = SECOND;

export interface SharedCopyParts {
  entries: EntryStore;
  now: () => number;
  /** Stores an adopted entry (and arms its timer, tells its watchers). */
  keep: (key: string, entry: Entry) => void;
  closed: () => boolean;
}

export class SharedCopy {
  /** The values, lock, uses and leases in Redis. */
  readonly results: SharedResults;
  readonly #parts: SharedCopyParts;
  /** Comparisons with the shared value in flight, one per key. */
  readonly #checks = new Map<string, Promise<Entry>>();

  constructor(results: SharedResults, parts: SharedCopyParts) {
    this.results = results;
    this.#parts = parts;
  }

  /** Whether the held value is to be compared with the shared one before answering. */
  due(entry: Entry, now: number): boolean {
    return now - entry.checkedAt >= SHARED_CHECK_MS;
  }

  /** Whether the key is being compared with the shared value now. */
  checking(key: string): boolean {
    return this.#checks.has(key);
  }

  /** The entry once compared with the shared value: itself, or the newer value found in Redis. */
  checked(key: string, entry: Entry): Promise<Entry> {
    let check = this.#checks.get(key);
    if (!check) {
      check = this.#compare(key, entry).finally(() => this.#checks.delete(key));
      this.#checks.set(key, check);
    }
    return check;
  }

  /** Replaces the entry by the newer shared value (requests carried over), unless it is too old. */
  adopt(key: string, entry: Entry, value: SharedValue, now: number): Entry | undefined {
    if (now >= value.computedAt + entry.policy.ttlSeconds * SECOND) return undefined;
    const adopted = entryOf(key, value, entry.policy, entry.load, entry, this.#parts.now());
    adopted.checkedAt = now;
    if (this.#parts.entries.holds(key, entry) && !this.#parts.closed()) {
      this.#parts.keep(key, adopted);
    }
    return adopted;
  }

  async #compare(key: string, entry: Entry): Promise<Entry> {
    const found = await this.results.newer(key, entry.computedAt);
    const now = this.#parts.now();
    if (found === "same" || found === UNAVAILABLE) {
      entry.checkedAt = now;
      return entry;
    }
    if (found === "absent") {
      // Redis lost it (restarted, evicted): ours is the newest there is; the others can have it.
      entry.checkedAt = now;
      void this.results.put(key, entry, entry.expiresAt - now);
      return entry;
    }
    return this.adopt(key, entry, found, now) ?? entry;
  }
}
