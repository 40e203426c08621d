// Renditions of a cached value (another format of it): made once per value, kept in the entry's bytes,
// each with its own strong ETag; on a fake clock, as in result-cache.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Payload, Rendition } from "../../src/cache/payload.ts";
import {
  type CachePolicy,
  ResultCache,
  type ResultCacheOptions,
} from "../../src/cache/result-cache.ts";

const SECOND = 1000;
const DASHBOARD: CachePolicy = { ttlSeconds: 900, warmingSeconds: 300 };

/** A loader answering `{"call":n}` (n its call count) in `size` bytes of body. */
function loader(size = 100) {
  const counts = { calls: 0 };
  const load = async (): Promise<Payload> => {
    counts.calls++;
    return { body: JSON.stringify({ call: counts.calls }).padEnd(size), headers: {} };
  };
  return { counts, load };
}

/** Upper-cases the body, `factor` times over, and counts its renders. */
function upper(factor = 1): Rendition & { renders: number } {
  const rendition = {
    name: "upper",
    renders: 0,
    render: (payload: Payload): Payload => {
      rendition.renders++;
      return { body: payload.body.toUpperCase().repeat(factor), headers: { "x-upper": "1" } };
    },
  };
  return rendition;
}

let cache: ResultCache;
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

describe("renditions", () => {
  it("renders once per value, with a strong ETag of its own, the value's status and age", async () => {
    const engine = loader();
    const rendition = upper();
    makeCache();
    const plain = await cache.get("k", DASHBOARD, engine.load);
    const first = await cache.get("k", DASHBOARD, engine.load, rendition);
    await vi.advanceTimersByTimeAsync(100 * SECOND);
    const second = await cache.get("k", DASHBOARD, engine.load, rendition);

    expect(first.payload.body).toBe(plain.payload.body.toUpperCase());
    expect(first.payload.headers).toEqual({ "x-upper": "1" });
    expect(first.etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(first.etag).not.toBe(plain.etag);
    expect(second).toMatchObject({ status: "HIT", ageSeconds: 100, etag: first.etag });
    expect(second.payload).toBe(first.payload);
    expect(rendition.renders).toBe(1);
    expect(engine.counts.calls).toBe(1);
    // the value as loaded is still served as it was
    expect((await cache.get("k", DASHBOARD, engine.load)).payload).toBe(plain.payload);
  });

  it("renders a miss's value from the one load", async () => {
    const engine = loader();
    const rendition = upper();
    makeCache();
    const miss = await cache.get("k", DASHBOARD, engine.load, rendition);
    expect(miss.status).toBe("MISS");
    expect(miss.payload.body).toBe('{"CALL":1}'.padEnd(100));
    expect((await cache.get("k", DASHBOARD, engine.load, rendition)).status).toBe("HIT");
    expect(rendition.renders).toBe(1);
    expect(engine.counts.calls).toBe(1);
  });

  it("counts a kept rendition in the entry's bytes", async () => {
    const engine = loader(100);
    makeCache();
    await cache.get("k", DASHBOARD, engine.load);
    const before = cache.stats().bytes;
    await cache.get("k", DASHBOARD, engine.load, upper(3));
    expect(cache.stats().bytes - before).toBe(300 + "upper".length + "x-upper".length + 1);
  });

  it("evicts the least recently used entry to keep a rendition within the byte bound", async () => {
    const engine = loader(100);
    makeCache({ maxBytes: 300 });
    await cache.get("old", DASHBOARD, engine.load);
    await cache.get("new", DASHBOARD, engine.load);
    await cache.get("new", DASHBOARD, engine.load, upper());

    expect(cache.stats().entries).toBe(1);
    expect(cache.stats().bytes).toBeLessThanOrEqual(300);
    expect((await cache.get("new", DASHBOARD, engine.load)).status).toBe("HIT");
    expect((await cache.get("old", DASHBOARD, engine.load)).status).toBe("MISS");
  });

  it("serves a rendition that would take its entry past the byte bound without keeping it", async () => {
    const engine = loader(100);
    const rendition = upper(10);
    makeCache({ maxBytes: 500 });
    await cache.get("k", DASHBOARD, engine.load);
    const bytes = cache.stats().bytes;
    const first = await cache.get("k", DASHBOARD, engine.load, rendition);
    const second = await cache.get("k", DASHBOARD, engine.load, rendition);

    expect(first.payload.body).toHaveLength(1000);
    expect(second).toMatchObject({ status: "HIT", etag: first.etag });
    expect(rendition.renders).toBe(2);
    expect(cache.stats()).toMatchObject({ entries: 1, bytes });
    expect(engine.counts.calls).toBe(1);
  });

  it("keeps warming an entry once a rendition is kept, and renders the new value afresh", async () => {
    const engine = loader();
    const rendition = upper();
    makeCache();
    await cache.get("k", DASHBOARD, engine.load);
    const valueBytes = cache.stats().bytes;
    const before = await cache.get("k", DASHBOARD, engine.load, rendition);
    const renderedBytes = cache.stats().bytes;

    await vi.advanceTimersByTimeAsync(300 * SECOND);
    expect(engine.counts.calls).toBe(2);
    // the refreshed value replaced the entry, its rendition with it
    expect(cache.stats().bytes).toBe(valueBytes);
    const after = await cache.get("k", DASHBOARD, engine.load, rendition);
    expect(after).toMatchObject({ status: "HIT", ageSeconds: 0 });
    expect(after.payload.body).toBe('{"CALL":2}'.padEnd(100));
    expect(after.etag).not.toBe(before.etag);
    expect(rendition.renders).toBe(2);
    expect(cache.stats().bytes).toBe(renderedBytes);

    await vi.advanceTimersByTimeAsync(300 * SECOND);
    expect(engine.counts.calls).toBe(3);
  });
});
