// The source tables as BigQuery describes them (queries/schema/*.json, the `bq show --schema`
// form): the one definition the DuckDB tables, the data loaders and the test harness are built from.
import { readdirSync, readFileSync } from "node:fs";

const SCHEMA_DIR = new URL("../queries/schema/", import.meta.url);

export interface SchemaField {
  name: string;
  type: string;
  mode?: "NULLABLE" | "REQUIRED" | "REPEATED";
  fields?: SchemaField[];
}

export interface SourceTable {
  name: string;
  fields: SchemaField[];
}

/** Every table of queries/schema, sorted by name. */
export function sourceTables(): SourceTable[] {
  return readdirSync(SCHEMA_DIR)
    .filter((file) => file.endsWith(".json"))
    .sort()
    .map((file) => ({
      name: file.replace(/\.json$/, ""),
      fields: JSON.parse(readFileSync(new URL(file, SCHEMA_DIR), "utf8")) as SchemaField[],
    }));
}
