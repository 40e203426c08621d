// Tenants' load on one engine, over real HTTP on DuckDB with demo data: credentials hammering at
// their rate limit fill the engine's queue, and another caller asking every 500 ms is still
// answered every time, a watch still gets its value and the cache's warming keeps refreshing.
// Requests whose clients left take their queries out of line. The flood's queries are made slow
// (DuckDB answers the costliest patterns from its derived tables in milliseconds): each waits
// a second before it runs, and stops waiting when the gate stops it, as DuckDB's interrupt would.
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { catalogOf } from "../../src/endpoints/catalog.ts";
import { loadData } from "../../src/engines/duckdb/data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { catalog } from "../support/catalog.ts";
import { configFrom } from "../support/config-from.ts";
import { closers, open } from "../support/follow-client.ts";

const OPERATOR_KEY = "operator-key-0123456789abcdef";
const CALLER_KEY = "caller-key-0123456789abcdef";
const FLOOD_KEYS = Array.from({ length: 8 }, (_, i) => `flood-key-${i}-0123456789abcdef`);
// Twenty requests a second per credential: two of them fill the queue in a few seconds.
const RATE_LIMIT_PER_MINUTE = 1200;

// Warmed every second, so that a flood's length holds several of its refreshes.
const quickWarming = catalogOf(
  catalog.map((endpoint) =>
    endpoint.name === "functions.invocation-stats"
      ? { ...endpoint, cache: { ttlSeconds: 900, warmingSeconds: 1 } }
      : endpoint,
  ),
);

const FLOOD_QUERY_MS = 1000;

/** DuckDB, whose usage.api-counts queries wait FLOOD_QUERY_MS first (until stopped). */
function slowFlood(duck: DuckDbEngine): QueryEngine {
  return {
    dialect: duck.dialect,
    ping: () => duck.ping(),
    close: async () => {},
    async run(request) {
      if (request.endpoint === "usage.api-counts") {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, FLOOD_QUERY_MS);
          request.signal?.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(request.signal?.reason);
          });
        });
      }
      return duck.run(request);
    },
  };
}

/** The service's log lines, parsed. */
const logged: { level: number; msg: string }[] = [];

let duck: DuckDbEngine;
let app: FastifyInstance;
let base: string;
beforeAll(async () => {
  duck = await createDuckDbEngine();
  await loadData(duck, { demoData: true });
  // Two slots and the default queue of 100: each credential's default share is 51 of the 102.
  const config = configFrom({
    auth: { apiKeys: [OPERATOR_KEY, CALLER_KEY, ...FLOOD_KEYS] },
    rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
    cache: { maxEntries: 10_000, maxBytes: 1e8 },
    admission: { maxConcurrency: 2, maxQueue: 100, timeoutMs: 60_000 },
  });
  const logger = pino(
    { level: "info" },
    { write: (line: string) => logged.push(JSON.parse(line)) },
  );
  app = await serviceApp(config, {
    engine: slowFlood(duck),
    cache: {},
    catalog: quickWarming,
    logger,
  });
  base = await app.listen({ host: "127.0.0.1", port: 0 });
}, 60_000);
afterAll(async () => {
  await app?.close();
  await duck?.close();
});

/** A metric's value on /metrics (the operator's key); 0 when absent. */
async function metric(series: string): Promise<number> {
  const response = await app.inject({
    url: "/metrics",
    headers: { "x-api-key": OPERATOR_KEY },
  });
  const line = response.body.split("\n").find((text) => text.startsWith(`${series} `));
  return Number(line?.slice(series.length + 1) ?? 0);
}

// A cache key no request asked before: each request of the flood is a query.
let floodQueries = 0;

/**
 * `keys` asking at their rate limit, each request a costly query no other asked; stop() leaves
 * every request still waiting, as a client that gives up does. Counts the answers by status.
 */
function hammer(keys: string[]) {
  const statuses = new Map<number, number>();
  const leaving = new AbortController();
  const ask = async (key: string) => {
    const query = new URLSearchParams({ project: `^flood-${floodQueries++}$`, interval: "daily" });
    try {
      const response = await fetch(`${base}/api/endpoints/usage.api-counts?${query}`, {
        headers: { "x-api-key": key },
        signal: leaving.signal,
      });
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    } catch {
      // Left by stop().
    }
  };
  const timers = keys.map((key) =>
    setInterval(() => void ask(key), 60_000 / RATE_LIMIT_PER_MINUTE),
  );
  const stop = () => {
    for (const timer of timers) clearInterval(timer);
    leaving.abort();
  };
  closers.push(stop);
  return { statuses, stop };
}

/** The caller's light query every 500 ms while `seconds` pass: 200, or a refusal's status and body. */
async function askEvery500Ms(seconds: number): Promise<(200 | string)[]> {
  const answers: Promise<200 | string>[] = [];
  for (let i = 0; i < seconds * 2; i++) {
    // A new end each time: logs.all is never cached, so each is a query of its own.
    const end = new Date(Date.now() - i * 1000).toISOString();
    answers.push(
      fetch(
        `${base}/api/endpoints/logs.all?project=default&project_tier=PRO&iso_timestamp_end=${end}`,
        {
          headers: { "x-api-key": CALLER_KEY },
        },
      ).then(async (response) => {
        const body = await response.text();
        // A refusal shows its code, so that a failure says which rule refused it.
        return response.status === 200 ? 200 : `${response.status} ${body}`;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return Promise.all(answers);
}

/** Until the callers' places are all taken: the flood is real. */
const queueFull = () =>
  expect
    .poll(() => metric("query_service_engine_queued"), { timeout: 30_000 })
    .toBeGreaterThanOrEqual(100);

describe("admission under tenants' load", () => {
  it.each([2, 8])(
    "%i credentials at their rate limit never shut another caller, a watch or warming out",
    async (flooders) => {
      const flood = hammer(FLOOD_KEYS.slice(0, flooders));
      await queueFull();
      // A value nobody held yet: the watch's first answer waits for the engine too.
      const watched = `project=default&interval=${flooders === 2 ? "15min" : "5min"}`;
      const watch = await open(
        `${base}/api/endpoints/functions.invocation-stats/watch?${watched}`,
        {
          "x-api-key": CALLER_KEY,
        },
      );
      closers.push(() => watch.close());
      const refreshes = await metric("query_service_cache_refreshes_total");
      const statuses = await askEvery500Ms(8);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      await watch.until(() => watch.events.some((event) => event.event === "result"));
      // The watched key was warmed through the flood, and no refresh failed.
      expect(await metric("query_service_cache_refreshes_total")).toBeGreaterThan(refreshes + 2);
      expect(await metric("query_service_cache_refresh_failures_total")).toBe(0);
      flood.stop();
      // The flood was real: its queries ran, and places were refused to those holding the most.
      expect(flood.statuses.get(200)).toBeGreaterThan(0);
      expect(
        await metric('query_service_engine_refused_total{reason="overloaded"}'),
      ).toBeGreaterThan(0);
    },
    120_000,
  );

  it("takes the queries of requests whose clients left out of line, unrun", async () => {
    await expect.poll(() => metric("query_service_engine_running"), { timeout: 60_000 }).toBe(0);
    const series =
      'query_service_engine_queries_total{endpoint="usage.api-counts",trigger="request"}';
    const before = await metric(series);
    const flood = hammer(FLOOD_KEYS.slice(0, 2));
    await queueFull();
    flood.stop();
    // Those running are stopped, those waiting leave the line and never start.
    await expect.poll(() => metric("query_service_engine_queued")).toBe(0);
    await expect.poll(() => metric("query_service_engine_running"), { timeout: 30_000 }).toBe(0);
    const answered = flood.statuses.get(200) ?? 0;
    // At most the two that ran when the clients left, beside those answered.
    expect((await metric(series)) - before).toBeLessThanOrEqual(answered + 2);
    // A client that left is no error of the service's.
    expect(logged.filter((line) => line.level >= 50)).toEqual([]);
  }, 120_000);
});
