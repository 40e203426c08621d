// The result cache's part in Redis, shared by every replica: values, the single-flight lock, the
// keys' uses and the warming leases. The policy stays with the cache (result-cache.ts and its
// parts); this module only says what is in Redis and changes it atomically.
//
// Keys (after REDIS_PREFIX, and `data-<identity>:` on the embedded engine), by the SHA-256 of the
// cache key, so that no parameter value and no credential appears in Redis key names and their
// length is bounded:
// - result:<h>  hash {body, headers (JSON), etag, computedAt}; expires with the value's TTL;
// - uses:<h>    hash {last, previous}: the two latest requests of the key on any replica, as the
//               replicas report them at their warming ticks; expires a TTL after the last;
// - lock:<h>    the single-flight lock: a random owner token, with an expiry the holder extends while
//               its query runs, so a replica that dies holding it blocks nobody for longer;
// - warm:<h>:<computedAt>:<tick>  the warming lease: whoever sets it refreshes that value at that tick.
// Times in the hashes are the replicas' clocks (epoch ms); Redis expiries are real time and only
// collect garbage: whether a value is still fresh is decided from its computedAt.
// Whatever can write to Redis can write anything there: a value read back is served only when it is
// one a replica could have written (see `#problemOf`), else it is deleted and counts as absent, and
// the scripts take a field that is not a number as none.
import { createHash, randomBytes } from "node:crypto";
import { clearInterval, setInterval, setTimeout } from "node:timers";
import type { Redis } from "ioredis";
import { EngineError } from "../engines/engine.ts";
import { type RedisLink, UNAVAILABLE } from "../redis/link.ts";
import { defineScripts, EXTEND_IF_HELD } from "../redis/scripts.ts";
import { cacheEntryId } from "./cache-key.ts";
import type { CacheLogger } from "./cache-logger.ts";
import { strongEtag } from "./etag.ts";
import type { Payload } from "./payload.ts";

/** A value as every replica sees it. */
export interface SharedValue {
  payload: Payload;
  etag: string;
  computedAt: number;
}

export interface Uses {
  last: number;
  previous: number;
}

export interface SharedResultsOptions {
  /** What the values are computed from (see data-identity.ts): only replicas that agree share them. */
  dataIdentity?: string;
  /** The lock's expiry; its holder extends it every third of it. Default 5 s. */
  lockMs?: number;
  /** Longest wait for a value another replica computes: the engine's timeout. Default 30 s. */
  waitMs?: number;
  /** What a stored payload must be to be served (the service's own, see json.ts); default: any. */
  isPayload?: (payload: Payload) => boolean;
  /** The replicas' clock in epoch ms, the one computedAt is read on; default Date.now. */
  now?: () => number;
  /** Where a stored value found bad is reported, once. */
  logger?: CacheLogger;
}

// A write may carry a large body: longer than the hit path's reads are allowed.
const WRITE_TIMEOUT_MS = 1_000;
const FIRST_POLL_MS = 10;
const LAST_POLL_MS = 100;
/** How far ahead of this replica's clock another's may be: a value computed later is not believed. */
const MAX_CLOCK_SKEW_MS = 60_000;
// What Node sends as a header (RFC 9110 §5.1, §5.5): lower-case names, since they are stored so.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;
const MS = /^\d{1,16}(\.\d+)?$/;

const SCRIPTS = {
  // Stores a value unless the one there is as new or newer.
  putResult: {
    numberOfKeys: 1,
    lua: `
      local stored = tonumber(redis.call('HGET', KEYS[1], 'computedAt') or '') or -1
      if stored >= tonumber(ARGV[4]) then return 0 end
      redis.call('HSET', KEYS[1], 'body', ARGV[1], 'headers', ARGV[2], 'etag', ARGV[3], 'computedAt', ARGV[4])
      redis.call('PEXPIRE', KEYS[1], ARGV[5])
      return 1`,
  },
  // The value when newer than ARGV[1] (or its computedAt is no number: the caller finds it bad); 1
  // when not; 0 when there is none.
  newerResult: {
    numberOfKeys: 1,
    lua: `
      local stored = redis.call('HGET', KEYS[1], 'computedAt')
      if not stored then return 0 end
      local at = tonumber(stored)
      if at and at <= tonumber(ARGV[1]) then return 1 end
      return redis.call('HGETALL', KEYS[1])`,
  },
  // Deletes a value found bad, unless another replica replaced it meanwhile.
  dropResult: {
    numberOfKeys: 1,
    lua: `
      local found = redis.call('HMGET', KEYS[1], 'etag', 'computedAt')
      if (found[1] or '') == ARGV[1] and (found[2] or '') == ARGV[2] then
        return redis.call('DEL', KEYS[1])
      end
      return 0`,
  },
  // Merges a replica's two latest requests into the key's, keeping the two latest distinct times.
  reportUses: {
    numberOfKeys: 1,
    lua: `
      local times = {
        tonumber(redis.call('HGET', KEYS[1], 'last') or '') or -1,
        tonumber(redis.call('HGET', KEYS[1], 'previous') or '') or -1,
        tonumber(ARGV[1]), tonumber(ARGV[2]) }
      table.sort(times, function(a, b) return a > b end)
      local previous = -1
      for i = 2, 4 do
        if times[i] < times[1] then previous = times[i]; break end
      end
      redis.call('HSET', KEYS[1], 'last', times[1], 'previous', previous)
      redis.call('PEXPIRE', KEYS[1], ARGV[3])
      return {tostring(times[1]), tostring(previous)}`,
  },
  extendLock: EXTEND_IF_HELD,
  releaseLock: {
    numberOfKeys: 1,
    lua: `
      if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
      return 0`,
  },
} as const;

type Scripted = Redis & {
  putResult(key: string, ...args: (string | number)[]): Promise<number>;
  newerResult(key: string, computedAt: number): Promise<0 | 1 | string[]>;
  dropResult(key: string, etag: string, computedAt: string): Promise<number>;
  reportUses(key: string, last: number, previous: number, ttlMs: number): Promise<string[]>;
  extendLock(key: string, token: string, ms: number): Promise<number>;
  releaseLock(key: string, token: string): Promise<number>;
};

export class SharedResults {
  readonly #link: RedisLink;
  readonly #lockMs: number;
  readonly #waitMs: number;
  readonly #namespace: string;
  readonly #isPayload: (payload: Payload) => boolean;
  readonly #now: () => number;
  readonly #logger: CacheLogger | undefined;

  constructor(link: RedisLink, options: SharedResultsOptions = {}) {
    this.#link = link;
    this.#namespace = options.dataIdentity === undefined ? "" : `data-${options.dataIdentity}:`;
    this.#lockMs = options.lockMs ?? 5_000;
    this.#waitMs = options.waitMs ?? 30_000;
    this.#isPayload = options.isPayload ?? (() => true);
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
    defineScripts(link.client, SCRIPTS);
  }

  get up(): boolean {
    return this.#link.up;
  }

  /**
   * The key's value computed once across replicas: the shared one when fresh, else the one this
   * replica computes under the key's lock, else the one the lock's holder stores (waiting at most the
   * engine's timeout). `fromEngine`: a query ran for it meanwhile, here or elsewhere. Without Redis,
   * computes here.
   */
  async once(
    key: string,
    fresh: (value: SharedValue) => boolean,
    compute: () => Promise<SharedValue>,
    ttlMs: number,
  ): Promise<{ value: SharedValue; fromEngine: boolean }> {
    const deadline = performance.now() + this.#waitMs;
    let pollMs = FIRST_POLL_MS;
    // What was stored before this call waited: a newer value is the lock holder's, computed for a
    // caller who asked the same of it, and is taken even if it began just before this request.
    let before = Number.NEGATIVE_INFINITY;
    for (let waited = false; ; waited = true) {
      const found = await this.get(key);
      if (found === UNAVAILABLE) return { value: await compute(), fromEngine: true };
      if (found && (fresh(found) || (waited && found.computedAt > before))) {
        return { value: found, fromEngine: waited };
      }
      if (!waited) before = found?.computedAt ?? before;
      const token = await this.#lock(key);
      if (token === UNAVAILABLE) return { value: await compute(), fromEngine: true };
      if (token !== undefined) return this.#computeLocked(key, token, fresh, compute, ttlMs);
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new EngineError(
          "engine_timeout",
          `No answer from the engine within ${this.#waitMs} ms (another replica is running this query).`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, left)));
      pollMs = Math.min(pollMs * 2, LAST_POLL_MS);
    }
  }

  /** The key's shared value; undefined when there is none. */
  async get(key: string): Promise<SharedValue | undefined | typeof UNAVAILABLE> {
    const fields = await this.#link.run((redis) => redis.hgetall(this.#key("result", key)));
    if (fields === UNAVAILABLE) return UNAVAILABLE;
    return fields.computedAt === undefined ? undefined : this.#valueOf(key, fields);
  }

  /** The shared value when newer than `computedAt`; "same" when not; "absent" when there is none. */
  async newer(
    key: string,
    computedAt: number,
  ): Promise<SharedValue | "same" | "absent" | typeof UNAVAILABLE> {
    const answer = await this.#link.run((redis) =>
      (redis as Scripted).newerResult(this.#key("result", key), computedAt),
    );
    if (answer === UNAVAILABLE) return UNAVAILABLE;
    if (answer === 0) return "absent";
    if (answer === 1) return "same";
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < answer.length; i += 2)
      fields[answer[i] as string] = answer[i + 1] as string;
    return (await this.#valueOf(key, fields)) ?? "absent";
  }

  /** Stores a value for every replica, unless a newer one is there. */
  async put(key: string, value: SharedValue, ttlMs: number): Promise<void> {
    const headers = JSON.stringify(value.payload.headers);
    await this.#link.run(
      (redis) =>
        (redis as Scripted).putResult(
          this.#key("result", key),
          value.payload.body,
          headers,
          value.etag,
          value.computedAt,
          Math.max(1, Math.ceil(ttlMs)),
        ),
      WRITE_TIMEOUT_MS,
    );
  }

  /** Adds this replica's latest requests to the key's and answers the key's two latest on any replica. */
  async reportUses(key: string, uses: Uses, ttlMs: number): Promise<Uses | typeof UNAVAILABLE> {
    const answer = await this.#link.run((redis) =>
      (redis as Scripted).reportUses(
        this.#key("uses", key),
        finite(uses.last),
        finite(uses.previous),
        Math.max(1, Math.ceil(ttlMs)),
      ),
    );
    if (answer === UNAVAILABLE) return UNAVAILABLE;
    const [last, previous] = answer.map(Number) as [number, number];
    return { last: orNever(last), previous: orNever(previous) };
  }

  /** Whether this replica refreshes the value computed at `computedAt` at warming tick `tick`. */
  async lease(key: string, computedAt: number, tick: number, ms: number) {
    const taken = await this.#link.run((redis) =>
      redis.set(`${this.#key("warm", key)}:${computedAt}:${tick}`, "1", "PX", Math.ceil(ms), "NX"),
    );
    return taken === UNAVAILABLE ? UNAVAILABLE : taken === "OK";
  }

  /** The stored value, when it is one a replica could have written; else deleted, and undefined. */
  async #valueOf(key: string, fields: Record<string, string>): Promise<SharedValue | undefined> {
    const value = parsed(fields);
    const problem =
      value === undefined ? "fields that do not parse" : this.#problemOf(value, fields);
    if (problem === undefined) return value;
    const dropped = await this.#link.run((redis) =>
      (redis as Scripted).dropResult(
        this.#key("result", key),
        fields.etag ?? "",
        fields.computedAt ?? "",
      ),
    );
    // Reported by the reader that deleted it (or could not tell): one line per bad value, however
    // many replicas read it.
    if (dropped !== 0) {
      this.#logger?.warn(
        { entry: cacheEntryId(key), problem },
        "a value in Redis is not one a replica wrote; deleted, and computed afresh",
      );
    }
    return undefined;
  }

  /** What makes a parsed value one no replica wrote; undefined when there is nothing. */
  #problemOf(value: SharedValue, fields: Record<string, string>): string | undefined {
    const { payload, etag, computedAt } = value;
    if (!MS.test(fields.computedAt ?? "")) return "a computedAt that is not a time";
    if (computedAt > this.#now() + MAX_CLOCK_SKEW_MS) return "a computedAt in the future";
    for (const [name, text] of Object.entries(payload.headers)) {
      if (typeof text !== "string" || !HEADER_NAME.test(name) || !HEADER_VALUE.test(text)) {
        return "a header that cannot be sent";
      }
    }
    if (etag !== strongEtag(payload.body, payload.headers)) return "an ETag not of its bytes";
    if (!this.#isPayload(payload)) return "a payload not of the service's form";
    return undefined;
  }

  /** The Redis key of `kind` for a cache key. */
  #key(kind: "result" | "uses" | "lock" | "warm", key: string): string {
    return `${this.#namespace}${kind}:${hashed(key)}`;
  }

  /** A new owner token when this replica took the key's lock; undefined when another holds it. */
  async #lock(key: string): Promise<string | undefined | typeof UNAVAILABLE> {
    const token = randomBytes(12).toString("base64url");
    const taken = await this.#link.run((redis) =>
      redis.set(this.#key("lock", key), token, "PX", this.#lockMs, "NX"),
    );
    if (taken === UNAVAILABLE) return UNAVAILABLE;
    return taken === "OK" ? token : undefined;
  }

  async #computeLocked(
    key: string,
    token: string,
    fresh: (value: SharedValue) => boolean,
    compute: () => Promise<SharedValue>,
    ttlMs: number,
  ): Promise<{ value: SharedValue; fromEngine: boolean }> {
    const lock = this.#key("lock", key);
    const extend = setInterval(() => {
      void this.#link.run((redis) => (redis as Scripted).extendLock(lock, token, this.#lockMs));
    }, this.#lockMs / 3);
    extend.unref();
    try {
      // The holder before us may have stored the value between our look and our lock.
      const found = await this.get(key);
      if (found !== UNAVAILABLE && found && fresh(found)) return { value: found, fromEngine: true };
      const value = await compute();
      await this.put(key, value, ttlMs);
      return { value, fromEngine: true };
    } finally {
      clearInterval(extend);
      void this.#link.run((redis) => (redis as Scripted).releaseLock(lock, token));
    }
  }
}

function hashed(key: string): string {
  return createHash("sha256").update(key).digest("base64url");
}

/** The fields as a value, checked only for their types; undefined when they have none. */
function parsed(fields: Record<string, string>): SharedValue | undefined {
  let headers: unknown;
  try {
    headers = JSON.parse(fields.headers ?? "");
  } catch {
    return undefined;
  }
  const { body, etag } = fields;
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) return undefined;
  if (body === undefined || etag === undefined) return undefined;
  return {
    payload: { body, headers: headers as Record<string, string> },
    etag,
    computedAt: Number(fields.computedAt),
  };
}

/** Request times travel as numbers, -1 for none. */
function finite(ms: number): number {
  return Number.isFinite(ms) ? ms : -1;
}

function orNever(ms: number): number {
  return ms < 0 ? Number.NEGATIVE_INFINITY : ms;
}
