// log-query export at scale: a backlog of N demo edge-log records (7 days, two projects) on the
// embedded engine in a database file, exported by the command-line client from a first run with
// --since 7d to NDJSON in a file; records a second, and the engine queries of a run when nothing is
// new since the last (target: 1). The client runs in a process of its own, as a cron job runs it.
// Run: node_modules/.bin/node bench/export.ts [--rows 1000000] [--disk DIR]
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import { serviceApp } from "../src/app.ts";
import { DEMO_PROJECTS, generateLogs } from "../src/engines/duckdb/demo-data.ts";
import { createTableSql } from "../src/engines/duckdb/tables.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import type { QueryEngine } from "../src/engines/engine.ts";
import { sourceTables } from "../src/schema.ts";
import { dateToMicros } from "../src/time.ts";
import { configFrom } from "../test/support/config-from.ts";

const API_KEY = "bench-key-0123456789abcdef";
const CLI = new URL("../bin/log-query.js", import.meta.url).pathname;
const { values: args } = parseArgs({
  options: {
    rows: { type: "string", default: "1000000" },
    disk: { type: "string", default: tmpdir() },
  },
});
const rows = Number(args.rows);

const folder = mkdtempSync(join(String(args.disk), "export-bench-"));
const now = dateToMicros(new Date());
const engine = await createDuckDbEngine({ path: join(folder, "logs.duckdb"), now: () => now });
try {
  const connection = await engine.connect();
  for (const table of sourceTables()) await connection.run(createTableSql(table));
  await generateLogs(connection, { now, days: 7, edgeLogs: rows, functionEdgeLogs: 1_000 });
  connection.closeSync();

  let queries = 0;
  const counted: QueryEngine = {
    ...engine,
    run: (request) => {
      // A settled run's queries are its catch-up's (export) and any poll (follow).
      if (request.trigger === "export" || request.trigger === "follow") queries++;
      return engine.run(request);
    },
  };
  // The service's clock stands still with the data's: a run after the first has nothing new to settle.
  const app = await serviceApp(
    configFrom({ auth: { apiKeys: [API_KEY] }, rateLimitPerMinute: 1_000_000 }),
    { engine: counted, follow: { clock: () => now } },
  );
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  const exportRun = async () => {
    const before = queries;
    const started = performance.now();
    await promisify(execFile)(
      process.execPath,
      [
        CLI,
        "export",
        "--url",
        url,
        "--state",
        join(folder, "state.json"),
        "--out",
        join(folder, "out.ndjson"),
        "--project",
        DEMO_PROJECTS[0],
        "--tier",
        "PRO",
        "--since",
        "7d",
      ],
      { env: { PATH: process.env.PATH, LOG_QUERY_KEY: API_KEY }, maxBuffer: 1 << 20 },
    );
    return { seconds: (performance.now() - started) / 1000, queries: queries - before };
  };
  const backlog = await exportRun();
  const exported = readFileSync(join(folder, "out.ndjson"), "utf8").split("\n").length - 1;
  const idle = [await exportRun(), await exportRun(), await exportRun()];
  await app.close();

  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load average ${loadavg()[0]?.toFixed(1)}; ${rows} edge-log records generated, database on disk`,
  );
  console.log("\n| export run | records | seconds | records/s | engine queries |");
  console.log("|---|---:|---:|---:|---:|");
  console.log(
    `| first run, --since 7d (the backlog) | ${exported} | ${backlog.seconds.toFixed(1)} | ${Math.round(exported / backlog.seconds)} | ${backlog.queries} |`,
  );
  for (const [i, run] of idle.entries()) {
    console.log(
      `| run ${i + 2}, nothing new | 0 | ${run.seconds.toFixed(2)} | — | ${run.queries} |`,
    );
  }
} finally {
  await engine.close();
  rmSync(folder, { recursive: true, force: true });
}
