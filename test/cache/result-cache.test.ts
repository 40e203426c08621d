// The cache's time rules on a fake clock: vitest fakes Date (the cache's default clock) and setTimeout
// (its timers) together, so advancing time both ages values and fires warming.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { cacheEntryId } from "../../src/cache/cache-key.ts";
import type { CacheLogger } from "../../src/cache/cache-logger.ts";
import type { Payload } from "../../src/cache/payload.ts";
import {
  type CachePolicy,
  ResultCache,
  type ResultCacheOptions,
} from "../../src/cache/result-cache.ts";

const SECOND = 1000;
const DASHBOARD: CachePolicy = { ttlSeconds: 900, warmingSeconds: 300 };
const NO_WARMING: CachePolicy = { ttlSeconds: 900, warmingSeconds: 0 };

/** A loader that answers `{"call":n}` and counts its calls; `fail` and `hold` steer the next calls. */
function countingLoader() {
  const loader = {
    calls: 0,
    fail: false,
    /** When set, calls wait for `release()`. */
    hold: false,
    waiting: [] as Array<() => void>,
    load: async (): Promise<Payload> => {
      const call = ++loader.calls;
      if (loader.hold) await new Promise<void>((resolve) => loader.waiting.push(resolve));
      if (loader.fail) throw new Error(`engine down (call ${call})`);
      return { body: JSON.stringify({ call }), headers: {} };
    },
    release: () => {
      for (const resume of loader.waiting.splice(0)) resume();
    },
  };
  return loader;
}

/** Lets settled promises run their callbacks without moving the clock. */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

let cache: ResultCache;
/** Two requests of `key`: the second a HIT, which makes the key one worth warming. */
async function requestTwice(key: string, load: Parameters<ResultCache["get"]>[2]): Promise<void> {
  await cache.get(key, DASHBOARD, load);
  await cache.get(key, DASHBOARD, load);
}

function makeCache(options: Partial<ResultCacheOptions> = {}): ResultCache {
  cache = new ResultCache({ maxEntries: 100, maxBytes: 1_000_000, ...options });
  return cache;
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});

afterEach(() => {
  cache?.close();
  vi.useRealTimers();
});

describe("TTL", () => {
  it("answers a MISS from the loader, then HITs from memory with its age and remaining TTL", async () => {
    const engine = countingLoader();
    makeCache();
    const miss = await cache.get("k", DASHBOARD, engine.load);
    expect(miss).toMatchObject({ status: "MISS", ageSeconds: 0 });
    expect(miss.payload.body).toBe('{"call":1}');
    expect(miss.etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);

    await vi.advanceTimersByTimeAsync(100 * SECOND);
    const hit = await cache.get("k", DASHBOARD, engine.load);
    expect(hit).toMatchObject({
      status: "HIT",
      ageSeconds: 100,
      etag: miss.etag,
    });
    expect(hit.payload).toBe(miss.payload);
    expect(engine.calls).toBe(1);
  });

  it("serves a value until just before 900 s and queries again at exactly 900 s", async () => {
    const engine = countingLoader();
    makeCache();
    await cache.get("k", NO_WARMING, engine.load);

    await vi.advanceTimersByTimeAsync(900 * SECOND - 1);
    expect(await cache.get("k", NO_WARMING, engine.load)).toMatchObject({
      status: "HIT",
      ageSeconds: 899,
    });
    await vi.advanceTimersByTimeAsync(1);
    const after = await cache.get("k", NO_WARMING, engine.load);
    expect(after).toMatchObject({ status: "MISS" });
    expect(after.payload.body).toBe('{"call":2}');
  });

  it("never serves a value at or after its TTL, even when its timer is late", async () => {
    let clock = 0; // moves without running timers, as on a busy event loop
    const engine = countingLoader();
    makeCache({ now: () => clock });
    await cache.get("k", NO_WARMING, engine.load);
    clock = 900 * SECOND - 1;
    expect((await cache.get("k", NO_WARMING, engine.load)).status).toBe("HIT");
    clock = 900 * SECOND;
    expect((await cache.get("k", NO_WARMING, engine.load)).status).toBe("MISS");
    expect(engine.calls).toBe(2);
  });

  it("does not store errors", async () => {
    const engine = countingLoader();
    engine.fail = true;
    makeCache();
    await expect(cache.get("k", DASHBOARD, engine.load)).rejects.toThrow("engine down (call 1)");
    expect(cache.stats().entries).toBe(0);
    engine.fail = false;
    expect(await cache.get("k", DASHBOARD, engine.load)).toMatchObject({ status: "MISS" });
    expect(engine.calls).toBe(2);
  });
});

describe("answering at once", () => {
  it("gives a held value without a promise while it is fresh, and nothing once it has expired", async () => {
    makeCache();
    const loader = countingLoader();
    expect(cache.fresh("k")).toBeUndefined();
    await cache.get("k", NO_WARMING, loader.load);
    vi.advanceTimersByTime(10 * SECOND);
    expect(cache.fresh("k")).toMatchObject({
      status: "HIT",
      ageSeconds: 10,
      payload: { body: '{"call":1}' },
    });
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 1 });
    vi.advanceTimersByTime(890 * SECOND);
    expect(cache.fresh("k")).toBeUndefined();
    expect(loader.calls).toBe(1);
  });

  it("answers a value past its warming interval as STALE, as get does", async () => {
    makeCache();
    await cache.get("k", DASHBOARD, countingLoader().load);
    vi.advanceTimersByTime(300 * SECOND);
    expect(cache.fresh("k")).toMatchObject({ status: "STALE", ageSeconds: 300 });
    expect(cache.stats()).toMatchObject({ stale: 1 });
  });
});

describe("warming", () => {
  it("re-queries in the background at 300 s and replaces the value", async () => {
    const engine = countingLoader();
    makeCache();
    await requestTwice("k", engine.load);

    await vi.advanceTimersByTimeAsync(300 * SECOND - 1);
    expect(engine.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(engine.calls).toBe(2);
    const warmed = await cache.get("k", DASHBOARD, engine.load);
    expect(warmed).toMatchObject({ status: "HIT", ageSeconds: 0 });
    expect(warmed.payload.body).toBe('{"call":2}');
    expect(cache.stats()).toMatchObject({ refreshes: 1, refreshFailures: 0, misses: 1 });
  });

  it("keeps a polled key warm: an hour of polling every 10 s misses once and costs 13 queries", async () => {
    const engine = countingLoader();
    makeCache();
    for (let t = 0; t <= 3600; t += 10) {
      const { status } = await cache.get("k", DASHBOARD, engine.load);
      expect(status).toBe(t === 0 ? "MISS" : "HIT");
      await vi.advanceTimersByTimeAsync(10 * SECOND);
    }
    expect(engine.calls).toBe(13);
    expect(cache.stats()).toMatchObject({ misses: 1, stale: 0 });
  });

  it("stops warming a key nobody requested for a whole TTL, and drops it", async () => {
    const engine = countingLoader();
    makeCache();
    await requestTwice("k", engine.load);

    await vi.advanceTimersByTimeAsync(3600 * SECOND);
    expect(engine.calls).toBe(3); // the miss at 0 s, refreshes at 300 s and 600 s; dropped at 900 s
    expect(cache.stats().entries).toBe(0);
    expect(await cache.get("k", DASHBOARD, engine.load)).toMatchObject({ status: "MISS" });
  });

  it("counts the last request, not the first, to decide whether a key is still in use", async () => {
    const engine = countingLoader();
    makeCache();
    await requestTwice("k", engine.load);
    await vi.advanceTimersByTimeAsync(850 * SECOND);
    await requestTwice("k", engine.load);

    await vi.advanceTimersByTimeAsync(3600 * SECOND);
    // in use until 1750 s: refreshes at 300, 600, 900, 1200, 1500 s; dropped at 1800 s
    expect(engine.calls).toBe(6);
    expect(cache.stats().entries).toBe(0);
  });

  it("never makes a poller wait for a refresh in flight (STALE meanwhile)", async () => {
    const engine = countingLoader();
    makeCache();
    await requestTwice("k", engine.load);
    engine.hold = true;
    await vi.advanceTimersByTimeAsync(300 * SECOND);
    expect(engine.calls).toBe(2);

    let answered = false;
    const during = cache.get("k", DASHBOARD, engine.load).finally(() => {
      answered = true;
    });
    await flush();
    expect(answered).toBe(true);
    expect(await during).toMatchObject({ status: "STALE", ageSeconds: 300 });
    expect((await during).payload.body).toBe('{"call":1}');

    engine.release();
    await flush();
    const after = await cache.get("k", DASHBOARD, engine.load);
    expect(after).toMatchObject({ status: "HIT", ageSeconds: 0 });
    expect(after.payload.body).toBe('{"call":2}');
  });

  it("lets a miss at expiry join the refresh still in flight instead of querying again", async () => {
    const engine = countingLoader();
    makeCache();
    await requestTwice("k", engine.load);
    engine.fail = true;
    await vi.advanceTimersByTimeAsync(300 * SECOND); // the refresh at 300 s fails
    engine.fail = false;
    engine.hold = true;
    await vi.advanceTimersByTimeAsync(600 * SECOND); // the retry at 600 s is still running at 900 s
    expect(engine.calls).toBe(3);

    const miss = cache.get("k", DASHBOARD, engine.load);
    engine.release();
    const answer = await miss;
    expect(engine.calls).toBe(3);
    expect(answer).toMatchObject({ status: "MISS", ageSeconds: 300 });
    expect(answer.payload.body).toBe('{"call":3}');
    // Stored, though computed a warming interval ago (at 600 s): served as STALE and refreshed at once.
    expect((await cache.get("k", DASHBOARD, engine.load)).status).toBe("STALE");
    expect(engine.calls).toBe(3);
    await vi.advanceTimersByTimeAsync(0);
    expect(engine.calls).toBe(4);
  });

  it("runs at most refreshConcurrency refreshes at once", async () => {
    const engine = countingLoader();
    makeCache({ refreshConcurrency: 2 });
    for (const key of ["a", "b", "c", "d", "e"]) await requestTwice(key, engine.load);
    engine.hold = true;

    await vi.advanceTimersByTimeAsync(300 * SECOND);
    expect(engine.calls).toBe(5 + 2);
    engine.release();
    await flush();
    expect(engine.calls).toBe(5 + 4);
    engine.release();
    await flush();
    expect(engine.calls).toBe(5 + 5);
    engine.release();
    await flush();
    expect(cache.stats()).toMatchObject({ refreshes: 5, refreshFailures: 0, entries: 5 });
  });
});

describe("stale-if-error", () => {
  function recordingLogger() {
    const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
    const logger: CacheLogger = { warn: (fields, message) => warnings.push({ fields, message }) };
    return { logger, warnings };
  }

  it("serves the previous value as STALE until its TTL ends, then misses and queries", async () => {
    const engine = countingLoader();
    const { logger, warnings } = recordingLogger();
    makeCache({ logger });
    await requestTwice("k", engine.load);
    engine.fail = true;

    await vi.advanceTimersByTimeAsync(300 * SECOND);
    const stale = await cache.get("k", DASHBOARD, engine.load);
    expect(stale).toMatchObject({ status: "STALE", ageSeconds: 300 });
    expect(stale.payload.body).toBe('{"call":1}');
    expect(warnings).toHaveLength(1);
    // The entry by a hash of its key: the key holds parameter values, which are never logged.
    expect(warnings[0]?.fields).toMatchObject({ entry: cacheEntryId("k") });
    expect(warnings[0]?.fields).not.toHaveProperty("key");

    await vi.advanceTimersByTimeAsync(600 * SECOND - 1); // the retry at 600 s fails too
    expect(await cache.get("k", DASHBOARD, engine.load)).toMatchObject({ status: "STALE" });
    expect(cache.stats()).toMatchObject({ refreshes: 2, refreshFailures: 2, stale: 2 });

    await vi.advanceTimersByTimeAsync(1);
    engine.fail = false;
    const fresh = await cache.get("k", DASHBOARD, engine.load);
    expect(fresh).toMatchObject({ status: "MISS", ageSeconds: 0 });
    expect(fresh.payload.body).toBe('{"call":4}');
  });

  it("recovers at the next warming interval when the engine is back", async () => {
    const engine = countingLoader();
    makeCache();
    await requestTwice("k", engine.load);
    engine.fail = true;
    await vi.advanceTimersByTimeAsync(300 * SECOND);
    engine.fail = false;
    await vi.advanceTimersByTimeAsync(300 * SECOND);

    const answer = await cache.get("k", DASHBOARD, engine.load);
    expect(answer).toMatchObject({ status: "HIT", ageSeconds: 0 });
    expect(answer.payload.body).toBe('{"call":3}');
  });
});

describe("bounds", () => {
  const body = "x".repeat(100);
  const fixed = async (): Promise<Payload> => ({ body, headers: {} });
  const entryBytes = 100 + 1; // body + one-character key

  it("evicts the least recently requested entry when the byte bound is reached", async () => {
    makeCache({ maxBytes: 3 * entryBytes });
    for (const key of ["a", "b", "c"]) await cache.get(key, DASHBOARD, fixed);
    expect(cache.stats()).toMatchObject({ entries: 3, bytes: 3 * entryBytes });
    await cache.get("a", DASHBOARD, fixed); // a is now more recent than b

    await cache.get("d", DASHBOARD, fixed);
    expect((await cache.get("a", DASHBOARD, fixed)).status).toBe("HIT");
    expect((await cache.get("c", DASHBOARD, fixed)).status).toBe("HIT");
    expect((await cache.get("d", DASHBOARD, fixed)).status).toBe("HIT");
    expect((await cache.get("b", DASHBOARD, fixed)).status).toBe("MISS");
  });

  it("evicts the least recently requested entry when the entry bound is reached", async () => {
    makeCache({ maxEntries: 2 });
    for (const key of ["a", "b", "a", "c"]) await cache.get(key, DASHBOARD, fixed);
    expect(cache.stats().entries).toBe(2);
    expect((await cache.get("a", DASHBOARD, fixed)).status).toBe("HIT");
    expect((await cache.get("b", DASHBOARD, fixed)).status).toBe("MISS");
  });

  it("does not let a refresh bring back an entry evicted while it ran", async () => {
    const engine = countingLoader();
    makeCache({ maxEntries: 1 });
    await requestTwice("a", engine.load);
    engine.hold = true;
    await vi.advanceTimersByTimeAsync(300 * SECOND); // a's refresh starts and waits
    engine.hold = false;
    await cache.get("b", DASHBOARD, engine.load); // evicts a

    engine.release();
    await flush();
    expect(engine.calls).toBe(3);
    expect(cache.stats().entries).toBe(1);
    expect((await cache.get("b", DASHBOARD, engine.load)).status).toBe("HIT");
  });

  it("answers but does not store a value larger than the byte bound", async () => {
    makeCache({ maxBytes: 50 });
    const answer = await cache.get("a", DASHBOARD, fixed);
    expect(answer.payload.body).toBe(body);
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0 });
  });
});

describe("close", () => {
  it("stops every timer and drops every entry", async () => {
    const engine = countingLoader();
    makeCache();
    for (const key of ["a", "b", "c"]) await cache.get(key, DASHBOARD, engine.load);
    expect(vi.getTimerCount()).toBe(3);

    cache.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(cache.stats().entries).toBe(0);
    await vi.advanceTimersByTimeAsync(3600 * SECOND);
    expect(engine.calls).toBe(3);
  });
});

describe("warming only keys in real use", () => {
  it("never refreshes a key requested once: it is served until its TTL, then dropped", async () => {
    const engine = countingLoader();
    makeCache();
    await cache.get("k", DASHBOARD, engine.load);
    await vi.advanceTimersByTimeAsync(899 * SECOND);
    expect((await cache.get("k", DASHBOARD, engine.load)).status).toBe("STALE");
    expect(engine.calls).toBe(1);
    expect(cache.stats().warmingsSkipped).toBe(2);
  });

  it("starts warming a key at the first tick after its second request within the TTL", async () => {
    const engine = countingLoader();
    makeCache();
    await cache.get("k", DASHBOARD, engine.load);
    await vi.advanceTimersByTimeAsync(400 * SECOND); // the tick at 300 s skips it
    await cache.get("k", DASHBOARD, engine.load);
    await vi.advanceTimersByTimeAsync(200 * SECOND); // the tick at 600 s warms it
    expect(engine.calls).toBe(2);
    expect(cache.stats()).toMatchObject({ warmingsSkipped: 1, refreshes: 1 });
  });

  it("warms at most maxWarmKeys keys, the most recently requested first; the others expire", async () => {
    const engine = countingLoader();
    makeCache({ maxWarmKeys: 2 });
    for (const key of ["a", "b", "c"]) {
      await requestTwice(key, engine.load);
      await vi.advanceTimersByTimeAsync(1 * SECOND);
    }
    await cache.get("a", DASHBOARD, engine.load); // a is now the most recent, then c, then b
    await vi.advanceTimersByTimeAsync(300 * SECOND);
    expect(engine.calls).toBe(3 + 2);
    expect(cache.stats().warmingsSkipped).toBe(1);
    await vi.advanceTimersByTimeAsync(600 * SECOND);
    expect((await cache.get("b", DASHBOARD, engine.load)).status).toBe("MISS");
  });

  it("buys no background jobs with 1 000 one-off keys", async () => {
    const engine = countingLoader();
    makeCache({ maxEntries: 2_000, maxBytes: 1e9 });
    for (let i = 0; i < 1_000; i++) await cache.get(`one-off-${i}`, DASHBOARD, engine.load);
    await vi.advanceTimersByTimeAsync(3600 * SECOND);
    expect(engine.calls).toBe(1_000);
    expect(cache.stats().entries).toBe(0);
  });
});
