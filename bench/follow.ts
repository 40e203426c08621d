// Follow streams on the embedded engine, over real HTTP: (a) how fast one follower receives a burst
// of records that arrive at once; (b) engine queries a minute for 50 followers over 5 parameter sets.
// Run: node bench/follow.ts (loopback only, about 80 s). Prints markdown for docs/benchmarks.md.
import { cpus, loadavg, platform, totalmem } from "node:os";
import { serviceApp } from "../src/app.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import type { QueryEngine } from "../src/engines/engine.ts";
import { dateToMicros, formatTimestamp } from "../src/time.ts";
import { configFrom } from "../test/support/config-from.ts";
import { replaceTables } from "../test/support/duckdb-tables.ts";
import { edgeLog } from "../test/support/fixtures.ts";
import type { Row } from "../test/support/googlesql.ts";

const API_KEY = "bench-key-0123456789abcdef";
const BURST = 5_000;
const INTERVAL_MS = 1_000;
const FOLLOWERS = 50;
const PROJECTS = ["p1", "p2", "p3", "p4", "p5"];
const MINUTE_MS = 60_000;

const duckdb = await createDuckDbEngine();
let queries = 0;
const counted: QueryEngine = {
  ...duckdb,
  run: (request) => {
    queries++;
    return duckdb.run(request);
  },
};
const rows: Row[] = [];
await replaceTables(duckdb, { edge_logs: rows });
const app = await serviceApp(
  configFrom({
    auth: { apiKeys: [API_KEY] },
    rateLimitPerMinute: 100_000,
    follow: { intervalMs: INTERVAL_MS, maxPerCredential: 100 },
  }),
  { engine: counted },
);
const base = await app.listen({ host: "127.0.0.1", port: 0 });

/** Opens an NDJSON follow stream; `onRecord` is called per record until the returned abort. */
async function follow(project: string, onRecord: () => void): Promise<AbortController> {
  const controller = new AbortController();
  const response = await fetch(
    `${base}/api/endpoints/logs.all/follow?project=${project}&project_tier=FREE`,
    {
      headers: { "x-api-key": API_KEY, accept: "application/x-ndjson" },
      signal: controller.signal,
    },
  );
  (async () => {
    try {
      for await (const chunk of (response.body as ReadableStream<Uint8Array>).pipeThrough(
        new TextDecoderStream(),
      )) {
        for (const char of chunk) if (char === "\n") onRecord();
      }
    } catch {
      // Aborted.
    }
  })();
  return controller;
}

// (a) A burst of BURST records for one follower.
let received = 0;
const one = await follow("p1", () => received++);
const now = dateToMicros(new Date());
rows.push(
  ...Array.from({ length: BURST }, (_, i) =>
    edgeLog(formatTimestamp(now + BigInt(i)), { project: "p1", id: `burst-${i}` }),
  ),
);
const arrived = performance.now();
await replaceTables(duckdb, { edge_logs: rows });
while (received < BURST) await new Promise((resolve) => setTimeout(resolve, 5));
const burstSeconds = (performance.now() - arrived) / 1000;
one.abort();

// (b) 50 followers over 5 parameter sets for a minute.
const streams = await Promise.all(
  Array.from({ length: FOLLOWERS }, (_, i) =>
    follow(PROJECTS[i % PROJECTS.length] as string, () => {}),
  ),
);
const before = queries;
await new Promise((resolve) => setTimeout(resolve, MINUTE_MS));
const perMinute = queries - before;
for (const stream of streams) stream.abort();
await app.close();
await duckdb.close();

console.log(`Machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${platform()}, Node ${process.versions.node}; load average ${loadavg()[0]?.toFixed(1)}.
Follow streams on DuckDB over loopback HTTP, LOGS_FOLLOW_INTERVAL_SECONDS=${INTERVAL_MS / 1000}:

| figure | result |
| --- | ---: |
| (a) ${BURST} records arriving at once, received by one follower (NDJSON) | ${burstSeconds.toFixed(2)} s from arrival to the last, ${(BURST / burstSeconds).toFixed(0)} records/s |
| (b) engine queries in one minute, ${FOLLOWERS} followers over ${PROJECTS.length} parameter sets | ${perMinute} (one feed per set: ${(PROJECTS.length * MINUTE_MS) / INTERVAL_MS} polls expected) |`);
