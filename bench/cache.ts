// The result cache's three figures (issue item 7), on the embedded DuckDB engine over demo data:
// (a) throughput of a cached hit against a bare Fastify route sending the same bytes and headers, both
//     measured in this run; (b) engine queries for 200 concurrent identical cold requests; (c) a
//     simulated hour of 100 dashboards polling 10 keys every 10 s on a fake clock.
// Run: node bench/cache.ts (loopback only, about 90 s). Prints markdown for docs/benchmarks.md.
import { cpus, platform, totalmem } from "node:os";
import { mock } from "node:test";
import autocannon from "autocannon";
import Fastify, { type FastifyInstance } from "fastify";
import { serviceApp } from "../src/app.ts";
import type { ResultCacheOptions } from "../src/cache/result-cache.ts";
import { DEMO_SIZE, generateLogs } from "../src/engines/duckdb/demo-data.ts";
import { createTableSql } from "../src/engines/duckdb/tables.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../src/engines/duckdb.ts";
import type { QueryEngine } from "../src/engines/engine.ts";
import { createLogger } from "../src/logger.ts";
import { sourceTables } from "../src/schema.ts";
import { dateToMicros } from "../src/time.ts";
import { configFrom } from "../test/support/config-from.ts";

const API_KEY = "bench-key-0123456789abcdef";
const AUTH = { "x-api-key": API_KEY };
const CACHE: ResultCacheOptions = { maxEntries: 1000, maxBytes: 64 * 1024 * 1024 };
// The rate limiter stays in the path (it is part of a hit's cost) but never refuses: 10⁹ a minute.
const RATE_LIMIT = 1_000_000_000;
/** The dashboard key of (a) and (b): a day of hourly buckets. */
const KEY_PATH = "/api/endpoints/functions.invocation-stats?project=default&interval=1day";
// Rounds alternate between the two routes, so drift in the machine's load hits both alike.
const LOAD = { connections: 20, rounds: 5, roundSeconds: 2 };
const STAMPEDE = 200;
const ONE_OFF_KEYS = 10_000;
const HOUR = { dashboards: 100, pollSeconds: 10, seconds: 3600 };
// Ten keys a dashboard polls: usage by area at three intervals and invocation stats at two, per project.
const DASHBOARD_KEYS = ["default", "staging"].flatMap((ref) => [
  ...["minutely", "hourly", "daily"].map(
    (interval) =>
      `/api/endpoints/usage.api-counts?project=${encodeURIComponent(`^https://${ref}\\.`)}&interval=${interval}`,
  ),
  ...["1hr", "7day"].map(
    (interval) => `/api/endpoints/functions.invocation-stats?project=${ref}&interval=${interval}`,
  ),
]);

/** An engine that counts the queries reaching it, per endpoint and parameters, and knows when it is idle. */
function countQueries(engine: QueryEngine) {
  const perKey = new Map<string, number>();
  let running = 0;
  const counted: QueryEngine = {
    dialect: engine.dialect,
    run: async (request) => {
      const key = `${request.endpoint} ${JSON.stringify(request.params)}`;
      perKey.set(key, (perKey.get(key) ?? 0) + 1);
      running++;
      try {
        return await engine.run(request);
      } finally {
        running--;
      }
    },
    ping: () => engine.ping(),
    close: () => engine.close(),
  };
  return {
    engine: counted,
    perKey,
    total: () => [...perKey.values()].reduce((sum, n) => sum + n, 0),
    /** Resolves once no query has run for a whole event-loop turn (queued refreshes start in between). */
    idle: async () => {
      do await new Promise((resolve) => setImmediate(resolve));
      while (running > 0);
    },
  };
}

async function demoEngine(): Promise<DuckDbEngine> {
  const engine = await createDuckDbEngine();
  const connection = await engine.connect();
  try {
    for (const table of sourceTables()) await connection.run(createTableSql(table));
    await generateLogs(connection, { now: dateToMicros(new Date()), ...DEMO_SIZE });
  } finally {
    connection.closeSync();
  }
  return engine;
}

/** The service; its request log lines written as in production (to /dev/null), unless `quiet`. */
function serviceOn(engine: QueryEngine, cache: ResultCacheOptions = CACHE, quiet = false) {
  const { now, ...bounds } = cache;
  return serviceApp(
    configFrom({ auth: { apiKeys: [API_KEY] }, cache: bounds, rateLimitPerMinute: RATE_LIMIT }),
    {
      engine,
      cache: { now },
      ...(!quiet && { logger: createLogger({ logLevel: "info", logFormat: "json" }, "/dev/null") }),
    },
  );
}

async function listen(app: FastifyInstance): Promise<string> {
  return app.listen({ host: "127.0.0.1", port: 0 });
}

async function load(url: string): Promise<autocannon.Result> {
  return autocannon({
    url,
    headers: AUTH,
    connections: LOAD.connections,
    duration: LOAD.roundSeconds,
    // The load generator gets its own thread, so it does not share the servers' event loop.
    workers: 1,
  });
}

interface Measured {
  reqPerSec: number;
  /** Slowest and fastest round, req/s: the noise of this machine. */
  rounds: [number, number];
  /** Worst round's 99th percentile latency, ms. */
  p99: number;
  non2xx: number;
}

/** One unmeasured round per URL, then `LOAD.rounds` measured rounds of each, taking turns. */
async function measure(urls: string[]): Promise<Measured[]> {
  for (const url of urls) await load(url);
  const results = urls.map(() => [] as autocannon.Result[]);
  for (let round = 0; round < LOAD.rounds; round++) {
    for (const [i, url] of urls.entries()) results[i]?.push(await load(url));
  }
  return results.map((rounds) => {
    const perRound = rounds.map((r) => r.requests.total / r.duration);
    const sum = (pick: (r: autocannon.Result) => number) =>
      rounds.reduce((total, r) => total + pick(r), 0);
    return {
      reqPerSec: sum((r) => r.requests.total) / sum((r) => r.duration),
      rounds: [Math.min(...perRound), Math.max(...perRound)],
      p99: Math.max(...rounds.map((r) => r.latency.p99)),
      non2xx: sum((r) => r.non2xx),
    };
  });
}

interface Throughput {
  bodyBytes: number;
  cached: Measured;
  /** The same service without its request log line. */
  unlogged: Measured;
  bare: Measured;
  engineQueries: number;
}

/** (a) A warmed key through the whole app against a bare route replaying the same response. */
async function throughput(engine: QueryEngine): Promise<Throughput> {
  const counted = countQueries(engine);
  const app = await serviceOn(counted.engine);
  const quietCounted = countQueries(engine);
  const quiet = await serviceOn(quietCounted.engine, CACHE, true);
  const bare = Fastify({ logger: false });
  try {
    const cachedUrl = `${await listen(app)}${KEY_PATH}`;
    const unloggedUrl = `${await listen(quiet)}${KEY_PATH}`;
    await (await fetch(unloggedUrl, { headers: AUTH })).text();
    const warm = await fetch(cachedUrl, { headers: AUTH });
    const body = await warm.text();
    if (warm.headers.get("x-cache") !== "MISS")
      throw new Error("the warming request was not a MISS");
    const headers = Object.fromEntries(
      [...warm.headers].filter(
        ([name]) => !["date", "connection", "keep-alive", "content-length"].includes(name),
      ),
    );
    bare.get(KEY_PATH.split("?")[0] as string, (_request, reply) => {
      reply.headers(headers).send(body);
    });
    const bareUrl = `${await listen(bare)}${KEY_PATH}`;

    const [cached, unlogged, bareResult] = (await measure([cachedUrl, unloggedUrl, bareUrl])) as [
      Measured,
      Measured,
      Measured,
    ];
    return {
      bodyBytes: Buffer.byteLength(body),
      cached,
      unlogged,
      bare: bareResult,
      // Each service has its own cache: the most either made.
      engineQueries: Math.max(counted.total(), quietCounted.total()),
    };
  } finally {
    await Promise.all([app.close(), quiet.close(), bare.close()]);
  }
}

/** (b) Identical requests arriving together on a cold cache. */
async function coldStampede(
  engine: QueryEngine,
): Promise<{ engineQueries: number; allEqual: boolean }> {
  const counted = countQueries(engine);
  const app = await serviceOn(counted.engine);
  try {
    const answers = await Promise.all(
      Array.from({ length: STAMPEDE }, () => app.inject({ url: KEY_PATH, headers: AUTH })),
    );
    const allEqual = answers.every(
      (answer) => answer.statusCode === 200 && answer.body === answers[0]?.body,
    );
    return { engineQueries: counted.total(), allEqual };
  } finally {
    await app.close();
  }
}

interface Hour {
  requests: number;
  warmupMisses: number;
  counts: Record<string, number>;
  queriesPerKey: { min: number; max: number };
}

/**
 * (c) An hour on a fake clock: the cache reads `now` from the simulation and its warming timers are
 * setTimeouts mocked by node:test (experimental: Node prints a warning) and ticked with it. Dashboard d polls all keys at d·100 ms into every 10 s period.
 * The engine takes no simulated time: after each tick, refreshes run to completion before the next
 * poll, so STALE counts only refreshes that failed or waited, not the simulation outrunning DuckDB.
 */
async function simulatedHour(engine: QueryEngine): Promise<Hour> {
  const stepMs = (HOUR.pollSeconds * 1000) / HOUR.dashboards;
  const clock = { ms: 0 };
  mock.timers.enable({ apis: ["setTimeout"] });
  const counted = countQueries(engine);
  const app = await serviceOn(counted.engine, { ...CACHE, now: () => clock.ms });
  const counts: Record<string, number> = { HIT: 0, MISS: 0, STALE: 0 };
  let warmupMisses = 0;
  let requests = 0;
  try {
    for (let at = 0; at < HOUR.seconds * 1000; at += stepMs) {
      clock.ms = at;
      if (at > 0) mock.timers.tick(stepMs);
      await counted.idle();
      const answers = await Promise.all(
        DASHBOARD_KEYS.map((url) => app.inject({ url, headers: AUTH })),
      );
      for (const answer of answers) {
        if (answer.statusCode !== 200) throw new Error(`${answer.statusCode} ${answer.body}`);
        const status = String(answer.headers["x-cache"]);
        requests++;
        if (at < HOUR.pollSeconds * 1000) warmupMisses += status === "MISS" ? 1 : 0;
        else counts[status] = (counts[status] ?? 0) + 1;
      }
    }
  } finally {
    await app.close();
    mock.timers.reset();
  }
  const perKey = [...counted.perKey.values()];
  return {
    requests,
    warmupMisses,
    counts,
    queriesPerKey: { min: Math.min(...perKey), max: Math.max(...perKey) },
  };
}

/**
 * (d) A caller sends ONE_OFF_KEYS distinct parameter sets once each; the background engine queries
 * (warming) they cause over the following hour, on a fake clock.
 */
async function oneOffHour(engine: QueryEngine): Promise<number> {
  const clock = { ms: 0 };
  mock.timers.enable({ apis: ["setTimeout"] });
  const counted = countQueries(engine);
  const app = await serviceOn(counted.engine, {
    maxEntries: 2 * ONE_OFF_KEYS,
    maxBytes: 1024 ** 3,
    now: () => clock.ms,
  });
  try {
    for (let i = 0; i < ONE_OFF_KEYS; i++) {
      const pattern = encodeURIComponent(`^https://one-off-${i}\\.`);
      await app.inject({
        url: `/api/endpoints/usage.api-counts?project=${pattern}&interval=hourly`,
        headers: AUTH,
      });
    }
    const requested = [...counted.perKey.values()].reduce((sum, n) => sum + n, 0);
    for (let second = 0; second < HOUR.seconds; second += 10) {
      clock.ms = second * 1000;
      mock.timers.tick(10_000);
      await counted.idle();
    }
    return [...counted.perKey.values()].reduce((sum, n) => sum + n, 0) - requested;
  } finally {
    await app.close();
    mock.timers.reset();
  }
}

function machine(): string {
  const cores = cpus();
  const memory = (totalmem() / 1024 ** 3).toFixed(1);
  return `${cores[0]?.model.trim()} × ${cores.length}, ${memory} GiB RAM, Node ${process.version}, ${platform()}`;
}

function row(cells: (string | number)[]): string {
  return `| ${cells.join(" | ")} |`;
}

function report(
  a: Throughput,
  b: Awaited<ReturnType<typeof coldStampede>>,
  c: Hour,
  d: number,
): string {
  const ratio = a.cached.reqPerSec / a.bare.reqPerSec;
  const cells = (m: Measured) => [
    m.reqPerSec.toFixed(0),
    `${m.rounds[0].toFixed(0)}–${m.rounds[1].toFixed(0)}`,
    m.p99,
    m.non2xx,
  ];
  return [
    `Machine: ${machine()}`,
    `Data: DuckDB in memory, ${DEMO_SIZE.edgeLogs} edge_logs and ${DEMO_SIZE.functionEdgeLogs} function_edge_logs demo rows`,
    "",
    `(a) GET ${KEY_PATH} (${a.bodyBytes} B body), loopback, ${LOAD.connections} connections, ${LOAD.rounds} alternating rounds of ${LOAD.roundSeconds} s per route`,
    "",
    row(["route", "req/s", "req/s per round", "p99 ms (worst round)", "non-2xx"]),
    row(["---", "---:", "---:", "---:", "---:"]),
    row(["service, cached hit", ...cells(a.cached)]),
    row(["service, cached hit, no request log line", ...cells(a.unlogged)]),
    row(["bare Fastify route, same bytes and headers", ...cells(a.bare)]),
    "",
    row(["figure", "result", "target"]),
    row(["---", "---:", "---:"]),
    row(["(a) cached hit req/s ÷ bare route req/s", ratio.toFixed(2), "≥ 0.8 (issue 12)"]),
    row([
      "(a) the same without the request log line",
      (a.unlogged.reqPerSec / a.bare.reqPerSec).toFixed(2),
      "—",
    ]),
    row(["(a) engine queries during the load, per service", a.engineQueries, "1"]),
    row([
      `(b) engine queries for ${STAMPEDE} concurrent identical cold requests${b.allEqual ? "" : " (answers differ!)"}`,
      b.engineQueries,
      "1",
    ]),
    row([
      `(c) misses after warm-up: ${HOUR.dashboards} dashboards × ${DASHBOARD_KEYS.length} keys every ${HOUR.pollSeconds} s for 1 h (${c.requests} requests; warm-up misses ${c.warmupMisses})`,
      c.counts.MISS ?? 0,
      "0",
    ]),
    row(["(c) STALE answers after warm-up", c.counts.STALE ?? 0, "—"]),
    row([
      "(c) engine queries per key in the hour",
      c.queriesPerKey.min === c.queriesPerKey.max
        ? c.queriesPerKey.max
        : `${c.queriesPerKey.min}–${c.queriesPerKey.max}`,
      "≤ 13",
    ]),
    row([`(d) background engine queries in the hour after ${ONE_OFF_KEYS} one-off keys`, d, "0"]),
  ].join("\n");
}

const engine = await demoEngine();
try {
  const a = await throughput(engine);
  const b = await coldStampede(engine);
  const c = await simulatedHour(engine);
  const d = await oneOffHour(engine);
  console.log(report(a, b, c, d));
} finally {
  await engine.close();
}
