// The warming schedule: each entry's one timer, for its next refresh or its expiry. At a tick a key
// in use is refreshed in the background (at most `refreshConcurrency` at once), one no longer in use
// is dropped, and one not worth warming (requested once, or past `maxWarmKeys`) is skipped; with
// other replicas, their uses count too and a lease picks the one replica that refreshes.
import { UNAVAILABLE } from "../redis/link.ts";
import { cacheEntryId } from "./cache-key.ts";
import type { CacheLogger } from "./cache-logger.ts";
import { ConcurrencyLimit } from "./concurrency-limit.ts";
import { type CacheCounts, type Entry, SECOND, warmingMs } from "./entry.ts";
import type { EntryStore } from "./entry-store.ts";
import type { KeyLoader } from "./key-loader.ts";
import type { SharedCopy } from "./shared-copy.ts";

export interface WarmingParts {
  entries: EntryStore;
  loader: KeyLoader;
  sharing: SharedCopy | undefined;
  counts: CacheCounts;
  now: () => number;
  logger: CacheLogger | undefined;
  /** Background refreshes running at once. */
  refreshConcurrency: number;
  /** Keys warmed at most, the most recently requested first. */
  maxWarmKeys: number;
  /** Whether the key is watched: in use then as a poller's requests would keep it. */
  watched: (key: string) => boolean;
}

export class Warming {
  readonly #parts: WarmingParts;
  readonly #refreshes: ConcurrencyLimit;

  constructor(parts: WarmingParts) {
    this.#parts = parts;
    this.#refreshes = new ConcurrencyLimit(parts.refreshConcurrency);
  }

  /** (Re)sets the entry's one timer: its next refresh, or its expiry when no refresh is due before. */
  arm(key: string, entry: Entry): void {
    clearTimeout(entry.timer);
    const refreshDue = !entry.refreshing && entry.nextRefreshAt < entry.expiresAt;
    const at = refreshDue ? entry.nextRefreshAt : entry.expiresAt;
    entry.timer = setTimeout(
      () => {
        // Fired: nothing to clear any more (a tick with Redis re-arms only after its round trips).
        entry.timer = undefined;
        this.#wake(key, entry);
      },
      Math.max(0, at - this.#parts.now()),
    );
    entry.timer.unref();
  }

  /** Drops the refreshes not yet started. */
  close(): void {
    this.#refreshes.clear();
  }

  #wake(key: string, entry: Entry): void {
    const { entries, now, sharing } = this.#parts;
    if (!entries.holds(key, entry)) return;
    if (this.#parts.watched(key)) {
      // Watched: in use as a poller's requests would keep it, so worth warming.
      const at = now();
      entry.previousRequestedAt = at - 1;
      entry.lastRequestedAt = at;
    }
    if (sharing?.results.up && now() < entry.expiresAt) void this.#wakeShared(sharing, key, entry);
    else if (this.#warmable(key, entry, now())) this.#startRefresh(key, entry);
  }

  /**
   * Drops the entry when it expired or nobody requested it for a TTL; skips its tick when it is not
   * worth warming. True when it is to be refreshed now.
   */
  #warmable(key: string, entry: Entry, now: number): boolean {
    const inUse = now - entry.lastRequestedAt < entry.policy.ttlSeconds * SECOND;
    if (now >= entry.expiresAt || !inUse) {
      this.#parts.entries.delete(key);
      return false;
    }
    if (!this.#worthWarming(entry, now)) {
      this.#parts.counts.warmingsSkipped++;
      entry.nextRefreshAt = now + warmingMs(entry.policy);
      this.arm(key, entry);
      return false;
    }
    return true;
  }

  #startRefresh(key: string, entry: Entry): void {
    entry.refreshing = true;
    this.arm(key, entry);
    this.#refreshes.run(() => this.#refresh(key, entry));
  }

  /**
   * A warming tick with the other replicas: the key's requests on all of them decide, a newer shared
   * value replaces ours without a query, and of the replicas that find it worth warming, the one that
   * takes the lease for this value and tick refreshes it; the others wait for the next tick (or take
   * the refreshed value from Redis before).
   */
  async #wakeShared(sharing: SharedCopy, key: string, entry: Entry): Promise<void> {
    const { entries, now } = this.#parts;
    const shared = sharing.results;
    const ttlMs = entry.policy.ttlSeconds * SECOND;
    const found = await shared.newer(key, entry.computedAt);
    if (!entries.holds(key, entry)) return;
    if (found !== UNAVAILABLE && typeof found === "object") {
      if (sharing.adopt(key, entry, found, now())) return;
    }
    const uses = await shared.reportUses(
      key,
      { last: entry.lastRequestedAt, previous: entry.previousRequestedAt },
      ttlMs,
    );
    if (!entries.holds(key, entry)) return;
    if (uses !== UNAVAILABLE) {
      entry.lastRequestedAt = uses.last;
      entry.previousRequestedAt = uses.previous;
    }
    const at = now();
    if (!this.#warmable(key, entry, at)) return;
    const interval = warmingMs(entry.policy);
    const tick = Math.round((at - entry.computedAt) / interval);
    const mine = await shared.lease(key, entry.computedAt, tick, ttlMs);
    if (!entries.holds(key, entry)) return;
    if (mine === false) {
      entry.nextRefreshAt = entry.computedAt + (tick + 1) * interval;
      this.arm(key, entry);
    } else this.#startRefresh(key, entry);
  }

  /** Requested twice within its TTL, and among the `maxWarmKeys` most recently requested such keys. */
  #worthWarming(entry: Entry, now: number): boolean {
    const inUseTwice = (candidate: Entry) =>
      now - candidate.previousRequestedAt < candidate.policy.ttlSeconds * SECOND;
    if (!inUseTwice(entry)) return false;
    let moreRecent = 0;
    for (const other of this.#parts.entries.values()) {
      if (other.lastRequestedAt > entry.lastRequestedAt && inUseTwice(other)) moreRecent++;
      if (moreRecent >= this.#parts.maxWarmKeys) return false;
    }
    return true;
  }

  async #refresh(key: string, entry: Entry): Promise<void> {
    const { entries, counts, logger, now } = this.#parts;
    if (!entries.holds(key, entry)) return;
    counts.refreshes++;
    try {
      await this.#parts.loader.flight(key, entry.policy, entry.load, entry);
    } catch (error) {
      counts.refreshFailures++;
      const keepsUntil = new Date(entry.expiresAt).toISOString();
      logger?.warn(
        { entry: cacheEntryId(key), err: error, keepsUntil },
        "cache refresh failed; serving the previous value",
      );
      if (!entries.holds(key, entry)) return;
      entry.refreshing = false;
      entry.nextRefreshAt = now() + warmingMs(entry.policy);
      this.arm(key, entry);
    }
  }
}
