// What reading logs costs on BigQuery, before issue 35 (a query per 100-record page) and after it (one
// query per window, its result read page by page), in one run: the tree at --before is extracted
// from git into a temporary folder and both services run against one BigQuery stand-in on the
// GoogleSQL reference engine. For each: the jobs (queries run), the page reads of kept results and
// the bytes processed the stand-in's replies report for (a) a settled run of 7 days (an export),
// (b) a whole page walk of a PRO week, (c) the catch-up of a follow whose start is 6 hours back, as
// after an outage, and (d) an hour of one live follow, run with the poll interval and the lag cut
// by --speedup and counted over --live-seconds. Then, on DuckDB, a 7-day settled run's records per
// second on each tree. The reference engine reads every row of the table for each query, so the
// BigQuery figures are for --records (a week of edge logs, comma-separated for several sizes).
// Run: node_modules/.bin/node bench/bigquery-reads.ts [--before <commit>] [--records 1000,3000]
//      [--duckdb-records 200000] [--duckdb-rounds 3] [--speedup 10] [--live-seconds 30] (about 4
//      minutes; the reference engine must answer a poll within the interval; `--records ""` for
//      DuckDB's figures only). Prints markdown for docs/benchmarks.md.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg, platform, totalmem } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { FollowSettings } from "../src/config.ts";
import { DEMO_PROJECTS, generateLogs } from "../src/engines/duckdb/demo-data.ts";
import { createTableSql } from "../src/engines/duckdb/tables.ts";
import type { QueryEngine } from "../src/engines/engine.ts";
import { sourceTables } from "../src/schema.ts";
import { dateToMicros } from "../src/time.ts";
import { type BigQueryStandIn, startBigQueryStandIn } from "../test/support/bigquery-standin.ts";
import { configFrom } from "../test/support/config-from.ts";
import { DAY, edgeLog, HOUR, micros, PROJECT, shift } from "../test/support/fixtures.ts";
import { GoogleSqlServer, type Row } from "../test/support/googlesql.ts";
import { root, treeAt } from "./tree-at.ts";

const API_KEY = "bench-key-0123456789abcdef";
const NOW = "2026-11-21T05:17:42.123456Z";
/** The last commit of main before issue 35's work. */
const LAST_BEFORE_ISSUE_35 = "6d0c8d012a6dcecf3be6e1866e1833ae0d8556dd";
/** The service's defaults, which --speedup divides for the live hour. */
const INTERVAL_MS = 5_000;
const LAG_MS = 60_000;
const { values: args } = parseArgs({
  options: {
    before: { type: "string", default: LAST_BEFORE_ISSUE_35 },
    records: { type: "string", default: "1000,3000" },
    "duckdb-records": { type: "string", default: "200000" },
    "duckdb-rounds": { type: "string", default: "3" },
    speedup: { type: "string", default: "10" },
    "live-seconds": { type: "string", default: "30" },
  },
});
// `--records ""`: no BigQuery figures, only DuckDB's.
const sizes = String(args.records).split(",").filter(Boolean).map(Number);
const speedup = Number(args.speedup);
const liveMs = Number(args["live-seconds"]) * 1000;

const beforeRoot = treeAt(String(args.before), "bigquery-reads-before");

/** A tree's service: its app, and its BigQuery and DuckDB engines. */
async function load(tree: string) {
  const from = async (path: string) => import(pathToFileURL(join(tree, path)).href);
  const { serviceApp } = await from("src/app.ts");
  return {
    /** The app with follow settings: a tree before issue 36 takes them with its deps in one object. */
    serve: (engine: QueryEngine, follow: Partial<FollowSettings>, clock: () => bigint) =>
      (serviceApp.length === 1
        ? serviceApp({
            engine,
            apiKeys: [API_KEY],
            rateLimitPerMinute: 1_000_000,
            follow: { ...follow, clock },
          })
        : serviceApp(
            configFrom({ auth: { apiKeys: [API_KEY] }, rateLimitPerMinute: 1_000_000, follow }),
            { engine, follow: { clock } },
          )) as ReturnType<typeof import("../src/app.ts").serviceApp>,
    createBigQueryEngine: (await from("src/engines/bigquery.ts"))
      .createBigQueryEngine as typeof import("../src/engines/bigquery.ts").createBigQueryEngine,
    createDuckDbEngine: (await from("src/engines/duckdb.ts"))
      .createDuckDbEngine as typeof import("../src/engines/duckdb.ts").createDuckDbEngine,
  };
}
type Service = Awaited<ReturnType<typeof load>>;
const versions: [string, Service][] = [
  ["before", await load(beforeRoot)],
  ["after", await load(root)],
];

/**
 * Passes the engine's calls on to the stand-in and adds up the bytes processed that each query's
 * reply reports, as a client of BigQuery sees them (page reads of a kept result bill nothing).
 */
async function startByteCounter(target: string) {
  const counter = { bytes: 0, url: "", close: () => server.close() };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const reply = await fetch(target + req.url, {
      method: req.method,
      headers: { "content-type": "application/json" },
      ...(req.method === "POST" && { body: Buffer.concat(chunks) }),
    });
    const text = await reply.text();
    if (req.method === "POST" && reply.ok) {
      counter.bytes += Number(
        (JSON.parse(text) as { totalBytesProcessed?: string }).totalBytesProcessed ?? 0,
      );
    }
    res.writeHead(reply.status, { "content-type": "application/json" }).end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  counter.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return counter;
}

interface Cost {
  records: number;
  jobs: number;
  pageReads: number;
  bytes: number;
}

const headers = { "x-api-key": API_KEY, accept: "application/x-ndjson" };
const jsonHeaders = { "x-api-key": API_KEY };
const logs = (query: Record<string, string>) =>
  `/api/endpoints/logs.all?${new URLSearchParams({ project: PROJECT, project_tier: "PRO", ...query })}`;
const follow = (query: Record<string, string>) => logs(query).replace("?", "/follow?");

/** Reads an NDJSON stream a line at a time until `enough` says so or it ends; the lines read. */
async function readLines(response: Response, enough = (_lines: number) => false): Promise<number> {
  let lines = 0;
  for await (const chunk of response.body as ReadableStream<Uint8Array>) {
    // Counted by indexOf: a loop over every byte cost this process, which also runs the service,
    // about a tenth of the DuckDB export's time.
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
    if (enough(lines)) break;
  }
  return lines;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The week of `records` edge logs before NOW, evenly spaced, one project. */
function week(records: number): Row[] {
  const step = (7n * DAY - HOUR) / BigInt(records);
  return Array.from({ length: records }, (_, i) => edgeLog(shift(NOW, -BigInt(i + 1) * step)));
}

/** The tree's service on BigQuery through a byte counter, with the follow interval and lag ÷ `speedup`. */
async function serveBigQuery(service: Service, standIn: BigQueryStandIn, speedup: number) {
  const counter = await startByteCounter(standIn.url);
  const engine = service.createBigQueryEngine({
    projectId: "bench-project",
    dataset: "logs",
    apiEndpoint: counter.url,
    jobTimeoutMs: 600_000,
    // The window the engine binds is read off the stand-in's pinned clock (the tree before issue
    // 35 leaves the clock to the SQL and ignores it).
    now: standIn.clock,
  });
  const app = await service.serve(
    engine,
    { intervalMs: INTERVAL_MS / speedup, lagMs: LAG_MS / speedup, maxPerCredential: 4 },
    () => micros(NOW),
  );
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  const jobs = () => standIn.queryCalls.filter((call) => !call.body.dryRun).length;
  return {
    base,
    counter,
    /** What `run` cost: the records it read (its answer), jobs, page reads and bytes. */
    async cost(run: () => Promise<number>): Promise<Cost> {
      const before = { jobs: jobs(), pageReads: standIn.pageReads.length, bytes: counter.bytes };
      const read = await run();
      return {
        records: read,
        jobs: jobs() - before.jobs,
        pageReads: standIn.pageReads.length - before.pageReads,
        bytes: counter.bytes - before.bytes,
      };
    },
    async close() {
      await app.close();
      await engine.close();
      counter.close();
    },
  };
}

/** Opens a follow stream and reads it until `lines` came, or for `ms`; the lines read. */
async function followFor(url: string, until: { lines: number } | { ms: number }): Promise<number> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  let read = 0;
  const reading = readLines(response, (lines) => {
    read = lines;
    return "lines" in until && lines >= until.lines;
  }).catch(() => {});
  await ("ms" in until ? sleep(until.ms) : reading);
  controller.abort();
  return read;
}

async function bigQueryCosts(service: Service, standIn: BigQueryStandIn, records: Row[]) {
  const { base, counter, cost, close } = await serveBigQuery(service, standIn, 1);
  let oneScan = 0;
  const walk = await cost(async () => {
    let url: string | undefined = logs({});
    let read = 0;
    while (url) {
      const bytes = counter.bytes;
      const response = await fetch(base + url, { headers: jsonHeaders });
      if (response.status !== 200) throw new Error(`a page answered ${response.status}`);
      read += ((await response.json()) as { result: unknown[] }).result.length;
      if (url === logs({})) oneScan = counter.bytes - bytes;
      url = /<([^>]*)>;\s*rel="next"/.exec(response.headers.get("link") ?? "")?.[1];
    }
    return read;
  });
  const exported = await cost(async () => {
    const response = await fetch(base + follow({ since: "7d", until: "settled" }), { headers });
    return (await readLines(response)) - 1;
  });
  const sixHoursAgo = micros(NOW) - 6n * HOUR;
  const recent = records.filter((row) => micros(String(row.timestamp)) > sixHoursAgo).length;
  const catchUp = await cost(() => followFor(base + follow({ since: "6h" }), { lines: recent }));
  await close();
  for (const [name, figures] of [
    ["walk", walk],
    ["export", exported],
    ["catch-up", catchUp],
  ] as const) {
    const expected = name === "catch-up" ? recent : records.length;
    if (figures.records !== expected) {
      throw new Error(`the ${name} read ${figures.records} of ${expected} records`);
    }
  }
  const fast = await serveBigQuery(service, standIn, speedup);
  const live = await fast.cost(() => followFor(fast.base + follow({}), { ms: liveMs }));
  await fast.close();
  return { oneScan, walk, exported, catchUp, live };
}

/** Records per second of a 7-day settled run of `records` demo edge logs on the tree's DuckDB engine. */
async function duckDbExport(service: Service, records: number) {
  const now = dateToMicros(new Date());
  const engine = await service.createDuckDbEngine({ now: () => now });
  const connection = await engine.connect();
  for (const table of sourceTables()) await connection.run(createTableSql(table));
  await generateLogs(connection, { now, days: 7, edgeLogs: records, functionEdgeLogs: 1_000 });
  connection.closeSync();
  const app = await service.serve(engine, {}, () => now);
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  const started = performance.now();
  const query = new URLSearchParams({
    project: DEMO_PROJECTS[0] as string,
    project_tier: "PRO",
    since: "7d",
    until: "settled",
  });
  const response = await fetch(`${base}/api/endpoints/logs.all/follow?${query}`, { headers });
  const read = (await readLines(response)) - 1;
  const seconds = (performance.now() - started) / 1000;
  await app.close();
  await engine.close();
  return { records: read, seconds };
}

const googleSql = await GoogleSqlServer.start();
const standIn = await startBigQueryStandIn({ googleSqlPort: googleSql.port, now: NOW });
const results: {
  records: number;
  version: string;
  costs: Awaited<ReturnType<typeof bigQueryCosts>>;
}[] = [];
try {
  for (const records of sizes) {
    const rows = week(records);
    standIn.tables = { edge_logs: rows };
    for (const [version, service] of versions) {
      results.push({ records, version, costs: await bigQueryCosts(service, standIn, rows) });
    }
  }
} finally {
  await standIn.close();
  await googleSql.stop();
}
// Rounds alternate the trees, so that other work on a shared machine weighs on both alike.
const duckDb = new Map(
  versions.map(([version]) => [version, [] as { records: number; seconds: number }[]]),
);
for (let round = 0; round < Number(args["duckdb-rounds"]); round++) {
  for (const [version, service] of versions) {
    duckDb.get(version)?.push(await duckDbExport(service, Number(args["duckdb-records"])));
  }
}

const hour = 3_600_000 / speedup / liveMs;
const scans = (cost: Cost, oneScan: number) => (cost.bytes / oneScan).toFixed(1);
console.log(`Machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${platform()}, Node ${process.versions.node}; load average ${loadavg()[0]?.toFixed(1)}.
BigQuery stand-in on the GoogleSQL reference engine; before = ${String(args.before).slice(0, 7)}, after = this tree. Bytes are the totalBytesProcessed the stand-in's replies report; "scans" divides them by the bytes of one query over the PRO week (the walk's first page). The live hour is ${liveMs / 1000} s at a ${INTERVAL_MS / speedup} ms interval and ${LAG_MS / speedup} ms lag (the defaults ÷ ${speedup}), its jobs × ${hour.toFixed(0)}.

| records in the week | read | version | jobs | page reads | bytes processed | scans |
| ---: | --- | --- | ---: | ---: | ---: | ---: |`);
for (const { records, version, costs } of results) {
  const rows: [string, Cost, number][] = [
    ["(a) settled run, 7 days", costs.exported, 1],
    ["(b) page walk, PRO week", costs.walk, 1],
    [`(c) catch-up, 6 hours (${costs.catchUp.records} records)`, costs.catchUp, 1],
    ["(d) an hour of one live follow", costs.live, hour],
  ];
  for (const [name, cost, times] of rows) {
    console.log(
      `| ${records} | ${name} | ${version} | ${Math.round(cost.jobs * times)} | ${Math.round(cost.pageReads * times)} | ${Math.round(cost.bytes * times)} | ${scans({ ...cost, bytes: cost.bytes * times }, costs.oneScan)} |`,
    );
  }
}
console.log(`\nDuckDB, a 7-day settled run of ${args["duckdb-records"]} generated edge logs over HTTP (NDJSON), ${args["duckdb-rounds"]} rounds:

| version | records | seconds per round | records/s per round | median records/s |
| --- | ---: | ---: | ---: | ---: |`);
const median = (values: number[]) =>
  values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const medians: number[] = [];
for (const [version, runs] of duckDb) {
  const rates = runs.map((run) => run.records / run.seconds);
  medians.push(median([...rates]));
  console.log(
    `| ${version} | ${runs.map((run) => run.records).join(" ")} | ${runs.map((run) => run.seconds.toFixed(1)).join(" ")} | ${rates.map(Math.round).join(" ")} | ${Math.round(medians.at(-1) as number)} |`,
  );
}
const [before, after] = medians as [number, number];
console.log(`\nAfter ÷ before, medians: ${(after / before).toFixed(1)} ×.`);
