// What aligning time ranges saves the engine (issue 42): 20 dashboards of 6 panels, each showing a
// moving "last 6 hours" (from = now − 6 h and to = now in epoch milliseconds, as Grafana sends
// ${__from} and ${__to}) and refreshing every 10 s, for 10 minutes of a simulated clock, on the
// embedded engine over demo data. Dashboard d refreshes at d·500 ms into every 10 s; three of its
// panels are its own (its function), three every dashboard shares (a project's totals).
//   aligned:   the service as it is: each range aligned to its bucket (5 minutes for 6 hours in at
//              most 300 points), so refreshes within one bucket share one cached answer.
//   unaligned: the same refreshes where no two ranges share an entry, as a cache keyed by the exact
//              range would have it (the range moves every refresh): each one asks for a fresh value
//              (Cache-Control: no-cache, the forced-refresh budget lifted), so each costs the
//              engine one query, as a miss would.
// Engine queries count the cache's warming too (its timers tick with the simulated clock).
// Service and clients share this one process. Run: node bench/dashboards.ts (about a minute).
// Prints markdown for docs/benchmarks.md.
import { cpus, loadavg, platform, totalmem } from "node:os";
import { mock } from "node:test";
import { serviceApp } from "../src/app.ts";
import { loadData } from "../src/engines/duckdb/data.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import type { QueryEngine } from "../src/engines/engine.ts";
import { dateToMicros } from "../src/time.ts";
import { configFrom } from "../test/support/config-from.ts";

const API_KEY = "bench-dashboards-key-0123456789";
const DASHBOARDS = 20;
const REFRESH_MS = 10_000;
const MINUTES = 10;
const RANGE_MS = 6 * 3600 * 1000;
const STEP_MS = REFRESH_MS / DASHBOARDS;

/** Dashboard d's six panels: three its own (function f<d>), three every dashboard shares. */
const panels = (d: number) => [
  `functions.invocation-stats?project=default&function_id=f${d}`,
  `functions.invocation-stats?project=staging&function_id=f${d}`,
  `functions.invocation-stats?project=default&function_id=f${d}&max_points=60`,
  "functions.invocation-stats?project=default",
  `usage.api-counts?project=${encodeURIComponent("^https://default\\.")}`,
  `usage.api-counts?project=${encodeURIComponent("^https://staging\\.")}`,
];

const started = performance.now();
const loadBefore = load();
let engineNow = dateToMicros(new Date());
const START_MS = Number(engineNow / 1000n);
const duckdb = await createDuckDbEngine({ now: () => engineNow });
await loadData(duckdb, { demoData: true, now: engineNow });

interface Run {
  mode: string;
  requests: number;
  queries: number;
}

async function run(mode: "aligned" | "unaligned"): Promise<Run> {
  const clock = { ms: START_MS };
  engineNow = BigInt(START_MS) * 1000n;
  let queries = 0;
  let running = 0;
  const engine: QueryEngine = {
    dialect: duckdb.dialect,
    run: async (request) => {
      queries++;
      running++;
      try {
        return await duckdb.run(request);
      } finally {
        running--;
      }
    },
    ping: () => duckdb.ping(),
    close: async () => {},
  };
  mock.timers.enable({ apis: ["setTimeout"] });
  const app = await serviceApp(
    configFrom({
      auth: { apiKeys: [API_KEY] },
      cache: { maxEntries: 10_000, maxBytes: 256 * 1024 * 1024 },
      // One credential stands for every dashboard: never refused.
      rateLimitPerMinute: Number.MAX_SAFE_INTEGER,
      forcedRefreshPerMinute: Number.MAX_SAFE_INTEGER,
    }),
    {
      engine,
      cache: { now: () => clock.ms },
      follow: { clock: () => BigInt(clock.ms) * 1000n },
    },
  );
  const headers = {
    "x-api-key": API_KEY,
    ...(mode === "unaligned" && { "cache-control": "no-cache" }),
  };
  let requests = 0;
  try {
    for (let step = 0; step * STEP_MS < MINUTES * 60_000; step++) {
      if (step > 0) {
        clock.ms += STEP_MS;
        engineNow = BigInt(clock.ms) * 1000n;
        mock.timers.tick(STEP_MS);
      }
      // Refreshes the tick started run to completion first.
      do await new Promise((resolve) => setImmediate(resolve));
      while (running > 0);
      const d = step % DASHBOARDS;
      const range = `from=${clock.ms - RANGE_MS}&to=${clock.ms}`;
      for (const panel of panels(d)) {
        const answer = await app.inject({ url: `/api/endpoints/${panel}&${range}`, headers });
        if (answer.statusCode !== 200) throw new Error(`${answer.statusCode} ${answer.body}`);
        requests++;
      }
    }
  } finally {
    // Real timers first: clearing many mocked ones trips node:test's timer queue (Node 24.21).
    mock.timers.reset();
    await app.close();
  }
  return { mode, requests, queries };
}

const aligned = await run("aligned");
const unaligned = await run("unaligned");
await duckdb.close();

console.log(
  `| dashboards × panels | refresh | minutes | mode | requests | engine queries | queries per panel refresh |
|---|---|---|---|---|---|---|`,
);
for (const result of [aligned, unaligned]) {
  console.log(
    `| ${DASHBOARDS} × 6 | ${REFRESH_MS / 1000} s | ${MINUTES} | ${result.mode} | ${result.requests} | ${result.queries} | ${(result.queries / result.requests).toFixed(3)} |`,
  );
}
console.log(
  `\nAligned: ${(unaligned.queries / aligned.queries).toFixed(1)}× fewer engine queries. Machine: ${cpus()[0]?.model.trim()} × ${cpus().length}, ${(totalmem() / 1024 ** 3).toFixed(1)} GiB, ${platform()}, Node ${process.version}; load average before ${loadBefore}, after ${load()}; ${((performance.now() - started) / 1000).toFixed(0)} s`,
);

function load(): string {
  return loadavg()
    .map((value) => value.toFixed(1))
    .join(" ");
}
