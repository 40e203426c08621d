// A LOCAL_DATA export larger than one batch (bq extract writes files of up to about 1 GB) is
// appended a time slice at a time, all in one transaction: its rows end up in timestamp order
// whatever order the file holds them in, the derived tables hold exactly what they give, the file
// is recorded once, and a file that changes while it is read leaves nothing of any slice behind.
import { statSync } from "node:fs";
import { mkdtemp, rm, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadData } from "../../src/engines/duckdb/data.ts";
import { BATCH_ROWS, createDerivedTables } from "../../src/engines/duckdb/derived.ts";
import {
  FileChangedError,
  loadExport,
  recordedFiles,
} from "../../src/engines/duckdb/local-data.ts";
import { createTableSql } from "../../src/engines/duckdb/tables.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { sourceTables } from "../../src/schema.ts";

// Records over two days, shuffled, and a few without a timestamp: several slices.
const RECORDS = BATCH_ROWS + BATCH_ROWS / 4;
const UNTIMED = 3;

let folder: string;
let engine: DuckDbEngine;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), "duckdb-large-"));
  engine = await createDuckDbEngine({ dataFolders: [folder] });
});
afterEach(async () => {
  await engine.close();
  await rm(folder, { recursive: true, force: true });
});

const query = async (sql: string) =>
  (await engine.run({ endpoint: "test", sql, params: {}, maxRows: 1000 })).rows;

/** A Parquet export of function_edge_logs, as BigQuery writes it: not in timestamp order. */
async function writeExport(file: string): Promise<void> {
  const scratch = await createDuckDbEngine({ dataFolders: [dirname(file)] });
  const connection = await scratch.connect();
  try {
    const table = sourceTables().find((t) => t.name === "function_edge_logs");
    if (!table) throw new Error("no function_edge_logs schema");
    await connection.run(createTableSql(table));
    await connection.run(`INSERT INTO function_edge_logs
      SELECT 'r' || i,
        CASE WHEN i >= ${UNTIMED} THEN TIMESTAMPTZ '2026-11-20 00:00:00+00' + to_seconds(i % 172800) END,
        'GET | 200',
        [{'project_ref': 'p', 'function_id': 'f' || (i % 3), 'execution_time_ms': (i * 7919) % 100003 / 10,
          'response': [{'status_code': CASE WHEN i % 10 = 0 THEN 500 ELSE 200 END}]}]
      FROM range(${RECORDS}) AS r(i)
      ORDER BY hash(i)`);
    await connection.run(`COPY function_edge_logs TO '${file}' (FORMAT parquet)`);
  } finally {
    connection.closeSync();
    await scratch.close();
  }
}

describe("a LOCAL_DATA file larger than one batch", () => {
  it("is appended in timestamp order, derived in full and recorded once", async () => {
    const file = join(folder, "function_edge_logs-000000000000.parquet");
    await writeExport(file);
    const loaded = await loadData(engine, { localData: folder });
    expect(loaded.files).toEqual([{ table: "function_edge_logs", file, rows: RECORDS }]);
    expect(
      await query(`SELECT
        (SELECT count(*) FROM function_edge_logs) AS records,
        (SELECT count(*) FROM function_edge_logs WHERE timestamp IS NULL) AS untimed,
        (SELECT count(*) FROM (
          SELECT timestamp < lag(timestamp) OVER (ORDER BY rowid) AS back
          FROM function_edge_logs WHERE timestamp IS NOT NULL) WHERE back) AS records_back,
        (SELECT count(*) FROM (
          SELECT timestamp < lag(timestamp) OVER (ORDER BY rowid) AS back
          FROM function_invocations) WHERE back) AS invocations_back,
        (SELECT count(*) FROM function_invocations) AS invocations,
        (SELECT sum(invocations) FROM function_invocation_hours) AS summed,
        (SELECT sum(errors) FROM function_invocation_hours) AS errors,
        (SELECT count(*) FROM (SELECT unnest(execution_times) FROM function_invocation_values)) AS listed,
        (SELECT count(*) FROM function_invocation_hours) = (SELECT count(*) FROM function_invocation_values) AS same_groups,
        (SELECT rows FROM loaded_files) AS recorded`),
    ).toEqual([
      {
        records: RECORDS,
        untimed: UNTIMED,
        records_back: 0,
        invocations_back: 0,
        invocations: RECORDS - UNTIMED,
        summed: RECORDS - UNTIMED,
        // i % 10 = 0 for i >= UNTIMED
        errors: RECORDS / 10 - 1,
        listed: RECORDS - UNTIMED,
        same_groups: true,
        recorded: RECORDS,
      },
    ]);
    expect(
      await query("SELECT count(DISTINCT hour) AS hours FROM function_invocation_hours"),
    ).toEqual([{ hours: 48 }]);
  }, 120_000);

  it("leaves nothing of any slice behind when the file changes while it is read", async () => {
    const file = join(folder, "function_edge_logs-000000000000.parquet");
    await writeExport(file);
    const connection = await engine.connect();
    try {
      for (const table of sourceTables()) await connection.run(createTableSql(table));
      await createDerivedTables(connection);
      await recordedFiles(connection);
      const table = sourceTables().find((t) => t.name === "function_edge_logs");
      if (!table) throw new Error("no function_edge_logs schema");
      const load = loadExport(connection, table, file, statSync(file), async () => {
        const later = new Date(Date.now() + 60_000);
        await utimes(file, later, later);
      });
      await expect(load).rejects.toBeInstanceOf(FileChangedError);
    } finally {
      connection.closeSync();
    }
    expect(
      await query(`SELECT
        (SELECT count(*) FROM function_edge_logs) AS records,
        (SELECT count(*) FROM function_invocations) AS invocations,
        (SELECT count(*) FROM function_invocation_hours) AS hours,
        (SELECT count(*) FROM function_invocation_values) AS lists,
        (SELECT count(*) FROM loaded_files) AS recorded`),
    ).toEqual([{ records: 0, invocations: 0, hours: 0, lists: 0, recorded: 0 }]);
  }, 120_000);
});
