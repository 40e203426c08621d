// The embedded engine at scale: each endpoint over N rows per table (7 days of demo-shaped logs),
// loaded two ways: from the demo generator (time-ordered batches) and from an unordered Parquet
// export through LOCAL_DATA, as BigQuery exports are not sorted by time. Per case: p50 of 5 runs
// after 5 warm-ups, on the engine and over HTTP for an uncached key, and the first run's time (the
// first queries after a large load read their blocks cold); per load: rows/s, the
// process's peak RSS (VmHWM) while loading and over the whole run, and the database's size on disk.
// The Parquet export is a single file of N rows per table: its load is that of one big file.
// Each measurement runs in a child process of its own, so one's peak RSS is not another's.
// Run: node bench/duckdb-scale.ts [--sizes 1000000,10000000] [--sources generated,parquet]
//        [--disk DIR] [--memory-limit 4GB]   (the database files go in DIR, default the temp folder)
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { serviceApp } from "../src/app.ts";
import { loadData } from "../src/engines/duckdb/data.ts";
import { DEMO_PROJECTS, generateLogs } from "../src/engines/duckdb/demo-data.ts";
import { createTableSql } from "../src/engines/duckdb/tables.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import { sourceTables } from "../src/schema.ts";
import { dateToMicros } from "../src/time.ts";
import { endpointRequest } from "../test/support/catalog.ts";
import { configFrom } from "../test/support/config-from.ts";

const RUNS = 5;
// The first few queries after loading a large file take up to 10× the steady time, reading blocks
// the load pushed out of DuckDB's buffers: the first run is reported apart, the p50 is of later runs.
const WARM_UPS = 5;
const API_KEY = "bench-key-0123456789abcdef";
const project = DEMO_PROJECTS[0];
const CASES: [endpoint: string, params: Record<string, string | null>][] = [
  ["functions.invocation-stats", { project, function_id: null, interval: "1day" }],
  ["functions.invocation-stats", { project, function_id: null, interval: "7day" }],
  ["functions.invocation-stats", { project, function_id: "hello-world", interval: "1hr" }],
  ["functions.invocation-stats", { project, function_id: null, interval: "5min" }],
  ["usage.api-counts", { project, interval: "minutely" }],
  ["usage.api-counts", { project, interval: "hourly" }],
  ["usage.api-counts", { project, interval: "daily" }],
  [
    "logs.all",
    {
      project,
      project_tier: "PRO",
      iso_timestamp_start: null,
      iso_timestamp_end: null,
      cursor_timestamp: null,
      cursor_id: null,
    },
  ],
];

interface Measured {
  rows: number;
  source: string;
  loadSeconds: number;
  rowsPerSecond: number;
  /** While loading: for Parquet, the larger of the two single big files. */
  loadPeakRssMiB: number;
  peakRssMiB: number;
  diskMiB: number;
  cases: {
    label: string;
    firstMs: number;
    engineMs: number;
    engineCpuMs: number;
    httpMs: number;
  }[];
}

const { values: args } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000000,10000000" },
    sources: { type: "string", default: "generated,parquet" },
    disk: { type: "string", default: tmpdir() },
    "memory-limit": { type: "string", default: "4GB" },
    // Child modes.
    measure: { type: "string" },
    export: { type: "string" },
    rows: { type: "string" },
    folder: { type: "string" },
  },
});
const memoryLimit = args["memory-limit"];
const DAY_US = 86_400_000_000n;

if (args.export) await exportParquet(Number(args.rows), args.export);
else if (args.measure) process.stdout.write(`${JSON.stringify(await measure())}\n`);
else orchestrate();

/** Generates rows into a scratch database and writes each table to `folder` as Parquet, shuffled. */
async function exportParquet(rows: number, folder: string) {
  const scratch = mkdtempSync(join(tmpdir(), "duckdb-scale-export-"));
  const engine = await createDuckDbEngine({
    path: join(scratch, "export.duckdb"),
    memoryLimit,
    dataFolders: [folder],
  });
  const connection = await engine.connect();
  await generate(connection, rows, dateToMicros(new Date()));
  for (const table of sourceTables()) {
    await connection.run(
      `COPY (SELECT * FROM ${table.name} ORDER BY hash(id)) TO '${join(folder, `${table.name}-000000000000.parquet`)}' (FORMAT parquet)`,
    );
  }
  connection.closeSync();
  await engine.close();
  rmSync(scratch, { recursive: true, force: true });
}

async function generate(
  connection: Awaited<ReturnType<Awaited<ReturnType<typeof createDuckDbEngine>>["connect"]>>,
  rows: number,
  now: bigint,
) {
  for (const table of sourceTables()) await connection.run(createTableSql(table));
  await generateLogs(connection, { now, days: 7, edgeLogs: rows, functionEdgeLogs: rows });
}

async function measure(): Promise<Measured> {
  const rows = Number(args.rows);
  const source = String(args.measure);
  const path = join(String(args.disk), `scale-${rows}-${source}.duckdb`);
  // A run that failed midway leaves its database behind: start from an empty one.
  for (const leftover of [path, `${path}.wal`]) rmSync(leftover, { force: true });
  // The export's rows end at its own "now": the newest row of the export stands for it.
  let now = dateToMicros(new Date());
  const engine = await createDuckDbEngine({
    path,
    memoryLimit,
    now: () => now,
    ...(source === "generated" ? {} : { dataFolders: [String(args.folder)] }),
  });
  const started = performance.now();
  if (source === "generated") {
    const connection = await engine.connect();
    await generate(connection, rows, now);
    connection.closeSync();
  } else {
    await loadData(engine, { localData: String(args.folder) });
    const connection = await engine.connect();
    const newest = await connection.runAndReadAll("SELECT epoch_us(max(timestamp)) FROM edge_logs");
    now = (newest.getRows()[0]?.[0] as bigint) + 1n;
    connection.closeSync();
  }
  const loadSeconds = (performance.now() - started) / 1000;
  const loadPeakRssMiB = peakRssMiB();
  if (now < dateToMicros(new Date()) - DAY_US) throw new Error("export older than a day");

  const app = await serviceApp(
    configFrom({ auth: { apiKeys: [API_KEY] }, rateLimitPerMinute: 1_000_000 }),
    { engine },
  );
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  const cases = [];
  for (const [endpoint, params] of CASES) {
    // CPU time over both of DuckDB's threads: what the query costs whatever else the machine runs.
    const cpu: number[] = [];
    const first: number[] = [];
    const engineMs = await p50(
      () => engine.run(endpointRequest(endpoint, "duckdb", params)),
      cpu,
      first,
    );
    const engineCpuMs = cpu[Math.floor(RUNS / 2)] ?? 0;
    const query = new URLSearchParams(
      Object.entries(params).filter((e): e is [string, string] => e[1] !== null),
    );
    // No cache is configured: every request runs the query.
    const httpMs = await p50(async () => {
      const response = await fetch(`${address}/api/endpoints/${endpoint}?${query}`, {
        headers: { "x-api-key": API_KEY },
      });
      if (!response.ok) throw new Error(`${endpoint}: HTTP ${response.status}`);
      await response.arrayBuffer();
    });
    const label = `${endpoint} ${params.interval ?? params.project_tier}${params.function_id ? `, one function` : ""}`;
    cases.push({ label, firstMs: first[0] ?? 0, engineMs, engineCpuMs, httpMs });
  }
  await app.close();
  await engine.close();
  const diskMiB =
    (statSync(path).size + (statSync(`${path}.wal`, { throwIfNoEntry: false })?.size ?? 0)) /
    2 ** 20;
  rmSync(path, { force: true });
  return {
    rows,
    source,
    loadSeconds,
    rowsPerSecond: (2 * rows) / loadSeconds,
    loadPeakRssMiB,
    peakRssMiB: peakRssMiB(),
    diskMiB,
    cases,
  };
}

/**
 * Median wall time of `run` after the warm-ups; with `cpu`, also the median CPU time of the
 * process during it; with `first`, the wall time of the first run.
 */
async function p50(
  run: () => Promise<unknown>,
  cpu: number[] = [],
  first: number[] = [],
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < WARM_UPS + RUNS; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await run();
    const used = process.cpuUsage(c0);
    if (i === 0) first.push(performance.now() - t0);
    if (i >= WARM_UPS) {
      times.push(performance.now() - t0);
      cpu.push((used.user + used.system) / 1000);
    }
  }
  cpu.sort((a, b) => a - b);
  return times.sort((a, b) => a - b)[Math.floor(RUNS / 2)] ?? 0;
}

/** The process's peak resident set (VmHWM), which includes DuckDB's own allocations. */
function peakRssMiB(): number {
  const kib = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
  return kib ? Number(kib) / 1024 : process.resourceUsage().maxRSS / 1024;
}

function orchestrate() {
  const self = new URL(import.meta.url).pathname;
  const shared = ["--disk", String(args.disk), "--memory-limit", String(memoryLimit)];
  const child = (extra: string[]) =>
    execFileSync(process.execPath, [self, ...shared, ...extra], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      maxBuffer: 16 * 2 ** 20,
    });
  const results: Measured[] = [];
  const loads: number[] = [];
  for (const rows of String(args.sizes).split(",").map(Number)) {
    for (const source of String(args.sources).split(",")) {
      const folder = mkdtempSync(join(tmpdir(), "duckdb-scale-parquet-"));
      try {
        if (source === "parquet") child(["--export", folder, "--rows", String(rows)]);
        loads.push(loadavg()[0] ?? 0);
        results.push(
          JSON.parse(
            child(["--measure", source, "--rows", String(rows), "--folder", folder]),
          ) as Measured,
        );
        console.error(JSON.stringify(results.at(-1)));
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    }
  }
  const round = (n: number) => String(Math.round(n));
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load average ${loads.map((l) => l.toFixed(1)).join(", ")} at each start; database on disk, DUCKDB_MEMORY_LIMIT ${memoryLimit}`,
  );
  console.log(
    "| rows/table | loaded from | load rows/s | peak RSS MiB, loading | peak RSS MiB, whole run | disk MiB |",
  );
  console.log("|---:|---|---:|---:|---:|---:|");
  for (const r of results) {
    console.log(
      `| ${r.rows} | ${r.source} | ${round(r.rowsPerSecond)} | ${round(r.loadPeakRssMiB)} | ${round(r.peakRssMiB)} | ${round(r.diskMiB)} |`,
    );
  }
  console.log(
    "\n| rows/table | loaded from | endpoint + params | engine first run ms | engine p50 ms | its CPU ms | HTTP p50 ms |",
  );
  console.log("|---:|---|---|---:|---:|---:|---:|");
  for (const r of results) {
    for (const c of r.cases) {
      console.log(
        `| ${r.rows} | ${r.source} | ${c.label} | ${round(c.firstMs)} | ${round(c.engineMs)} | ${round(c.engineCpuMs)} | ${round(c.httpMs)} |`,
      );
    }
  }
}
