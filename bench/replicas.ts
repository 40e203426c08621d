// Replicas sharing one cache through Redis (issue 9), against replicas that do not, on the embedded
// engine over demo data and a redis-server of its own (Debian's package) on a free loopback port:
// (a) cached-hit throughput: a bare Fastify route replaying the same answer, the service without
//     Redis, with Redis, and with Redis spread over 3 replicas, measured in turns in this run;
// (b) engine queries for 200 concurrent identical cold requests spread over the replicas;
// (c) a simulated hour of 100 dashboards polling 10 keys every 10 s, round-robin over the replicas,
//     on a fake clock: misses after warm-up and engine queries per key, all replicas together.
// All replicas run in this one process (one event loop): (a) compares costs per request, not scaling.
// Run: node bench/replicas.ts (about 3 minutes). Prints markdown for docs/benchmarks.md.
import { cpus, loadavg, totalmem } from "node:os";
import { mock } from "node:test";
import autocannon from "autocannon";
import Fastify, { type FastifyInstance } from "fastify";
import { serviceApp } from "../src/app.ts";
import { loadData } from "../src/engines/duckdb/data.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import type { QueryEngine } from "../src/engines/engine.ts";
import { RedisLink } from "../src/redis/link.ts";
import { configFrom } from "../test/support/config-from.ts";
import { redisOnFreePort } from "../test/support/redis-process.ts";

const API_KEY = "bench-replica-key-0123456789";
const HEADERS = { "x-api-key": API_KEY };
const HIT_PATH = "/api/endpoints/functions.invocation-stats?project=default&interval=1day";
const ROUNDS = 3;
const ROUND_SECONDS = 2;
const CONNECTIONS = 21;
const POLL_SECONDS = 10;
const DASHBOARDS = 100;
const KEYS = ["default", "staging"].flatMap((ref) => [
  ...["minutely", "hourly", "daily"].map(
    (interval) =>
      `/api/endpoints/usage.api-counts?project=${encodeURIComponent(`^https://${ref}\\.`)}&interval=${interval}`,
  ),
  ...["1hr", "7day"].map(
    (interval) => `/api/endpoints/functions.invocation-stats?project=${ref}&interval=${interval}`,
  ),
]);

const redisServer = await redisOnFreePort();
await redisServer.start();
const engine = await createDuckDbEngine();
await loadData(engine, { demoData: true });

/** Engine queries per endpoint and parameter set, over every replica of a group. */
class QueryTally {
  readonly byKey = new Map<string, number>();
  running = 0;

  wrap(inner: QueryEngine): QueryEngine {
    return {
      dialect: inner.dialect,
      run: async (request) => {
        const key = request.endpoint + JSON.stringify(request.params);
        this.byKey.set(key, (this.byKey.get(key) ?? 0) + 1);
        this.running++;
        try {
          return await inner.run(request);
        } finally {
          this.running--;
        }
      },
      ping: () => inner.ping(),
      close: async () => {},
    };
  }

  total(): number {
    return [...this.byKey.values()].reduce((sum, n) => sum + n, 0);
  }
}

interface Group {
  apps: FastifyInstance[];
  tally: QueryTally;
  /** Times a replica found Redis down or late (REDIS_TIMEOUT_MS) and worked alone for a while. */
  redisDown: { count: number };
  close(): Promise<void>;
}

let namespaces = 0;
/** `count` replicas, sharing one Redis namespace when `shared`, each with its own cache. */
async function group(
  count: number,
  shared: boolean,
  now?: () => number,
  redisTimeoutMs?: number,
): Promise<Group> {
  const tally = new QueryTally();
  const redisDown = { count: 0 };
  const logger = { info: () => {}, warn: () => redisDown.count++ };
  const prefix = `bench-${++namespaces}:`;
  const links: RedisLink[] = [];
  const apps: FastifyInstance[] = [];
  for (let i = 0; i < count; i++) {
    const link = shared
      ? new RedisLink({ url: redisServer.url, prefix, logger, timeoutMs: redisTimeoutMs })
      : undefined;
    if (link && !(await link.waitUntilUp(5_000))) throw new Error("Redis did not answer");
    if (link) links.push(link);
    apps.push(
      await serviceApp(
        configFrom({
          auth: { apiKeys: [API_KEY] },
          cache: { maxEntries: 1_000, maxBytes: 64 * 1024 * 1024 },
          // In the path (a hit pays for it, in Redis when shared), never refusing.
          rateLimitPerMinute: Number.MAX_SAFE_INTEGER,
        }),
        { engine: tally.wrap(engine), cache: { now }, redis: link },
      ),
    );
  }
  return {
    apps,
    tally,
    redisDown,
    close: async () => {
      await Promise.all(apps.map((app) => app.close()));
      await Promise.all(links.map((link) => link.close()));
    },
  };
}

/** req/s of `urls` loaded together, `CONNECTIONS` split between them. */
async function loadTogether(urls: string[]): Promise<number> {
  const results = await Promise.all(
    urls.map((url) =>
      autocannon({
        url,
        headers: HEADERS,
        connections: Math.round(CONNECTIONS / urls.length),
        duration: ROUND_SECONDS,
        workers: 1,
      }),
    ),
  );
  if (results.some((result) => result.non2xx > 0)) throw new Error("non-2xx answers under load");
  return results.reduce((sum, result) => sum + result.requests.total / result.duration, 0);
}

/** (a) Each setup's req/s, rounds taking turns so that the machine's drift hits all alike. */
async function hitThroughput() {
  const setups: Array<{ name: string; group?: Group; urls: string[] }> = [];
  const bare = Fastify({ logger: false });
  const cold = await group(1, false);
  const answer = await cold.apps[0]?.inject({ url: HIT_PATH, headers: HEADERS });
  const replayed = Object.fromEntries(
    Object.entries(answer?.headers ?? {}).filter(
      ([name]) => !["date", "connection", "keep-alive", "content-length"].includes(name),
    ),
  );
  bare.get(HIT_PATH.split("?")[0] as string, (_request, reply) => {
    reply.headers(replayed).send(answer?.body);
  });
  setups.push({ name: "bare Fastify route, same bytes and headers", urls: [await url(bare)] });
  setups.push({ name: "1 replica, no Redis", group: cold, urls: [await url(cold.apps[0])] });
  for (const count of [1, 3]) {
    const shared = await group(count, true);
    for (const app of shared.apps) await app.inject({ url: HIT_PATH, headers: HEADERS });
    const urls = await Promise.all(shared.apps.map(url));
    setups.push({ name: `${count} replica${count > 1 ? "s" : ""}, Redis`, group: shared, urls });
  }
  for (const setup of setups) await loadTogether(setup.urls);
  const perRound = setups.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, setup] of setups.entries()) perRound[i]?.push(await loadTogether(setup.urls));
  }
  const rows = setups.map((setup, i) => {
    const rates = perRound[i] ?? [];
    return {
      name: setup.name,
      reqPerSec: rates.reduce((sum, r) => sum + r, 0) / rates.length,
      spread: [Math.min(...rates), Math.max(...rates)],
      engineQueries: setup.group?.tally.total() ?? 0,
    };
  });
  await bare.close();
  for (const setup of setups) await setup.group?.close();
  return rows;
}

async function url(app: FastifyInstance | undefined): Promise<string> {
  const base = await (app as FastifyInstance).listen({ host: "127.0.0.1", port: 0 });
  return `${base}${HIT_PATH}`;
}

/** (b) 200 identical requests arriving together on cold replicas, round-robin. */
async function coldStampede(count: number, shared: boolean): Promise<number> {
  const replicas = await group(count, shared);
  try {
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        replicas.apps[i % count]?.inject({ url: HIT_PATH, headers: HEADERS }),
      ),
    );
    if (answers.some((answer) => answer?.statusCode !== 200)) throw new Error("non-200 answer");
    return replicas.tally.total();
  } finally {
    await replicas.close();
  }
}

/**
 * (c) An hour on a fake clock: the caches read it, and their warming timers (setTimeout, mocked by
 * node:test: Node prints a warning) tick with it; Redis and its timeouts keep real time. Dashboard d
 * polls every key at d·100 ms into each 10 s, the requests going round-robin over the replicas.
 */
async function simulatedHour(count: number, shared: boolean, redisTimeoutMs?: number) {
  const clock = { ms: Date.now() };
  mock.timers.enable({ apis: ["setTimeout"] });
  const replicas = await group(count, shared, () => clock.ms, redisTimeoutMs);
  const statuses: Record<string, number> = { HIT: 0, MISS: 0, STALE: 0 };
  let next = 0;
  const stepMs = (POLL_SECONDS * 1000) / DASHBOARDS;
  try {
    for (let at = 0; at < 3600 * 1000; at += stepMs) {
      if (at > 0) {
        clock.ms += stepMs;
        mock.timers.tick(stepMs);
      }
      // Lets refreshes and Redis's replies in, as a server's event loop would between requests.
      do await new Promise((resolve) => setImmediate(resolve));
      while (replicas.tally.running > 0);
      const answers = await Promise.all(
        KEYS.map((path) => replicas.apps[next++ % count]?.inject({ url: path, headers: HEADERS })),
      );
      for (const answer of answers) {
        if (answer?.statusCode !== 200) throw new Error(`${answer?.statusCode} ${answer?.body}`);
        const status = String(answer.headers["x-cache"]);
        if (at >= POLL_SECONDS * 1000) statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }
  } finally {
    // Real timers first: clearing many mocked ones trips node:test's timer queue (Node 24.21).
    mock.timers.reset();
    await replicas.close();
  }
  const perKey = [...replicas.tally.byKey.values()];
  return {
    statuses,
    min: Math.min(...perKey),
    max: Math.max(...perKey),
    redisDown: replicas.redisDown.count,
  };
}

const row = (cells: Array<string | number>) => `| ${cells.join(" | ")} |`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

/** Progress on stderr: the report comes at the end, on stdout. */
function step<T>(name: string, result: T): T {
  process.stderr.write(`${name}: ${JSON.stringify(result)}\n`);
  return result;
}

async function measureAll() {
  const throughput = step("(a)", await hitThroughput());
  const stampedes = step("(b)", [
    { name: "1 replica, Redis", queries: await coldStampede(1, true) },
    { name: "3 replicas, Redis", queries: await coldStampede(3, true) },
    { name: "3 replicas, no Redis", queries: await coldStampede(3, false) },
  ]);
  const hours = [
    step("(c)", { name: "1 replica, Redis", ...(await simulatedHour(1, true)) }),
    step("(c)", { name: "3 replicas, Redis", ...(await simulatedHour(3, true)) }),
    // The same with Redis never found late: what sharing alone gives, whatever this machine's load.
    step("(c)", {
      name: "3 replicas, Redis, 1 s timeout",
      ...(await simulatedHour(3, true, 1_000)),
    }),
    step("(c)", { name: "3 replicas, no Redis", ...(await simulatedHour(3, false)) }),
  ];
  return { throughput, stampedes, hours };
}

const loadBefore = load();
let measured: Awaited<ReturnType<typeof measureAll>>;
try {
  measured = await measureAll();
} finally {
  await engine.close();
  await redisServer.kill();
}
const { throughput, stampedes, hours } = measured;
const bare = throughput[0]?.reqPerSec ?? 1;
console.log(
  [
    `Machine: ${cpus()[0]?.model.trim()} × ${cpus().length}, ${(totalmem() / 1024 ** 3).toFixed(1)} GiB, Node ${process.version}; load average before ${loadBefore}, after ${load()}`,
    "",
    `(a) GET ${HIT_PATH}, loopback, ${CONNECTIONS} connections in all, ${ROUNDS} rounds of ${ROUND_SECONDS} s per setup, taking turns`,
    "",
    row(["setup", "req/s", "per round", "÷ bare route", "engine queries"]),
    row(["---", "---:", "---:", "---:", "---:"]),
    ...throughput.map((t) =>
      row([
        t.name,
        t.reqPerSec.toFixed(0),
        `${t.spread[0]?.toFixed(0)}–${t.spread[1]?.toFixed(0)}`,
        (t.reqPerSec / bare).toFixed(2),
        t.engineQueries,
      ]),
    ),
    "",
    row(["(b) 200 concurrent identical cold requests, round-robin", "engine queries"]),
    row(["---", "---:"]),
    ...stampedes.map((s) => row([s.name, s.queries])),
    "",
    row([
      `(c) 1 h: ${DASHBOARDS} dashboards × ${KEYS.length} keys every ${POLL_SECONDS} s, round-robin`,
      "MISS after warm-up",
      "STALE",
      "HIT",
      "engine queries per key",
      "Redis found down or late",
    ]),
    row(["---", "---:", "---:", "---:", "---:", "---:"]),
    ...hours.map((h) =>
      row([
        h.name,
        h.statuses.MISS ?? 0,
        h.statuses.STALE ?? 0,
        h.statuses.HIT ?? 0,
        h.min === h.max ? h.max : `${h.min}–${h.max}`,
        h.redisDown,
      ]),
    ),
  ].join("\n"),
);
