// `node src/demo-exports.ts <folder>`: writes the demo logs as exports (one Parquet file per table)
// into <folder>, for replicas that share a cache to serve the same data through LOCAL_DATA. A folder
// that already holds exports is left as it is, so restarting the replicas keeps their data.
import { mkdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { DEMO_SIZE, generateLogs } from "./engines/duckdb/demo-data.ts";
import { exportFiles } from "./engines/duckdb/local-data.ts";
import { createTableSql, quoteIdent } from "./engines/duckdb/tables.ts";
import { createDuckDbEngine } from "./engines/duckdb.ts";
import { sourceTables } from "./schema.ts";
import { dateToMicros } from "./time.ts";

const folder = process.argv[2];
if (!folder) {
  process.stderr.write("usage: node src/demo-exports.ts <folder>\n");
  process.exit(2);
}
mkdirSync(folder, { recursive: true });
if (exportFiles(folder, sourceTables()).size > 0) {
  process.stdout.write(`${folder} already holds exports; left as they are\n`);
  process.exit(0);
}

const engine = await createDuckDbEngine({ dataFolders: [folder] });
const connection = await engine.connect();
try {
  for (const table of sourceTables()) await connection.run(createTableSql(table));
  await generateLogs(connection, { now: dateToMicros(new Date()), ...DEMO_SIZE });
  for (const table of sourceTables()) {
    // Written aside, then renamed: a replica starting meanwhile never reads half a file.
    const target = join(folder, `${table.name}.parquet`);
    const partial = `${target}.partial`;
    await connection.run(
      `COPY ${quoteIdent(table.name)} TO '${partial.replaceAll("'", "''")}' (FORMAT parquet)`,
    );
    renameSync(partial, target);
  }
  process.stdout.write(`demo logs written to ${folder}\n`);
} finally {
  connection.closeSync();
  await engine.close();
}
