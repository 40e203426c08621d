// The embedded engine at 1 M generated rows per table, disk-backed under a memory limit (the
// bench's 10 M and 100 M runs are not CI's): every endpoint answers, and the answers read from the
// derived tables equal the same statistics computed the plain way, straight from the BigQuery-shaped
// source tables, p95/p99 included (exact ranks over hundreds of thousands of values a bucket).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_PROJECTS, generateLogs } from "../../src/engines/duckdb/demo-data.ts";
import { createTableSql } from "../../src/engines/duckdb/tables.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import type { Row } from "../../src/engines/engine.ts";
import { sourceTables } from "../../src/schema.ts";
import { parseIsoTimestamp } from "../../src/time.ts";
import { endpointRequest } from "../support/catalog.ts";

const ROWS = 1_000_000;
const NOW = parseIsoTimestamp("2026-11-21T05:17:42.123456Z") as bigint;
const project = DEMO_PROJECTS[0];

let folder: string;
let engine: DuckDbEngine;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "duckdb-scale-"));
  engine = await createDuckDbEngine({
    path: join(folder, "scale.duckdb"),
    memoryLimit: "1GB",
    now: () => NOW,
  });
  const connection = await engine.connect();
  try {
    for (const table of sourceTables()) await connection.run(createTableSql(table));
    await generateLogs(connection, { now: NOW, days: 7, edgeLogs: ROWS, functionEdgeLogs: ROWS });
  } finally {
    connection.closeSync();
  }
}, 300_000);
afterAll(async () => {
  await engine.close();
  await rm(folder, { recursive: true, force: true });
});

const endpoint = async (name: string, params: Record<string, string | null>) =>
  (await engine.run(endpointRequest(name, "duckdb", params))).rows;
const plain = async (sql: string) =>
  (await engine.run({ endpoint: "plain", sql, params: {}, maxRows: 1000 })).rows;

/** Equal rows; averages to 1e-9 relative, as sums of a million floats depend on their order. */
function expectSameStats(actual: Row[], expected: Row[]) {
  const withoutAverage = (rows: Row[]) => rows.map(({ avg_execution_time: _, ...rest }) => rest);
  expect(withoutAverage(actual)).toEqual(withoutAverage(expected));
  actual.forEach((row, i) => {
    const a = row.avg_execution_time as number;
    const e = expected[i]?.avg_execution_time as number;
    expect(Math.abs(a - e)).toBeLessThanOrEqual(1e-9 * Math.abs(e));
  });
}

describe(`DuckDB at ${ROWS} rows per table`, () => {
  it.each([
    ["7day", "day", "7 days", null],
    ["1day", "hour", "1 day", null],
    ["1hr", "minute", "1 hour", "hello-world"],
  ])(
    "functions.invocation-stats %s equals the plain computation over the source rows",
    async (interval, unit, span, functionId) => {
      const expected = await plain(`
      SELECT date_trunc('${unit}', timestamp) AS timestamp,
        min(m.execution_time_ms) AS min_execution_time,
        max(m.execution_time_ms) AS max_execution_time,
        avg(m.execution_time_ms) AS avg_execution_time,
        list_sort(list(m.execution_time_ms))[(95 * (count(m.execution_time_ms) - 1)) // 100 + 1] AS p95_execution_time,
        list_sort(list(m.execution_time_ms))[(99 * (count(m.execution_time_ms) - 1)) // 100 + 1] AS p99_execution_time,
        count(id) AS count,
        count(id) FILTER (WHERE m.response[1].status_code >= 400) AS error_count
      FROM (SELECT id, timestamp, unnest(metadata) AS m FROM function_edge_logs)
      WHERE timestamp >= date_trunc('${unit}', $now - INTERVAL ${span})
        AND m.project_ref = '${project}'
        ${functionId ? `AND m.function_id = '${functionId}'` : ""}
      GROUP BY 1 ORDER BY 1`);
      const actual = await endpoint("functions.invocation-stats", {
        project,
        function_id: functionId,
        interval,
      });
      expect(actual.length).toBeGreaterThan(1);
      expectSameStats(actual, expected);
    },
  );

  it.each([
    ["daily", "day", "7 days"],
    ["hourly", "hour", "1 hour"],
  ])(
    "usage.api-counts %s equals the plain computation over the source rows",
    async (interval, unit, span) => {
      const expected = await plain(`
      SELECT CAST(date_trunc('${unit}', timestamp) AS TIMESTAMP) AS timestamp,
        count(*) FILTER (WHERE contains(r.path, '/rest')) AS total_rest_requests,
        count(*) FILTER (WHERE contains(r.path, '/storage')) AS total_storage_requests,
        count(*) FILTER (WHERE contains(r.path, '/auth')) AS total_auth_requests,
        count(*) FILTER (WHERE contains(r.path, '/realtime')) AS total_realtime_requests
      FROM (SELECT timestamp, unnest(m.request) AS r FROM (SELECT timestamp, unnest(metadata) AS m FROM edge_logs))
      WHERE timestamp >= $now - INTERVAL ${span} AND regexp_matches(r.url, '^https://${project}\\.')
      GROUP BY 1 ORDER BY 1`);
      const actual = await endpoint("usage.api-counts", {
        project: `^https://${project}\\.`,
        interval,
      });
      expect(actual.length).toBeGreaterThan(0);
      expect(actual).toEqual(expected);
    },
  );

  it("serves logs.all's newest 100 records", async () => {
    const rows = await endpoint("logs.all", {
      project,
      project_tier: "PRO",
      iso_timestamp_start: null,
      iso_timestamp_end: null,
      status: null,
      method: null,
      path: null,
      search: null,
      search_regex: null,
      cursor_timestamp: null,
      cursor_id: null,
    });
    expect(rows).toHaveLength(100);
  });
});
