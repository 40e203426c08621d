// The embedded engine at scale: each endpoint over 1 M and 10 M generated rows per table (7 days
// of demo-shaped logs), p50 of 5 runs after one warm-up, and the process's peak RSS.
// Run: node bench/duckdb-scale.ts [rows ...]   (default: 1000000 10000000)
import { readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { DEMO_PROJECTS, generateLogs } from "../src/engines/duckdb/demo-data.ts";
import { createTableSql } from "../src/engines/duckdb/tables.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import { sourceTables } from "../src/schema.ts";
import { dateToMicros } from "../src/time.ts";

const RUNS = 5;
const project = DEMO_PROJECTS[0];
const CASES: [endpoint: string, params: Record<string, string | null>][] = [
  ["functions.invocation-stats", { project, function_id: null, interval: "1day" }],
  ["functions.invocation-stats", { project, function_id: null, interval: "7day" }],
  ["functions.invocation-stats", { project, function_id: "hello-world", interval: "1hr" }],
  ["usage.api-counts", { project, interval: "hourly" }],
  ["usage.api-counts", { project, interval: "daily" }],
  [
    "logs.all",
    { project, project_tier: "PRO", iso_timestamp_start: null, iso_timestamp_end: null },
  ],
];

const sizes = process.argv.slice(2).map(Number);
const rows: string[][] = [];
for (const size of sizes.length > 0 ? sizes : [1_000_000, 10_000_000]) {
  const now = dateToMicros(new Date());
  const engine = await createDuckDbEngine({ now: () => now });
  const connection = await engine.connect();
  for (const table of sourceTables()) await connection.run(createTableSql(table));
  const started = performance.now();
  await generateLogs(connection, { now, days: 7, edgeLogs: size, functionEdgeLogs: size });
  connection.closeSync();
  console.error(
    `${size} rows per table generated in ${Math.round(performance.now() - started)} ms`,
  );
  for (const [endpoint, params] of CASES) {
    const sql = readFileSync(new URL(`../queries/duckdb/${endpoint}.sql`, import.meta.url), "utf8");
    const times: number[] = [];
    for (let run = 0; run <= RUNS; run++) {
      const t0 = performance.now();
      await engine.run({ endpoint, sql, params, maxRows: 1000 });
      if (run > 0) times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const label = `${endpoint} ${params.interval ?? params.project_tier}${params.function_id ? ` ${params.function_id}` : ""}`;
    rows.push([
      String(size),
      label,
      String(Math.round(times[Math.floor(RUNS / 2)] ?? 0)),
      String(Math.round(process.resourceUsage().maxRSS / 1024)),
    ]);
    console.error(rows.at(-1)?.join("  "));
  }
  await engine.close();
}

const header = ["rows/table", "endpoint + params", "p50 ms", "peak RSS MiB"];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
const line = (cells: string[]) =>
  `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
);
console.log(line(header));
console.log(line(widths.map((w) => "-".repeat(w))));
for (const row of rows) console.log(line(row));
