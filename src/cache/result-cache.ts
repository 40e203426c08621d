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
// Watching (`watch`): listeners are told of every value stored for a key (a refresh, a newer value
// another replica stored, a reload); they never query. While watched, a key is in use at each warming
// tick as a poller's requests would make it, so any number of watchers cost the warming of one
// poller. With replicas, a watched key is compared with Redis every half second, so a value another
// replica refreshed reaches this one's watchers within a second; a watched key that went (expired,
// evicted) is loaded again, at most once a warming interval.
import { LRUCache } from "lru-cache";
import { UNAVAILABLE } from "../redis/link.ts";
import { cacheEntryId } from "./cache-key.ts";
import type { CacheLogger } from "./cache-logger.ts";
import { ConcurrencyLimit } from "./concurrency-limit.ts";
import { strongEtag } from "./etag.ts";
import type { Payload, Rendition } from "./payload.ts";
import type { SharedResults, SharedValue } from "./shared-results.ts";

export interface CachePolicy {
  ttlSeconds: number;
  warmingSeconds: number;
}

/** REFRESH: recomputed now because the caller asked for a fresher value than the one held. */
export type CacheStatus = "HIT" | "MISS" | "STALE" | "REFRESH";

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

/** Told each value stored for a watched key, as a request would be answered it now. */
export type ValueListener = (answer: CacheAnswer) => void;

/** A payload as served: the loaded one or a rendition, with its ETag. */
interface Served {
  payload: Payload;
  /** Strong, quoted: `"<base64url sha-256>"` of the body and headers. */
  etag: string;
}

export interface CacheAnswer extends Served {
  status: CacheStatus;
  /** Whole seconds since the value was computed (HTTP `Age`). */
  ageSeconds: number;
  /** When the value was computed (its load started), on the cache's clock: which of two is newer. */
  computedAt: number;
  /** Set when a recomputation the request asked for was refused: the held value was served. */
  refused?: "refresh-budget";
}

export interface CacheStats {
  hits: number;
  misses: number;
  stale: number;
  /** Background refreshes started. */
  refreshes: number;
  refreshFailures: number;
  /** Warming ticks that did not refresh: a key requested only once, or past `maxWarmKeys`. */
  warmingsSkipped: number;
  /** Recomputations callers asked for (Cache-Control), and those refused by their budget. */
  forcedRefreshes: number;
  forcedRefreshesRefused: number;
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

type Load = () => Promise<Payload>;

interface Watch {
  policy: CachePolicy;
  load: Load;
  listeners: Set<ValueListener>;
  /** The entry the listeners were last told of (a rendition stores it again, untold). */
  told: Entry | undefined;
  /** When a watched key that is not held may be loaded again. */
  reloadAt: number;
}

interface Entry extends Served {
  /** The loaded payload's, its key's and its kept renditions' bytes. */
  bytes: number;
  renditions: Map<string, Served>;
  policy: CachePolicy;
  load: Load;
  computedAt: number;
  expiresAt: number;
  /** Infinity when the policy does not warm. */
  nextRefreshAt: number;
  lastRequestedAt: number;
  /** The request before the last one; -Infinity when there was none. */
  previousRequestedAt: number;
  /** Set while a refresh is queued or running: the timer then waits for the expiry only. */
  refreshing: boolean;
  /** When the value was last found to be the shared one (with `shared` only). */
  checkedAt: number;
  timer?: NodeJS.Timeout;
}

/** A flight's outcome: the entry, and whether a query ran for it (else it came from Redis as it was). */
interface Loaded {
  entry: Entry;
  fromEngine: boolean;
}

interface Flight {
  done: Promise<Loaded>;
  /** A request waits for it, so its value is stored even when it began as a refresh. */
  awaited: boolean;
}

const SECOND = 1000;
/** A local copy is compared with the shared value at most this often (per key). */
const SHARED_CHECK_MS = SECOND;
/** How often watched keys are looked after: compared with Redis, loaded again when gone. */
const WATCH_TICK_MS = SECOND / 2;

export class ResultCache {
  readonly #entries: LRUCache<string, Entry>;
  readonly #inFlight = new Map<string, Flight>();
  readonly #refreshes: ConcurrencyLimit;
  readonly #logger: CacheLogger | undefined;
  readonly #now: () => number;
  readonly #counts = {
    hits: 0,
    misses: 0,
    stale: 0,
    refreshes: 0,
    refreshFailures: 0,
    warmingsSkipped: 0,
    forcedRefreshes: 0,
    forcedRefreshesRefused: 0,
  };
  readonly #maxWarmKeys: number;
  readonly #shared: SharedResults | undefined;
  /** Comparisons with the shared value in flight, one per key. */
  readonly #checks = new Map<string, Promise<Entry>>();
  readonly #watched = new Map<string, Watch>();
  /** Watched keys whose shared value is being read, not being held here. */
  readonly #taking = new Set<string>();
  #watchTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: ResultCacheOptions) {
    this.#entries = new LRUCache<string, Entry>({
      max: options.maxEntries,
      maxSize: options.maxBytes,
      sizeCalculation: (entry) => entry.bytes,
      dispose: (entry) => clearTimeout(entry.timer),
    });
    this.#refreshes = new ConcurrencyLimit(options.refreshConcurrency ?? 4);
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#maxWarmKeys = options.maxWarmKeys ?? 1000;
    this.#shared = options.shared;
  }

  /**
   * The value of `key`, loaded by `load` when absent or older than `demand` allows; as `rendition`
   * when given, else as loaded.
   */
  async get(
    key: string,
    policy: CachePolicy,
    load: Load,
    rendition?: Rendition,
    demand?: Demand,
  ): Promise<CacheAnswer> {
    const now = this.#now();
    const cached = this.#entries.get(key);
    if (cached && now < cached.expiresAt) {
      const checked = this.#checkDue(cached, now) ? await this.#checked(key, cached) : cached;
      // A hit asks nothing else: it is answered without another turn of the event loop.
      if (!demand) return this.#hit(key, checked, this.#now(), rendition);
      return this.#held(key, checked, policy, load, rendition, demand);
    }
    if (cached) this.#entries.delete(key);
    if (demand?.onlyIfCached) throw new NotCachedError("nothing is held for this key");
    this.#counts.misses++;
    const { entry, fromEngine } = await this.#flight(key, policy, load);
    const answeredAt = this.#now();
    if (!fromEngine) {
      // Another replica's value, found in Redis as it was: a hit after all, unless older than asked.
      this.#counts.misses--;
      if (demand) return this.#held(key, entry, policy, load, rendition, demand);
      return this.#hit(key, entry, answeredAt, rendition);
    }
    if (answeredAt > entry.lastRequestedAt) requested(entry, answeredAt);
    return this.#answer(key, entry, rendition, "MISS", answeredAt);
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

  /** With replicas, whether the held value is to be compared with the shared one before answering. */
  #checkDue(entry: Entry, now: number): boolean {
    return this.#shared !== undefined && now - entry.checkedAt >= SHARED_CHECK_MS;
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
    let watch = this.#watched.get(key);
    const held = this.#entries.peek(key);
    if (!watch) {
      watch = { policy, load, listeners: new Set(), told: held, reloadAt: this.#now() };
      this.#watched.set(key, watch);
    }
    if (tellHeld && held && this.#now() < held.expiresAt) {
      const answer = this.#answer(key, held, undefined, "HIT", this.#now());
      queueMicrotask(() => listener(answer));
    }
    watch.listeners.add(listener);
    this.#armWatch();
    return () => {
      watch.listeners.delete(listener);
      if (watch.listeners.size === 0 && this.#watched.get(key) === watch) this.#watched.delete(key);
    };
  }

  /** Keys watched now. */
  get watchedKeys(): number {
    return this.#watched.size;
  }

  stats(): CacheStats {
    return { ...this.#counts, entries: this.#entries.size, bytes: this.#entries.calculatedSize };
  }

  /** Stops all timers and drops all entries. Loads in flight still answer their waiters, unstored. */
  close(): void {
    this.#closed = true;
    this.#watched.clear();
    clearTimeout(this.#watchTimer);
    this.#refreshes.clear();
    this.#entries.clear();
  }

  /** A held value, unless the demand wants a newer one: then recomputed, joining a load in flight. */
  async #held(
    key: string,
    entry: Entry,
    policy: CachePolicy,
    load: Load,
    rendition: Rendition | undefined,
    demand: Demand,
  ): Promise<CacheAnswer> {
    const now = this.#now();
    const maxAgeMs = (demand.maxAgeSeconds ?? Number.POSITIVE_INFINITY) * SECOND;
    if (demand.onlyIfCached || now - entry.computedAt <= maxAgeMs) {
      return this.#hit(key, entry, now, rendition);
    }
    // Joining a recomputation already running costs nothing; starting one spends the budget.
    if (!this.#inFlight.has(key) && (await demand.mayRecompute?.()) === false) {
      this.#counts.forcedRefreshesRefused++;
      return { ...this.#hit(key, entry, now, rendition), refused: "refresh-budget" };
    }
    this.#counts.forcedRefreshes++;
    const minComputedAt = now - maxAgeMs;
    const { entry: fresh } = await this.#flight(key, policy, load, undefined, minComputedAt);
    const answeredAt = this.#now();
    requested(fresh, answeredAt);
    return this.#answer(key, fresh, rendition, "REFRESH", answeredAt);
  }

  #hit(key: string, entry: Entry, now: number, rendition: Rendition | undefined): CacheAnswer {
    requested(entry, now);
    const status = now - entry.computedAt >= warmingMs(entry.policy) ? "STALE" : "HIT";
    this.#counts[status === "HIT" ? "hits" : "stale"]++;
    return this.#answer(key, entry, rendition, status, now);
  }

  /** The entry once compared with the shared value: itself, or the newer value found in Redis. */
  #checked(key: string, entry: Entry): Promise<Entry> {
    let check = this.#checks.get(key);
    if (!check) {
      check = this.#compareShared(key, entry).finally(() => this.#checks.delete(key));
      this.#checks.set(key, check);
    }
    return check;
  }

  async #compareShared(key: string, entry: Entry): Promise<Entry> {
    const shared = this.#shared as SharedResults;
    const found = await shared.newer(key, entry.computedAt);
    const now = this.#now();
    if (found === "same" || found === UNAVAILABLE) {
      entry.checkedAt = now;
      return entry;
    }
    if (found === "absent") {
      // Redis lost it (restarted, evicted): ours is the newest there is; the others can have it.
      entry.checkedAt = now;
      void shared.put(key, entry, entry.expiresAt - now);
      return entry;
    }
    return this.#adopt(key, entry, found, now) ?? entry;
  }

  /** Replaces the entry by the newer shared value (requests carried over), unless it is too old. */
  #adopt(key: string, entry: Entry, value: SharedValue, now: number): Entry | undefined {
    if (now >= value.computedAt + entry.policy.ttlSeconds * SECOND) return undefined;
    const adopted = this.#entryOf(key, value, entry.policy, entry.load, entry);
    adopted.checkedAt = now;
    if (this.#entries.peek(key) === entry && !this.#closed) this.#store(key, adopted);
    return adopted;
  }

  #entryOf(
    key: string,
    value: SharedValue,
    policy: CachePolicy,
    load: Load,
    uses: Entry | undefined,
  ): Entry {
    const { payload, etag, computedAt } = value;
    return {
      payload,
      etag,
      bytes: byteSize(key, payload),
      renditions: new Map(),
      policy,
      load,
      computedAt,
      expiresAt: computedAt + policy.ttlSeconds * SECOND,
      nextRefreshAt: computedAt + warmingMs(policy),
      // A refresh carries the key's uses over; a request sets them when it is answered.
      lastRequestedAt: uses?.lastRequestedAt ?? Number.NEGATIVE_INFINITY,
      previousRequestedAt: uses?.previousRequestedAt ?? Number.NEGATIVE_INFINITY,
      refreshing: false,
      checkedAt: this.#now(),
    };
  }

  #answer(
    key: string,
    entry: Entry,
    rendition: Rendition | undefined,
    status: CacheStatus,
    now: number,
  ): CacheAnswer {
    const { payload, etag } = rendition ? this.#rendered(key, entry, rendition) : entry;
    const ageSeconds = Math.max(0, Math.floor((now - entry.computedAt) / SECOND));
    return { payload, etag, status, ageSeconds, computedAt: entry.computedAt };
  }

  /** The entry's value as `rendition`, made on first use and kept while the entry fits the byte bound. */
  #rendered(key: string, entry: Entry, rendition: Rendition): Served {
    let served = entry.renditions.get(rendition.name);
    if (served) return served;
    const payload = rendition.render(entry.payload);
    served = { payload, etag: strongEtag(payload.body, payload.headers) };
    const bytes = entry.bytes + byteSize(rendition.name, payload);
    if (this.#entries.peek(key) === entry && bytes <= this.#entries.maxSize) {
      entry.renditions.set(rendition.name, served);
      entry.bytes = bytes;
      // lru-cache sizes a value only when a different one is set: take it out (which clears its
      // timer) and store it again, evicting others as the bound requires.
      this.#entries.delete(key);
      this.#store(key, entry);
    }
    return served;
  }

  /**
   * The one load of `key` in flight, started here if there is none. `refreshOf` marks a background
   * refresh of that entry; without it, a request is waiting.
   */
  #flight(
    key: string,
    policy: CachePolicy,
    load: Load,
    refreshOf?: Entry,
    minComputedAt = Number.NEGATIVE_INFINITY,
  ): Promise<Loaded> {
    const running = this.#inFlight.get(key);
    if (running) {
      running.awaited ||= refreshOf === undefined;
      return running.done;
    }
    const flight: Flight = {
      awaited: refreshOf === undefined,
      done: this.#load(key, policy, load, refreshOf, () => flight.awaited, minComputedAt),
    };
    this.#inFlight.set(key, flight);
    const forget = () => this.#inFlight.delete(key);
    flight.done.then(forget, forget);
    return flight.done;
  }

  async #load(
    key: string,
    policy: CachePolicy,
    load: Load,
    refreshOf: Entry | undefined,
    awaited: () => boolean,
    minComputedAt: number,
  ): Promise<Loaded> {
    const compute = async (): Promise<SharedValue> => {
      const computedAt = this.#now();
      const payload = await load();
      return { payload, etag: strongEtag(payload.body, payload.headers), computedAt };
    };
    const ttlMs = policy.ttlSeconds * SECOND;
    let loaded: { value: SharedValue; fromEngine: boolean };
    if (!this.#shared) loaded = { value: await compute(), fromEngine: true };
    else if (refreshOf) {
      // The lease already made this replica the only one refreshing this value.
      loaded = { value: await compute(), fromEngine: true };
      await this.#shared.put(key, loaded.value, ttlMs);
    } else {
      // A value another replica holds will do, unless the caller asked for one newer than it.
      const fresh = (value: SharedValue) =>
        value.computedAt >= minComputedAt && this.#now() < value.computedAt + ttlMs;
      loaded = await this.#shared.once(key, fresh, compute, ttlMs);
    }
    const entry = this.#entryOf(key, loaded.value, policy, load, refreshOf);
    // A refresh must not bring back a key evicted or dropped meanwhile, unless a request now waits for it.
    const wanted = awaited() || this.#entries.peek(key) === refreshOf;
    if (wanted && !this.#closed) this.#store(key, entry);
    return { entry, fromEngine: loaded.fromEngine };
  }

  #store(key: string, entry: Entry): void {
    this.#entries.set(key, entry);
    const watch = this.#watched.get(key);
    // Not there when larger than the byte bound: served, not stored. Watched, it is loaded again a
    // warming interval after it was computed, as a held key would be refreshed.
    if (this.#entries.peek(key) === entry) this.#arm(key, entry);
    else if (watch) watch.reloadAt = entry.computedAt + reloadIntervalMs(watch.policy);
    if (watch && entry !== watch.told) {
      watch.told = entry;
      // After this turn: a request waiting for this value is answered before its watchers are told.
      setImmediate(() => this.#tell(key, entry, watch));
    }
  }

  #tell(key: string, entry: Entry, watch: Watch): void {
    if (this.#closed) return;
    const answer = this.#answer(key, entry, undefined, "HIT", this.#now());
    for (const listener of watch.listeners) {
      try {
        listener(answer);
      } catch (error) {
        this.#logger?.warn({ entry: cacheEntryId(key), err: error }, "a watcher of a value failed");
      }
    }
  }

  /** Stores the fresh shared value of a watched key that is not held; without one, loads it when due. */
  async #takeShared(key: string, watch: Watch, now: number): Promise<void> {
    this.#taking.add(key);
    try {
      const found = await (this.#shared as SharedResults).get(key);
      if (this.#closed || this.#watched.get(key) !== watch || this.#entries.peek(key)) return;
      const ttlMs = watch.policy.ttlSeconds * SECOND;
      if (typeof found === "object" && this.#now() < found.computedAt + ttlMs) {
        this.#store(key, this.#entryOf(key, found, watch.policy, watch.load, undefined));
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
    if (now < watch.reloadAt || this.#inFlight.has(key)) return;
    watch.reloadAt = now + reloadIntervalMs(watch.policy);
    await this.get(key, watch.policy, watch.load).catch((error: unknown) => {
      this.#logger?.warn(
        { entry: cacheEntryId(key), err: error },
        "a watched value could not be loaded; trying again later",
      );
    });
  }

  /** One timer for every watched key, running while any is watched. */
  #armWatch(): void {
    if (this.#watchTimer !== undefined || this.#closed) return;
    this.#watchTimer = setTimeout(() => {
      this.#watchTimer = undefined;
      if (this.#watched.size === 0) return;
      this.#lookAfterWatched();
      this.#armWatch();
    }, WATCH_TICK_MS);
    this.#watchTimer.unref();
  }

  #lookAfterWatched(): void {
    const now = this.#now();
    for (const [key, watch] of this.#watched) {
      // Looked up as a request would: a watched key is among the most recently used.
      const entry = this.#entries.get(key);
      if (entry && now < entry.expiresAt) {
        // A newer shared value is adopted, and so stored and told.
        if (this.#shared && !this.#checks.has(key)) void this.#checked(key, entry);
      } else if (this.#shared?.up) {
        // Not held (evicted, expired): another replica's value will do, without a query.
        if (!this.#inFlight.has(key) && !this.#taking.has(key))
          void this.#takeShared(key, watch, now);
      } else void this.#reloadWhenDue(key, watch, now);
    }
  }

  /** (Re)sets the entry's one timer: its next refresh, or its expiry when no refresh is due before. */
  #arm(key: string, entry: Entry): void {
    clearTimeout(entry.timer);
    const refreshDue = !entry.refreshing && entry.nextRefreshAt < entry.expiresAt;
    const at = refreshDue ? entry.nextRefreshAt : entry.expiresAt;
    entry.timer = setTimeout(
      () => {
        // Fired: nothing to clear any more (a tick with Redis re-arms only after its round trips).
        entry.timer = undefined;
        this.#wake(key, entry);
      },
      Math.max(0, at - this.#now()),
    );
    entry.timer.unref();
  }

  #wake(key: string, entry: Entry): void {
    if (this.#entries.peek(key) !== entry) return;
    if (this.#watched.has(key)) {
      // Watched: in use as a poller's requests would keep it, so worth warming.
      const now = this.#now();
      entry.previousRequestedAt = now - 1;
      entry.lastRequestedAt = now;
    }
    if (this.#shared?.up && this.#now() < entry.expiresAt) void this.#wakeShared(key, entry);
    else if (this.#warmable(key, entry, this.#now())) this.#startRefresh(key, entry);
  }

  /**
   * Drops the entry when it expired or nobody requested it for a TTL; skips its tick when it is not
   * worth warming. True when it is to be refreshed now.
   */
  #warmable(key: string, entry: Entry, now: number): boolean {
    const inUse = now - entry.lastRequestedAt < entry.policy.ttlSeconds * SECOND;
    if (now >= entry.expiresAt || !inUse) {
      this.#entries.delete(key);
      return false;
    }
    if (!this.#worthWarming(entry, now)) {
      this.#counts.warmingsSkipped++;
      entry.nextRefreshAt = now + warmingMs(entry.policy);
      this.#arm(key, entry);
      return false;
    }
    return true;
  }

  #startRefresh(key: string, entry: Entry): void {
    entry.refreshing = true;
    this.#arm(key, entry);
    this.#refreshes.run(() => this.#refresh(key, entry));
  }

  /**
   * A warming tick with the other replicas: the key's requests on all of them decide, a newer shared
   * value replaces ours without a query, and of the replicas that find it worth warming, the one that
   * takes the lease for this value and tick refreshes it; the others wait for the next tick (or take
   * the refreshed value from Redis before).
   */
  async #wakeShared(key: string, entry: Entry): Promise<void> {
    const shared = this.#shared as SharedResults;
    const ttlMs = entry.policy.ttlSeconds * SECOND;
    const found = await shared.newer(key, entry.computedAt);
    if (this.#entries.peek(key) !== entry) return;
    if (found !== UNAVAILABLE && typeof found === "object") {
      if (this.#adopt(key, entry, found, this.#now())) return;
    }
    const uses = await shared.reportUses(
      key,
      { last: entry.lastRequestedAt, previous: entry.previousRequestedAt },
      ttlMs,
    );
    if (this.#entries.peek(key) !== entry) return;
    if (uses !== UNAVAILABLE) {
      entry.lastRequestedAt = uses.last;
      entry.previousRequestedAt = uses.previous;
    }
    const now = this.#now();
    if (!this.#warmable(key, entry, now)) return;
    const interval = warmingMs(entry.policy);
    const tick = Math.round((now - entry.computedAt) / interval);
    const mine = await shared.lease(key, entry.computedAt, tick, ttlMs);
    if (this.#entries.peek(key) !== entry) return;
    if (mine === false) {
      entry.nextRefreshAt = entry.computedAt + (tick + 1) * interval;
      this.#arm(key, entry);
    } else this.#startRefresh(key, entry);
  }

  /** Requested twice within its TTL, and among the `maxWarmKeys` most recently requested such keys. */
  #worthWarming(entry: Entry, now: number): boolean {
    const inUseTwice = (candidate: Entry) =>
      now - candidate.previousRequestedAt < candidate.policy.ttlSeconds * SECOND;
    if (!inUseTwice(entry)) return false;
    let moreRecent = 0;
    for (const other of this.#entries.values()) {
      if (other.lastRequestedAt > entry.lastRequestedAt && inUseTwice(other)) moreRecent++;
      if (moreRecent >= this.#maxWarmKeys) return false;
    }
    return true;
  }

  async #refresh(key: string, entry: Entry): Promise<void> {
    if (this.#entries.peek(key) !== entry) return;
    this.#counts.refreshes++;
    try {
      await this.#flight(key, entry.policy, entry.load, entry);
    } catch (error) {
      this.#counts.refreshFailures++;
      const keepsUntil = new Date(entry.expiresAt).toISOString();
      this.#logger?.warn(
        { entry: cacheEntryId(key), err: error, keepsUntil },
        "cache refresh failed; serving the previous value",
      );
      if (this.#entries.peek(key) !== entry) return;
      entry.refreshing = false;
      entry.nextRefreshAt = this.#now() + warmingMs(entry.policy);
      this.#arm(key, entry);
    }
  }
}

function requested(entry: Entry, at: number): void {
  entry.previousRequestedAt = entry.lastRequestedAt;
  entry.lastRequestedAt = at;
}

/** Warming interval in ms; Infinity when the policy does not warm (0, or not shorter than the TTL). */
function warmingMs(policy: CachePolicy): number {
  const warms = policy.warmingSeconds > 0 && policy.warmingSeconds < policy.ttlSeconds;
  return warms ? policy.warmingSeconds * SECOND : Number.POSITIVE_INFINITY;
}

/** A payload's bytes and those of the name it is kept under. */
function byteSize(name: string, payload: Payload): number {
  let bytes = Buffer.byteLength(payload.body) + Buffer.byteLength(name);
  for (const [name, value] of Object.entries(payload.headers))
    bytes += name.length + Buffer.byteLength(value);
  return bytes;
}

/** How often a watched key that is not held is loaded again: as a held one would be refreshed. */
function reloadIntervalMs(policy: CachePolicy): number {
  return Math.min(warmingMs(policy), policy.ttlSeconds * SECOND);
}
