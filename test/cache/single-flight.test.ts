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
