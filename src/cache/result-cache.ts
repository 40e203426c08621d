// In-memory result cache for the dashboard endpoints: answers from memory, one engine query per key at a
// time, background warming, stale-if-error.
//
// Semantics (all times from `now()`, in ms; policy values in seconds):
// - A value is "computed" when its load *started* (the engine's "now" is read then), lives `ttlSeconds`
//   from that instant and is never served at or after `computedAt + ttl`.
// - A key is "in use" while it was requested within the last `ttlSeconds`. While in use, its value is
//   re-queried in the background every `warmingSeconds` (when 0 < warming < ttl), the new value replacing
//   the old one in a single `set`. At a warming tick where the key is no longer in use, the entry is
//   dropped: no more warming, the next request is a MISS.
// - Warming is for keys in real use, so that one-off requests cannot buy background engine jobs: a key
//   is warmed only when it was requested at least twice within the last `ttlSeconds`, and only when it
//   is among the `maxWarmKeys` most recently requested such keys. A tick that does neither is counted
//   as skipped; the value is still served until its TTL, and the next tick looks again.
// - A refresh that fails is logged and counted; the previous value is still served until its own TTL
//   ends, the refresh is retried one warming interval later, and at the TTL the entry is dropped. The
//   next request is then a MISS that queries synchronously.
// - HIT: served from memory, younger than the warming interval. STALE: served from memory but at least
//   one warming interval old, i.e. its refresh is in flight, queued behind others, or failed. MISS: the
//   caller waited for the engine. A caller holding a live value never waits, even while it is refreshed.
// - Single flight: one load per key at a time, shared by concurrent misses and by a refresh; every
//   waiter gets its result or its error. Errors are never stored.
// - Bounded by entry count and by bytes (body + headers + key, and the renditions made of it), least
//   recently *requested or refreshed* evicted first. A value larger than the byte bound is served but not
//   stored; a rendition that would take its entry past the bound is served but not kept. A refresh
//   replaces only its own entry: it never brings back one evicted or dropped while it ran, unless a
//   request waits.
// - Renditions: other representations of a value (CSV, NDJSON), each made from it on first request and
//   kept with its own strong ETag until the value is replaced or dropped.
// - Each entry owns one unref'd timer, either for its next refresh or for its expiry; close() clears them.
//
// Shared through Redis (`shared`, when REDIS_URL is set), the same rules hold across replicas:
// - A miss first looks in Redis; a value there is a HIT (or STALE) here too, with its ETag and Age.
//   Else one replica runs the query under the key's lock and stores it; the others wait for it.
// - The in-process copy serves hits without a round trip, and is compared with Redis at most once a
//   second per key (a small script: the value only when it is newer), so no hit serves a value more
//   than a second older than the shared one.
// - At a warming tick a replica reports its latest requests of the key; the decision to warm uses
//   every replica's, and a lease per value and tick lets exactly one replica refresh. The others take
//   the new value from Redis; a newer value found at a tick replaces the local one without a query.
// - When Redis is away (`shared` answers UNAVAILABLE) everything above is local, as without Redis.
//
// Watching (`watch`): listeners are told of every value stored for a key; they never query (see
// watchers.ts).
//
// The parts, one job each: entry-store.ts holds the entries within their bounds, key-loader.ts runs
// one load per key, warming.ts keeps each entry's timer, shared-copy.ts keeps this copy in step with
// Redis, watchers.ts tells watchers, renditions.ts answers in other representations. This class
// answers requests with them.
import type { CacheLogger } from "./cache-logger.ts";
import {
  type CacheAnswer,
  type CacheCounts,
  type CachePolicy,
  type Entry,
  type Load,
  requested,
  SECOND,
  type ValueListener,
  warmingMs,
} from "./entry.ts";
import { EntryStore } from "./entry-store.ts";
import { KeyLoader } from "./key-loader.ts";
import type { Rendition } from "./payload.ts";
import { Renditions } from "./renditions.ts";
import { SharedCopy } from "./shared-copy.ts";
import type { SharedResults } from "./shared-results.ts";
import { Warming } from "./warming.ts";
import { Watchers } from "./watchers.ts";

export type { CacheAnswer, CachePolicy, CacheStatus, ValueListener } from "./entry.ts";

/** What a request asks of the value (its Cache-Control directives, RFC 9111 §5.2.1). */
export interface Demand {
  /** Serve a held value only when at most this many seconds old (no-cache: 0), else recompute. */
  maxAgeSeconds?: number;
  /** Answer only from what is held: never a query (NotCachedError when nothing is). */
  onlyIfCached?: boolean;
  /** Asked before a recomputation is started for this demand; false refuses it (the budget). */
  mayRecompute?: () => Promise<boolean>;
}

/** only-if-cached found nothing held. */
export class NotCachedError extends Error {
  override name = "NotCachedError";
}

export interface CacheStats extends CacheCounts {
  entries: number;
  bytes: number;
}

export interface ResultCacheOptions {
  maxEntries: number;
  maxBytes: number;
  /** Background refreshes running at once; default 4. */
  refreshConcurrency?: number;
  /** Keys warmed at most, the most recently requested first (CACHE_MAX_WARM_KEYS); default 1000. */
  maxWarmKeys?: number;
  logger?: CacheLogger;
  /** Clock in ms; default Date.now. Timers are plain setTimeout, so tests use fake timers. */
  now?: () => number;
  /** The values, lock, uses and leases shared with other replicas (REDIS_URL); absent: this process only. */
  shared?: SharedResults;
}

export class ResultCache {
  readonly #entries: EntryStore;
  readonly #now: () => number;
  readonly #counts: CacheCounts = {
    hits: 0,
    misses: 0,
    stale: 0,
    refreshes: 0,
    refreshFailures: 0,
    warmingsSkipped: 0,
    forcedRefreshes: 0,
    forcedRefreshesRefused: 0,
  };
  readonly #loader: KeyLoader;
  readonly #sharing: SharedCopy | undefined;
  readonly #warming: Warming;
  readonly #watchers: Watchers;
  readonly #renditions: Renditions;
  #closed = false;
  #serves: (key: string) => boolean = () => true;

  constructor(options: ResultCacheOptions) {
    const now = options.now ?? Date.now;
    const logger = options.logger;
    const entries = new EntryStore(options.maxEntries, options.maxBytes);
    const keep = (key: string, entry: Entry) => this.#store(key, entry);
    const closed = () => this.#closed;
    this.#entries = entries;
    this.#now = now;
    this.#renditions = new Renditions(entries, keep);
    const shared = options.shared;
    this.#sharing = shared && new SharedCopy(shared, { entries, now, keep, closed });
    this.#loader = new KeyLoader({ entries, now, shared, keep, closed });
    this.#warming = new Warming({
      entries,
      loader: this.#loader,
      sharing: this.#sharing,
      counts: this.#counts,
      now,
      logger,
      refreshConcurrency: options.refreshConcurrency ?? 4,
      maxWarmKeys: options.maxWarmKeys ?? 1000,
      watched: (key) => this.#watchers.has(key),
    });
    this.#watchers = new Watchers({
      entries,
      loader: this.#loader,
      sharing: this.#sharing,
      now,
      logger,
      answer: (key, entry) => this.#renditions.answer(key, entry, undefined, "HIT", now()),
      keep,
      get: (key, policy, load) => this.get(key, policy, load),
      closed,
    });
  }

  /**
   * The value of `key`, loaded by `load` when absent or older than `demand` allows; as `rendition`
   * when given, else as loaded. `left` aborts when the caller stops waiting: it is answered at once,
   * and the load stopped when nobody else waits for it.
   */
  async get(
    key: string,
    policy: CachePolicy,
    load: Load,
    rendition?: Rendition,
    demand?: Demand,
    left?: AbortSignal,
  ): Promise<CacheAnswer> {
    const now = this.#now();
    const cached = this.#entries.get(key);
    if (cached && now < cached.expiresAt) {
      const checked = this.#checkDue(cached, now)
        ? await (this.#sharing as SharedCopy).checked(key, cached)
        : cached;
      // A hit asks nothing else: it is answered without another turn of the event loop.
      if (!demand) return this.#hit(key, checked, this.#now(), rendition);
      return this.#held(key, checked, policy, load, rendition, demand, left);
    }
    if (cached) this.#entries.delete(key);
    if (demand?.onlyIfCached) throw new NotCachedError("nothing is held for this key");
    this.#counts.misses++;
    const { entry, fromEngine } = await this.#loader.flight(
      key,
      policy,
      load,
      undefined,
      undefined,
      left,
    );
    const answeredAt = this.#now();
    if (!fromEngine) {
      // Another replica's value, found in Redis as it was: a hit after all, unless older than asked.
      this.#counts.misses--;
      if (demand) return this.#held(key, entry, policy, load, rendition, demand, left);
      return this.#hit(key, entry, answeredAt, rendition);
    }
    if (answeredAt > entry.lastRequestedAt) requested(entry, answeredAt);
    return this.#renditions.answer(key, entry, rendition, "MISS", answeredAt);
  }

  /**
   * The held value, when it can be answered without waiting: fresh and, with replicas, compared
   * with the shared value within the last second. Otherwise undefined, and `get` answers.
   */
  fresh(key: string, rendition?: Rendition): CacheAnswer | undefined {
    const now = this.#now();
    const cached = this.#entries.get(key);
    if (!cached || now >= cached.expiresAt || this.#checkDue(cached, now)) return undefined;
    return this.#hit(key, cached, now, rendition);
  }

  /**
   * Tells `listener` of every value stored for `key` from now on, until the returned function is
   * called; of the value held now too (in a microtask) when `tellHeld`, else the caller asks `get`
   * for it. `load` loads the key when it is not held (within half a second) or went while watched.
   */
  watch(
    key: string,
    policy: CachePolicy,
    load: Load,
    listener: ValueListener,
    tellHeld = false,
  ): () => void {
    return this.#watchers.add(key, policy, load, listener, tellHeld);
  }

  /** Keys watched now. */
  get watchedKeys(): number {
    return this.#watchers.size;
  }

  stats(): CacheStats {
    return { ...this.#counts, entries: this.#entries.size, bytes: this.#entries.bytes };
  }

  /**
   * From now on holds, warms and watches only the keys `serves` keeps: the others' entries and
   * watches go now, and a load of one still in flight answers its waiters unstored.
   */
  retain(serves: (key: string) => boolean): void {
    this.#serves = serves;
    for (const key of this.#entries.keys()) if (!serves(key)) this.#entries.delete(key);
    this.#watchers.retain(serves);
  }

  /** Stops all timers and drops all entries. Loads in flight still answer their waiters, unstored. */
  close(): void {
    this.#closed = true;
    this.#watchers.close();
    this.#warming.close();
    this.#entries.clear();
  }

  /** With replicas, whether the held value is to be compared with the shared one before answering. */
  #checkDue(entry: Entry, now: number): boolean {
    return this.#sharing?.due(entry, now) === true;
  }

  /** A held value, unless the demand wants a newer one: then recomputed, joining a load in flight. */
  async #held(
    key: string,
    entry: Entry,
    policy: CachePolicy,
    load: Load,
    rendition: Rendition | undefined,
    demand: Demand,
    left: AbortSignal | undefined,
  ): Promise<CacheAnswer> {
    const now = this.#now();
    const maxAgeMs = (demand.maxAgeSeconds ?? Number.POSITIVE_INFINITY) * SECOND;
    if (demand.onlyIfCached || now - entry.computedAt <= maxAgeMs) {
      return this.#hit(key, entry, now, rendition);
    }
    // Joining a recomputation already running costs nothing; starting one spends the budget.
    if (!this.#loader.has(key) && (await demand.mayRecompute?.()) === false) {
      this.#counts.forcedRefreshesRefused++;
      return { ...this.#hit(key, entry, now, rendition), refused: "refresh-budget" };
    }
    this.#counts.forcedRefreshes++;
    const minComputedAt = now - maxAgeMs;
    const { entry: fresh } = await this.#loader.flight(
      key,
      policy,
      load,
      undefined,
      minComputedAt,
      left,
    );
    const answeredAt = this.#now();
    requested(fresh, answeredAt);
    return this.#renditions.answer(key, fresh, rendition, "REFRESH", answeredAt);
  }

  #hit(key: string, entry: Entry, now: number, rendition: Rendition | undefined): CacheAnswer {
    requested(entry, now);
    const status = now - entry.computedAt >= warmingMs(entry.policy) ? "STALE" : "HIT";
    this.#counts[status === "HIT" ? "hits" : "stale"]++;
    return this.#renditions.answer(key, entry, rendition, status, now);
  }

  /** Stores an entry: its timer is armed when it fits the bounds, and its watchers are told. */
  #store(key: string, entry: Entry): void {
    if (!this.#serves(key)) return;
    const kept = this.#entries.set(key, entry);
    if (kept) this.#warming.arm(key, entry);
    this.#watchers.stored(key, entry, kept);
  }
}
