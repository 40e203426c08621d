// `npm run sql:check`: analyzes every endpoints/<name>/bigquery.sql on GoogleSQL's reference analyzer against
// the catalog from queries/schema, prints each output schema or the error at file:line:column, and
// exits non-zero when any file fails. Arguments, when given, are the .sql files to check instead; a
// DuckDB one (named *duckdb.sql) is checked as the service checks an operator's: one SELECT by
// DuckDB's parser, planned over the source tables, nothing run.
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { sqlProblem } from "../src/endpoints/served-catalog.ts";
import { loadData } from "../src/engines/duckdb/data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../src/engines/duckdb.ts";
import {
  type Column,
  GoogleSql,
  GoogleSqlError,
  GoogleSqlServer,
} from "../test/support/googlesql.ts";
import { bigQueryEndpoints, ENDPOINTS_DIR } from "../test/support/queries.ts";

type TypeProto = Column["type"];

/** BigQuery's spelling of a type: FLOAT64, ARRAY<STRUCT<status_code INT64>>. */
function typeName(type: TypeProto): string {
  switch (type.type_kind) {
    case "TYPE_DOUBLE":
      return "FLOAT64";
    case "TYPE_ARRAY":
      return `ARRAY<${typeName(type.array_type?.element_type as TypeProto)}>`;
    case "TYPE_STRUCT": {
      const fields = type.struct_type?.field ?? [];
      return `STRUCT<${fields.map((f) => `${f.field_name} ${typeName(f.field_type)}`).join(", ")}>`;
    }
    default:
      return type.type_kind.replace(/^TYPE_/, "");
  }
}

async function check(engine: GoogleSql, file: string): Promise<boolean> {
  const name = relative(process.cwd(), file);
  try {
    const columns = await engine.analyze(readFileSync(file, "utf8"));
    console.log(`${name}: ok`);
    for (const column of columns) console.log(`  ${column.name}: ${typeName(column.type)}`);
    return true;
  } catch (error) {
    const at =
      error instanceof GoogleSqlError && error.line ? `:${error.line}:${error.column}` : "";
    const message = error instanceof Error ? error.message : String(error);
    console.error(`${name}${at}: ${message.replace(/\s*\[at \d+:\d+\]$/, "")}`);
    return false;
  }
}

async function checkDuckDb(engine: DuckDbEngine, file: string): Promise<boolean> {
  const name = relative(process.cwd(), file);
  const problem = await sqlProblem(engine, name, readFileSync(file, "utf8"));
  if (problem === undefined) console.log(`${name}: ok`);
  else console.error(problem);
  return problem === undefined;
}

const files = process.argv.slice(2);
const targets =
  files.length > 0 ? files : bigQueryEndpoints().map((e) => `${ENDPOINTS_DIR}${e}/bigquery.sql`);
const isDuckDb = (file: string) => file.endsWith("duckdb.sql");
let ok = true;
const duckDbFiles = targets.filter(isDuckDb);
if (duckDbFiles.length > 0) {
  const engine = await createDuckDbEngine();
  try {
    await loadData(engine, { demoData: false });
    for (const file of duckDbFiles) ok = (await checkDuckDb(engine, file)) && ok;
  } finally {
    await engine.close();
  }
}
const bigQueryFiles = targets.filter((file) => !isDuckDb(file));
if (bigQueryFiles.length > 0) {
  const server = await GoogleSqlServer.start();
  const engine = new GoogleSql(server.port);
  try {
    for (const file of bigQueryFiles) ok = (await check(engine, file)) && ok;
  } finally {
    engine.close();
    await server.stop();
  }
}
process.exitCode = ok ? 0 : 1;
