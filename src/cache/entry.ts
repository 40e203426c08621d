// What the result cache holds per key and answers with, and the arithmetic of its times: the words
// its parts (store, loading, warming, sharing, watchers, renditions) all speak. See result-cache.ts
// for the rules.
import type { Payload } from "./payload.ts";
import type { SharedValue } from "./shared-results.ts";

export interface CachePolicy {
  ttlSeconds: number;
  warmingSeconds: number;
}

/** REFRESH: recomputed now because the caller asked for a fresher value than the one held. */
export type CacheStatus = "HIT" | "MISS" | "STALE" | "REFRESH";

/** Loads a key's value; `signal` aborts when nobody waits for it any more (see key-loader.ts). */
export type Load = (signal?: AbortSignal) => Promise<Payload>;

/** A payload as served: the loaded one or a rendition, with its ETag. */
export interface Served {
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

/** Told each value stored for a watched key, as a request would be answered it now. */
export type ValueListener = (answer: CacheAnswer) => void;

export interface Entry extends Served {
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

/** What the cache counts as it works; its stats add the store's size. */
export interface CacheCounts {
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
}

export const SECOND = 1000;

/** A value as an entry computed at its computedAt; `uses` carries a refreshed entry's requests over. */
export function entryOf(
  key: string,
  value: SharedValue,
  policy: CachePolicy,
  load: Load,
  uses: Entry | undefined,
  now: number,
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
    checkedAt: now,
  };
}

export function requested(entry: Entry, at: number): void {
  entry.previousRequestedAt = entry.lastRequestedAt;
  entry.lastRequestedAt = at;
}

/** Warming interval in ms; Infinity when the policy does not warm (0, or not shorter than the TTL). */
export function warmingMs(policy: CachePolicy): number {
  const warms = policy.warmingSeconds > 0 && policy.warmingSeconds < policy.ttlSeconds;
  return warms ? policy.warmingSeconds * SECOND : Number.POSITIVE_INFINITY;
}

/** A payload's bytes and those of the name it is kept under. */
export function byteSize(name: string, payload: Payload): number {
  let bytes = Buffer.byteLength(payload.body) + Buffer.byteLength(name);
  for (const [name, value] of Object.entries(payload.headers))
    bytes += name.length + Buffer.byteLength(value);
  return bytes;
}
