// logs.all's window narrows the rows before any filter runs: on DuckDB, each time bound (the later
// of the retention's edge and the start; the end, a page cursor, a resumed stream's position) is a
// filter of the table scan itself, so a filter's cost follows the window asked, not the retention.
// Read from the plan, not timed: figures are in docs/benchmarks.md (bench/filter-cost.ts).
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { endpointNamed } from "../support/catalog.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import { edgeLog, micros, PROJECT } from "../support/fixtures.ts";

const NOW = "2026-11-21T05:00:00Z";
const sql = (file: string) =>
  readFileSync(new URL(`../../endpoints/logs.all/${file}`, import.meta.url), "utf8");
const unbound = {
  project: PROJECT,
  project_tier: "PRO",
  iso_timestamp_start: null,
  iso_timestamp_end: null,
  status: "500,502,503,504,4xx",
  method: "GET,POST",
  path: null,
  search: null,
  search_regex: null,
};

let engine: DuckDbEngine;
beforeAll(async () => {
  engine = await createDuckDbEngine({ now: () => micros(NOW) });
  // Records on both sides of every bound: no plan is cut short by the table's statistics.
  const edgeLogs = [edgeLog("2025-01-01T00:00:00Z"), edgeLog(NOW), edgeLog("2027-01-01T00:00:00Z")];
  await replaceTables(engine, { edge_logs: edgeLogs });
});
afterAll(() => engine.close());

/** The filters the plan's table scan applies, its box drawing and line breaks taken out. */
async function scanFilters(query: string, params: Record<string, string | null>) {
  const { rows } = await engine.run({
    endpoint: "logs.all",
    window: endpointNamed("logs.all").window,
    sql: `EXPLAIN ${query}`,
    params,
    maxRows: 10,
  });
  const plan = rows.map((row) => String(row.explain_value)).join("");
  const scan = plan.slice(plan.indexOf("SEQ_SCAN"));
  return scan.slice(scan.indexOf("Filters:")).replace(/[│─┌┐└┘┬┴\s]/g, "");
}

describe("logs.all's time bounds on DuckDB", () => {
  it("are filters of the scan: the start, or the retention's edge when later, and the end and cursor", async () => {
    const page = await scanFilters(sql("duckdb.sql"), {
      ...unbound,
      iso_timestamp_start: "2026-11-21T04:59:00Z",
      iso_timestamp_end: "2026-11-21T04:59:50Z",
      cursor_timestamp: "2026-11-21T04:59:40Z",
      cursor_id: "x",
    });
    expect(page).toContain("timestamp>'2026-11-2104:59:00+00'");
    expect(page).toContain("timestamp<='2026-11-2104:59:40+00'");
    const retention = await scanFilters(sql("duckdb.sql"), {
      ...unbound,
      iso_timestamp_start: "2026-01-01T00:00:00Z",
      cursor_timestamp: null,
      cursor_id: null,
    });
    expect(retention).toContain("timestamp>'2026-11-1405:00:00+00'");
  });

  it("are filters of the scan in the window a follow stream or settled run reads, its resume position included", async () => {
    const window = { ...unbound, iso_timestamp_start: "2026-11-21T04:00:00Z" };
    const fresh = await scanFilters(sql("window.duckdb.sql"), {
      ...window,
      iso_timestamp_end: "2026-11-21T04:30:00Z",
      after_timestamp: null,
      after_id: null,
    });
    expect(fresh).toContain("timestamp>'2026-11-2104:00:00+00'");
    expect(fresh).toContain("timestamp<='2026-11-2104:30:00+00'");
    // A resumed stream's position, later than the start, is the bound the scan keeps.
    const resumed = await scanFilters(sql("window.duckdb.sql"), {
      ...window,
      after_timestamp: "2026-11-21T04:10:00Z",
      after_id: "x",
    });
    // From the position on: after the microsecond before it.
    expect(resumed).toContain("timestamp>'2026-11-2104:09:59.999999+00'");
  });
});
