// Watch streams against polling (issue 30), on the embedded engine over demo data:
// (a) a simulated hour of 100 dashboards, 10 on each of 10 keys: each polling every 10 s (plain,
//     then with If-None-Match) against each holding one watch stream: requests the dashboards
//     make, engine queries per key, values seen and bytes received;
// (b) on the real clock, over loopback HTTP: the time from a forced refresh (Cache-Control:
//     no-cache) to the last of 1 000 watchers of one key receiving the new value, against one
//     watcher of that key, measured in this run.
// Service and clients share this one process (one event loop). Run: node bench/watch.ts (about
// 20 s). Prints markdown for docs/benchmarks.md; progress goes to stderr.
import { type ClientRequest, get as httpGet } from "node:http";
import { cpus, loadavg, platform, totalmem } from "node:os";
import { mock } from "node:test";
import type { FastifyInstance } from "fastify";
import { serviceApp } from "../src/app.ts";
import { loadData } from "../src/engines/duckdb/data.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import type { QueryEngine } from "../src/engines/engine.ts";
import { dateToMicros } from "../src/time.ts";
import { configFrom } from "../test/support/config-from.ts";

const API_KEY = "bench-watch-key-0123456789abcdef";
const AUTH = { "x-api-key": API_KEY };
const HOUR_MS = 3600 * 1000;
const POLL_MS = 10_000;
const DASHBOARDS = 100;
/** Ten keys: invocation stats at every interval, for both demo projects. */
const KEYS = ["default", "staging"].flatMap((project) =>
  ["5min", "15min", "1hr", "1day", "7day"].map(
    (interval) => `functions.invocation-stats?project=${project}&interval=${interval}`,
  ),
);
/** The key of (b): an hour of minute buckets (about 13 kB of JSON). */
const FAN_OUT_KEY = "functions.invocation-stats?project=default&interval=1hr";
const WATCHERS = 1_000;
const ROUNDS = 20;
const OPEN_BATCH = 100;

const started = performance.now();
const loadBefore = load();

/** The engine's clock: the simulated one in (a), a pinned one moved a minute a round in (b). */
let engineNow = dateToMicros(new Date());
const duckdb = await createDuckDbEngine({ now: () => engineNow });
await loadData(duckdb, { demoData: true, now: engineNow });
const START_MICROS = engineNow;

/** Engine queries per endpoint and parameters, and how many are running. */
class QueryTally {
  readonly byKey = new Map<string, number>();
  running = 0;

  readonly engine: QueryEngine = {
    dialect: duckdb.dialect,
    run: async (request) => {
      const key = request.endpoint + JSON.stringify(request.params);
      this.byKey.set(key, (this.byKey.get(key) ?? 0) + 1);
      this.running++;
      try {
        return await duckdb.run(request);
      } finally {
        this.running--;
      }
    },
    ping: () => duckdb.ping(),
    close: async () => {},
  };

  total(): number {
    return [...this.byKey.values()].reduce((sum, n) => sum + n, 0);
  }
}

function service(tally: QueryTally, now?: () => number): Promise<FastifyInstance> {
  return serviceApp(
    configFrom({
      auth: { apiKeys: [API_KEY] },
      cache: { maxEntries: 1_000, maxBytes: 64 * 1024 * 1024 },
      // In the path, never refusing: one credential stands for every dashboard.
      rateLimitPerMinute: Number.MAX_SAFE_INTEGER,
      forcedRefreshPerMinute: 10_000,
      http: { maxConnections: 5_000 },
      streams: { maxOpen: 2_000, maxPerAddress: 2_000 },
      follow: { maxPerCredential: 2_000 },
    }),
    { engine: tally.engine, cache: { now } },
  );
}

/** A watch stream's client on node:http (no pooling, no timer of its own). */
interface Watcher {
  /** Result events: their ids (ETags) in order. */
  ids: string[];
  ends: number;
  bytes: number;
  request: ClientRequest;
}

/** Opens a watch; `onResult` is called with each result event's id as its frame is complete. */
function watch(base: string, key: string, onResult?: (id: string) => void): Promise<Watcher> {
  const [name, query] = key.split("?");
  return new Promise((resolve, reject) => {
    const request = httpGet(
      `${base}/api/endpoints/${name}/watch?${query}`,
      { headers: { ...AUTH, accept: "text/event-stream" }, agent: false },
      (response) => {
        if (response.statusCode !== 200) {
          reject(new Error(`watch answered ${response.statusCode}`));
          return response.resume();
        }
        const watcher: Watcher = {
          ids: [],
          ends: 0,
          bytes: headerBytes(response.rawHeaders),
          request,
        };
        let buffered = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          watcher.bytes += Buffer.byteLength(chunk);
          buffered += chunk;
          let boundary = buffered.indexOf("\n\n");
          while (boundary >= 0) {
            const frame = buffered.slice(0, boundary);
            buffered = buffered.slice(boundary + 2);
            boundary = buffered.indexOf("\n\n");
            if (frame.includes("\nevent: end\n") || frame.startsWith("event: end\n"))
              watcher.ends++;
            const id = /(?:^|\n)event: result\nid: (.*)\n/.exec(frame)?.[1];
            if (id !== undefined) {
              watcher.ids.push(id);
              onResult?.(id);
            }
          }
        });
        response.on("error", () => {});
        resolve(watcher);
      },
    );
    request.on("error", reject);
  });
}

/** A GET over a new connection: its ETag and when its answer (headers) came. */
function get(base: string, key: string, headers: Record<string, string> = {}) {
  return new Promise<{ etag: string; answeredAt: number }>((resolve, reject) => {
    const request = httpGet(
      `${base}/api/endpoints/${key}`,
      { headers: { ...AUTH, ...headers }, agent: false },
      (response) => {
        const answeredAt = performance.now();
        response.resume();
        if (response.statusCode !== 200) reject(new Error(`GET answered ${response.statusCode}`));
        else resolve({ etag: String(response.headers.etag), answeredAt });
      },
    );
    request.on("error", reject);
  });
}

/** Bytes of a response's header lines, status line and blank line roughly included. */
function headerBytes(raw: readonly string[]): number {
  let bytes = 20;
  for (let i = 0; i + 1 < raw.length; i += 2) bytes += `${raw[i]}: ${raw[i + 1]}\r\n`.length;
  return bytes;
}

/**
 * Waits (real time) until `check` holds, letting I/O in between: setImmediate, since setTimeout may
 * be the simulation's.
 */
async function until(check: () => boolean, timeoutMs = 30_000, what = "a condition") {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function settle(ms: number) {
  const end = performance.now() + ms;
  await until(() => performance.now() >= end);
}

interface Hour {
  mode: string;
  requests: number;
  notModified: number;
  queriesPerKey: { min: number; max: number; total: number };
  /** The ETags the dashboards of each key saw, sorted, per key. */
  valuesByKey: string[][];
  /** Every dashboard saw every value of its key. */
  complete: boolean;
  bytes: number;
}

/**
 * (a) An hour on a fake clock: the cache and the engine read it, and the cache's timers
 * (setTimeout, mocked by node:test: Node prints a warning) tick with it; sockets keep real time.
 * Dashboard d, on key d mod 10, polls at d·100 ms into every 10 s, or opens one watch at the start.
 * After each 100 ms step, queries run to completion before the next poll.
 */
async function simulatedHour(mode: "poll" | "poll-if-none-match" | "watch"): Promise<Hour> {
  const clock = { ms: Number(START_MICROS / 1000n) };
  engineNow = START_MICROS;
  const tick = (ms: number) => {
    clock.ms += ms;
    engineNow = BigInt(clock.ms) * 1000n;
    mock.timers.tick(ms);
  };
  mock.timers.enable({ apis: ["setTimeout"] });
  const tally = new QueryTally();
  const app = await service(tally, () => clock.ms);
  const stepMs = POLL_MS / DASHBOARDS;
  let requests = 0;
  let notModified = 0;
  let bytes = 0;
  const seen = Array.from({ length: DASHBOARDS }, () => new Set<string>());
  const lastEtag: string[] = [];
  const watchers: Watcher[] = [];
  try {
    if (mode === "watch") {
      const base = await app.listen({ host: "127.0.0.1", port: 0 });
      for (let d = 0; d < DASHBOARDS; d++) {
        watchers.push(await watch(base, KEYS[d % KEYS.length] as string));
        requests++;
      }
      await until(() => watchers.every((w) => w.ids.length >= 1), 30_000, "the first values");
    }
    for (let step = 0; step * stepMs < HOUR_MS; step++) {
      if (step > 0) tick(stepMs);
      do await new Promise((resolve) => setImmediate(resolve));
      while (tally.running > 0);
      if (mode === "watch") continue;
      const d = step % DASHBOARDS;
      const key = KEYS[d % KEYS.length] as string;
      const conditional = mode === "poll-if-none-match" && lastEtag[d] !== undefined;
      const answer = await app.inject({
        url: `/api/endpoints/${key}`,
        headers: conditional ? { ...AUTH, "if-none-match": lastEtag[d] as string } : AUTH,
      });
      requests++;
      if (answer.statusCode === 304) notModified++;
      else if (answer.statusCode !== 200) throw new Error(`${answer.statusCode} ${answer.body}`);
      const etag = String(answer.headers.etag);
      lastEtag[d] = etag;
      seen[d]?.add(etag);
      bytes += answer.rawPayload.length + headerBytes(rawHeaders(answer.headers));
    }
    if (mode === "watch") {
      // Values stored in the last step reach the clients.
      await settle(500);
      for (const [d, watcher] of watchers.entries()) {
        for (const id of watcher.ids) seen[d]?.add(id);
        bytes += watcher.bytes;
        if (watcher.ends > 0) throw new Error("a watch was ended during the hour");
      }
    }
  } finally {
    for (const watcher of watchers) watcher.request.destroy();
    // Real timers first: clearing many mocked ones trips node:test's timer queue (Node 24.21).
    mock.timers.reset();
    await app.close();
  }
  const perKey = [...tally.byKey.values()];
  const valuesByKey = KEYS.map((_, k) =>
    [...new Set(seen.filter((_, d) => d % KEYS.length === k).flatMap((set) => [...set]))].sort(),
  );
  return {
    mode,
    requests,
    notModified,
    queriesPerKey: { min: Math.min(...perKey), max: Math.max(...perKey), total: tally.total() },
    valuesByKey,
    complete: seen.every((set, d) => set.size === valuesByKey[d % KEYS.length]?.length),
    bytes,
  };
}

function rawHeaders(headers: Record<string, unknown>): string[] {
  return Object.entries(headers).flatMap(([name, value]) => [name, String(value)]);
}

interface FanOut {
  watchers: number;
  openSeconds: number;
  /** From the refreshing GET's answer to the last watcher's event, ms per round. */
  fromAnswer: number[];
  /** From sending the refreshing GET to the last watcher's event, ms per round. */
  fromRequest: number[];
  /** From sending the GET to its answer, ms per round. */
  refresh: number[];
  /** From the first watcher's event to the last one's, ms per round. */
  spread: number[];
}

/**
 * (b) `count` watchers of one key on a service on the real clock; each round moves the engine's
 * clock a minute back (so the recomputed value differs), forces a refresh with Cache-Control:
 * no-cache and waits until every watcher has the new value.
 */
async function fanOut(count: number): Promise<FanOut> {
  engineNow = START_MICROS;
  const tally = new QueryTally();
  const app = await service(tally);
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  const arrivals = new Map<string, number[]>();
  const onResult = (id: string) => {
    const at = performance.now();
    const times = arrivals.get(id);
    if (times) times.push(at);
    else arrivals.set(id, [at]);
  };
  const watchers: Watcher[] = [];
  const result: FanOut = {
    watchers: count,
    openSeconds: 0,
    fromAnswer: [],
    fromRequest: [],
    refresh: [],
    spread: [],
  };
  try {
    await get(base, FAN_OUT_KEY);
    const opening = performance.now();
    while (watchers.length < count) {
      const batch = Math.min(OPEN_BATCH, count - watchers.length);
      watchers.push(
        ...(await Promise.all(
          Array.from({ length: batch }, () => watch(base, FAN_OUT_KEY, onResult)),
        )),
      );
    }
    await until(() => watchers.every((w) => w.ids.length === 1), 30_000, "the first values");
    result.openSeconds = (performance.now() - opening) / 1000;
    let previous = watchers[0]?.ids[0];
    // One round untimed, to warm the paths.
    for (let round = 0; round <= ROUNDS; round++) {
      engineNow -= 60_000_000n;
      const sent = performance.now();
      const { etag, answeredAt } = await get(base, FAN_OUT_KEY, { "cache-control": "no-cache" });
      if (etag === previous) throw new Error("the forced refresh returned the same value");
      previous = etag;
      await until(() => (arrivals.get(etag)?.length ?? 0) >= count, 30_000, "every watcher");
      const times = arrivals.get(etag) as number[];
      const first = Math.min(...times);
      const last = Math.max(...times);
      if (round > 0) {
        result.fromAnswer.push(last - answeredAt);
        result.fromRequest.push(last - sent);
        result.refresh.push(answeredAt - sent);
        result.spread.push(last - first);
      }
      // A pause between rounds, as between real refreshes.
      await settle(100);
    }
    if (watchers.some((w) => w.ends > 0 || w.ids.length !== ROUNDS + 2)) {
      throw new Error("a watcher missed a value or was ended");
    }
  } finally {
    for (const watcher of watchers) watcher.request.destroy();
    await app.close();
  }
  return result;
}

/** Nearest-rank percentile. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

const ms = (values: number[]) =>
  [50, 95, 100].map((p) => percentile(values, p).toFixed(1)).join(" / ");
const row = (cells: Array<string | number>) => `| ${cells.join(" | ")} |`;
const thousands = (n: number) => n.toLocaleString("en-US").replaceAll(",", " ");

function load(): string {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
}

/** Progress on stderr: the report comes at the end, on stdout. */
function step<T>(name: string, result: T): T {
  const shown = (_key: string, value: unknown) =>
    Array.isArray(value) && Array.isArray(value[0]) ? value.map((set) => set.length) : value;
  process.stderr.write(`${name}: ${JSON.stringify(result, shown)}\n`);
  return result;
}

async function measureAll() {
  const hours = [
    step("(a) poll", await simulatedHour("poll")),
    step("(a) poll-if-none-match", await simulatedHour("poll-if-none-match")),
    step("(a) watch", await simulatedHour("watch")),
  ];
  const fanOuts = [step("(b) 1", await fanOut(1)), step("(b) 1000", await fanOut(WATCHERS))];
  return { hours, fanOuts };
}

let measured: Awaited<ReturnType<typeof measureAll>>;
try {
  measured = await measureAll();
} finally {
  await duckdb.close();
}
const { hours, fanOuts } = measured;
const HOUR_NAMES: Record<string, string> = {
  poll: "polling every 10 s",
  "poll-if-none-match": "polling every 10 s, If-None-Match",
  watch: "one watch stream each",
};
const polled = hours[0] as Hour;
console.log(
  [
    `Machine: ${cpus()[0]?.model.trim()} × ${cpus().length}, ${(totalmem() / 1024 ** 3).toFixed(1)} GiB, ${platform()}, Node ${process.version}; load average before ${loadBefore}, after ${load()}; ${((performance.now() - started) / 1000).toFixed(0)} s`,
    "",
    `(a) 1 h on a fake clock: ${DASHBOARDS} dashboards, ${DASHBOARDS / KEYS.length} on each of ${KEYS.length} keys (functions.invocation-stats, 5 intervals × 2 projects), DuckDB demo data`,
    "",
    row([
      "dashboards",
      "HTTP requests",
      "÷ polling",
      "304s",
      "engine queries per key",
      "in all",
      "values per key",
      "same values as polling, each seen by every dashboard of its key",
      "bytes received",
      "÷ polling",
    ]),
    row(["---", "---:", "---:", "---:", "---:", "---:", "---", "---", "---:", "---:"]),
    ...hours.map((h) =>
      row([
        HOUR_NAMES[h.mode] ?? h.mode,
        thousands(h.requests),
        (h.requests / polled.requests).toFixed(4),
        thousands(h.notModified),
        h.queriesPerKey.min === h.queriesPerKey.max
          ? h.queriesPerKey.max
          : `${h.queriesPerKey.min}–${h.queriesPerKey.max}`,
        h.queriesPerKey.total,
        h.valuesByKey.map((values) => values.length).join(" "),
        JSON.stringify(h.valuesByKey) === JSON.stringify(polled.valuesByKey) && h.complete
          ? "yes"
          : "no",
        thousands(h.bytes),
        (h.bytes / polled.bytes).toFixed(3),
      ]),
    ),
    "",
    `(b) real clock, loopback HTTP: watchers of ${FAN_OUT_KEY}; a GET with Cache-Control: no-cache recomputes a different value; ${ROUNDS} rounds (after one untimed), ms p50 / p95 / max`,
    "",
    row([
      "watchers",
      "opened in",
      "GET sent → its answer",
      "GET's answer → last watcher's event",
      "GET sent → last watcher's event",
      "first watcher's event → last's",
    ]),
    row(["---:", "---:", "---:", "---:", "---:", "---:"]),
    ...fanOuts.map((f) =>
      row([
        thousands(f.watchers),
        `${f.openSeconds.toFixed(2)} s`,
        ms(f.refresh),
        ms(f.fromAnswer),
        ms(f.fromRequest),
        ms(f.spread),
      ]),
    ),
  ].join("\n"),
);
