// Single flight against a real engine: DuckDB answers asynchronously from native threads, so the
// concurrent requests below really overlap one running query (a counter that resolves at once would not
// show whether they share it). The counter wraps the engine call, as an engine decorator would.
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import type { Payload } from "../../src/cache/payload.ts";
import { type CachePolicy, ResultCache } from "../../src/cache/result-cache.ts";

const DASHBOARD: CachePolicy = { ttlSeconds: 900, warmingSeconds: 300 };

let instance: DuckDBInstance;
let connection: DuckDBConnection;
let cache: ResultCache;

beforeAll(async () => {
  instance = await DuckDBInstance.create(":memory:");
  connection = await instance.connect();
});

// A fresh cache per test: close() is final, and a closed cache would store nothing.
beforeEach(() => {
  cache = new ResultCache({ maxEntries: 100, maxBytes: 1_000_000 });
});
afterEach(() => cache.close());

afterAll(() => {
  connection.closeSync();
  instance.closeSync();
});

function countedQuery(sql: string) {
  const counted = {
    calls: 0,
    load: async (): Promise<Payload> => {
      counted.calls++;
      const reader = await connection.runAndReadAll(sql);
      return { body: JSON.stringify({ result: reader.getRowObjectsJson() }), headers: {} };
    },
  };
  return counted;
}

it("answers 50 concurrent misses for one key with one engine query", async () => {
  const engine = countedQuery("SELECT 42 AS answer");
  const answers = await Promise.all(
    Array.from({ length: 50 }, () => cache.get("k", DASHBOARD, engine.load)),
  );
  expect(engine.calls).toBe(1);
  for (const answer of answers) {
    expect(answer.status).toBe("MISS");
    expect(answer.payload.body).toBe('{"result":[{"answer":42}]}');
    expect(answer.etag).toBe(answers[0]?.etag);
  }
  expect((await cache.get("k", DASHBOARD, engine.load)).status).toBe("HIT");
  expect(engine.calls).toBe(1);
});

it("gives every concurrent waiter the engine's error, stores nothing, and queries again next time", async () => {
  const engine = countedQuery("SELECT * FROM no_such_table");
  const outcomes = await Promise.allSettled(
    Array.from({ length: 20 }, () => cache.get("k", DASHBOARD, engine.load)),
  );
  expect(engine.calls).toBe(1);
  for (const outcome of outcomes) {
    expect(outcome.status).toBe("rejected");
    expect(String((outcome as PromiseRejectedResult).reason)).toContain("no_such_table");
  }
  expect(cache.stats().entries).toBe(0);

  await expect(cache.get("k", DASHBOARD, engine.load)).rejects.toThrow("no_such_table");
  expect(engine.calls).toBe(2);
});

it("runs one query per key, not one for all keys", async () => {
  const engine = countedQuery("SELECT 1 AS one");
  await Promise.all(["a", "b", "a", "b", "c"].map((key) => cache.get(key, DASHBOARD, engine.load)));
  expect(engine.calls).toBe(3);
});

/** A load that answers when released, or fails as the engine would when its signal aborts. */
function heldLoad() {
  const held = {
    signal: undefined as AbortSignal | undefined,
    release: () => {},
    load: (signal?: AbortSignal) =>
      new Promise<Payload>((resolve, reject) => {
        held.signal = signal;
        held.release = () => resolve({ body: '{"result":[]}', headers: {} });
        signal?.addEventListener("abort", () => reject(new Error("interrupted")));
      }),
  };
  return held;
}

it("answers a waiter that left at once, and stops the load only when every waiter has left", async () => {
  const engine = heldLoad();
  const [first, second] = [new AbortController(), new AbortController()];
  const answers = [first, second].map((left) =>
    cache.get("k", DASHBOARD, engine.load, undefined, undefined, left.signal),
  );
  first.abort(new Error("first left"));
  await expect(answers[0]).rejects.toThrow("first left");
  expect(engine.signal?.aborted).toBe(false);
  second.abort(new Error("second left"));
  await expect(answers[1]).rejects.toThrow("second left");
  expect(engine.signal?.aborted).toBe(true);
  expect(cache.stats().entries).toBe(0);
});

it("lets a load run to its end while a waiter that cannot leave (a watch's, a refresh) waits for it", async () => {
  const engine = heldLoad();
  const left = new AbortController();
  const leaving = cache.get("k", DASHBOARD, engine.load, undefined, undefined, left.signal);
  const staying = cache.get("k", DASHBOARD, engine.load);
  left.abort(new Error("left"));
  await expect(leaving).rejects.toThrow("left");
  expect(engine.signal?.aborted).toBe(false);
  engine.release();
  expect((await staying).status).toBe("MISS");
  expect(cache.stats().entries).toBe(1);
});
