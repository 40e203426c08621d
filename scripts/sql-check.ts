// `npm run sql:check`: analyzes every endpoints/<name>/bigquery.sql on GoogleSQL's reference analyzer against
// the catalog from queries/schema, prints each output schema or the error at file:line:column, and
// exits non-zero when any file fails. Arguments, when given, are the .sql files to check instead.
import { readFileSync } from "node:fs";
import { relative } from "node:path";
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

const files = process.argv.slice(2);
const targets =
  files.length > 0 ? files : bigQueryEndpoints().map((e) => `${ENDPOINTS_DIR}${e}/bigquery.sql`);
const server = await GoogleSqlServer.start();
const engine = new GoogleSql(server.port);
let ok = true;
try {
  for (const file of targets) ok = (await check(engine, file)) && ok;
} finally {
  engine.close();
  await server.stop();
}
process.exitCode = ok ? 0 : 1;
