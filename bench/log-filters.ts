// logs.all's filters on the embedded engine at scale: N rows per table of 7 days of demo-shaped
// logs in a database file, then p50 of 5 runs (after 5 warm-ups) over HTTP of an unfiltered page,
// `status=5xx&path=/rest/v1/&since=1h`, and a 7-day `search` that about 0.15 % of records match
// ("patch | 404": PATCH is 10 % of the demo's requests, 404 1.5 %), and filters no record matches
// (the whole week read), each against the unfiltered page of the same run; then the engine queries a minute of 50 follow streams over 5 filter sets.
// Run: node_modules/.bin/node bench/log-filters.ts [--rows 10000000] [--disk DIR] [--follow-seconds 60]
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { serviceApp } from "../src/app.ts";
import { DEMO_PROJECTS, generateLogs } from "../src/engines/duckdb/demo-data.ts";
import { createTableSql } from "../src/engines/duckdb/tables.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import type { QueryEngine } from "../src/engines/engine.ts";
import { sourceTables } from "../src/schema.ts";
import { dateToMicros } from "../src/time.ts";
import { configFrom } from "../test/support/config-from.ts";

const RUNS = 5;
const WARM_UPS = 5;
const API_KEY = "bench-key-0123456789abcdef";
const project = DEMO_PROJECTS[0];

const { values: args } = parseArgs({
  options: {
    rows: { type: "string", default: "10000000" },
    disk: { type: "string", default: tmpdir() },
    "follow-seconds": { type: "string", default: "60" },
  },
});
const rows = Number(args.rows);
const followSeconds = Number(args["follow-seconds"]);

const PAGES: [label: string, query: string][] = [
  ["unfiltered page (PRO, 7 days)", "project_tier=PRO"],
  ["status=5xx&path=/rest/v1/&since=1h", "project_tier=PRO&status=5xx&path=/rest/v1/&since=1h"],
  ["7-day search=patch | 404 (about 0.15 %)", "project_tier=PRO&search=patch%20%7C%20404"],
  ["7-day status=404&method=PATCH (the same records)", "project_tier=PRO&status=404&method=PATCH"],
  // The worst case of a search: no record matches, so every record of the week is read.
  ["7-day search that matches nothing", "project_tier=PRO&search=no%20such%20text"],
  ["7-day status=418 (no record)", "project_tier=PRO&status=418"],
];
const FILTER_SETS = ["status=5xx", "status=4xx", "method=POST", "path=/auth/", "search=orders"];

const folder = mkdtempSync(join(String(args.disk), "log-filters-"));
const now = dateToMicros(new Date());
const engine = await createDuckDbEngine({ path: join(folder, "logs.duckdb"), now: () => now });
try {
  const loading = performance.now();
  const connection = await engine.connect();
  for (const table of sourceTables()) await connection.run(createTableSql(table));
  await generateLogs(connection, { now, days: 7, edgeLogs: rows, functionEdgeLogs: rows });
  connection.closeSync();
  const loadSeconds = (performance.now() - loading) / 1000;

  const app = await serviceApp(
    configFrom({ auth: { apiKeys: [API_KEY] }, rateLimitPerMinute: 1_000_000 }),
    { engine, follow: { clock: () => now } },
  );
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  const get = async (query: string) => {
    const response = await fetch(`${address}/api/endpoints/logs.all?project=${project}&${query}`, {
      headers: { "x-api-key": API_KEY },
    });
    if (!response.ok) throw new Error(`${query}: HTTP ${response.status}`);
    return ((await response.json()) as { result: unknown[] }).result.length;
  };
  const measured = [];
  for (const [label, query] of PAGES) {
    const records = await get(query);
    measured.push({ label, records, ms: await p50(() => get(query)) });
  }
  await app.close();

  const follows = await followPolls(engine);
  const baseline = measured[0]?.ms ?? 1;
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load average ${loadavg()[0]?.toFixed(1)}; ${rows} rows per table generated in ${loadSeconds.toFixed(0)} s, database on disk`,
  );
  console.log("\n| logs.all page over HTTP | records | p50 ms | × the unfiltered page |");
  console.log("|---|---:|---:|---:|");
  for (const { label, records, ms } of measured) {
    console.log(
      `| ${label.replaceAll("|", "\\|")} | ${records} | ${ms.toFixed(1)} | ${(ms / baseline).toFixed(2)} |`,
    );
  }
  console.log(
    `\n50 follow streams over ${FILTER_SETS.length} filter sets (${FILTER_SETS.join(", ")}), polling every 5 s, for ${followSeconds} s: ${follows.feeds} feeds, ${follows.perMinute.toFixed(1)} engine queries a minute (${(follows.perMinute / FILTER_SETS.length).toFixed(1)} per filter set; one feed polls 12 times a minute)`,
  );
} finally {
  await engine.close();
  rmSync(folder, { recursive: true, force: true });
}

/** Opens 50 streams, 10 per filter set, on a service of its own; counts the engine's follow queries. */
async function followPolls(engine: QueryEngine) {
  let polls = 0;
  const counted: QueryEngine = {
    ...engine,
    run: (request) => {
      if (request.trigger === "follow") polls++;
      return engine.run(request);
    },
  };
  // The follow clock is the real one here: feeds poll for records arriving now.
  const app = await serviceApp(
    configFrom({
      auth: { apiKeys: [API_KEY] },
      rateLimitPerMinute: 1_000_000,
      follow: { maxPerCredential: 100 },
      streams: { maxPerAddress: 100 },
    }),
    { engine: counted },
  );
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  const controller = new AbortController();
  for (let i = 0; i < 50; i++) {
    const filter = FILTER_SETS[i % FILTER_SETS.length];
    const response = await fetch(
      `${address}/api/endpoints/logs.all/follow?project=${project}&project_tier=FREE&${filter}`,
      { headers: { "x-api-key": API_KEY }, signal: controller.signal },
    );
    if (!response.ok) throw new Error(`follow ${filter}: HTTP ${response.status}`);
    void response.body?.pipeTo(new WritableStream()).catch(() => {});
  }
  const metrics = await fetch(`${address}/metrics`, { headers: { "x-api-key": API_KEY } });
  const feeds = Number(/^query_service_follow_feeds (\d+)$/m.exec(await metrics.text())?.[1]);
  const started = polls;
  await new Promise((resolve) => setTimeout(resolve, followSeconds * 1000));
  const perMinute = ((polls - started) * 60) / followSeconds;
  controller.abort();
  await app.close();
  return { feeds, perMinute };
}

/** Median wall time of `run` after the warm-ups. */
async function p50(run: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < WARM_UPS + RUNS; i++) {
    const t0 = performance.now();
    await run();
    if (i >= WARM_UPS) times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b)[Math.floor(RUNS / 2)] ?? 0;
}
