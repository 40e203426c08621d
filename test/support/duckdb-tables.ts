// Puts fixture rows into a DuckDB engine's source tables the way a user would: as NDJSON exports
// read by the LOCAL_DATA loader, which also derives the tables the queries read.
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { clearRecords, createDerivedTables } from "../../src/engines/duckdb/derived.ts";
import { loadLocalData } from "../../src/engines/duckdb/local-data.ts";
import { scratchFolder } from "../../src/engines/duckdb/sandbox.ts";
import { createTableSql } from "../../src/engines/duckdb/tables.ts";
import type { DuckDbEngine } from "../../src/engines/duckdb.ts";
import { sourceTables } from "../../src/schema.ts";
import type { Row } from "./googlesql.ts";

/** Replaces every source table's rows; tables left out end up empty. */
export async function replaceTables(
  engine: DuckDbEngine,
  tables: Record<string, Row[]>,
): Promise<void> {
  const connection = await engine.connect();
  // Where the engine may read: its own temp folder.
  const folder = await scratchFolder(connection, "duckdb-fixture-");
  try {
    for (const table of sourceTables()) await connection.run(createTableSql(table));
    await createDerivedTables(connection);
    await clearRecords(connection);
    await connection.run("DROP TABLE IF EXISTS loaded_files");
    for (const [name, rows] of Object.entries(tables)) {
      await writeFile(
        join(folder, `${name}.ndjson`),
        rows.map((row) => `${JSON.stringify(row)}\n`).join(""),
      );
    }
    // An empty export keeps the loader's "no files" check satisfied when every table is empty.
    if (Object.keys(tables).length === 0) await writeFile(join(folder, "edge_logs.ndjson"), "");
    await loadLocalData(connection, folder);
  } finally {
    connection.closeSync();
    await rm(folder, { recursive: true, force: true });
  }
}
