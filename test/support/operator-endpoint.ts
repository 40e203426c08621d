// An operator's endpoint folder written by a test: a minimal definition (no parameters unless
// given, one STRING column unless given) and its DuckDB SQL, as ENDPOINTS_DIR would hold it.
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface OperatorEndpoint {
  /** duckdb.sql. */
  sql: string;
  /** The definition's `params`. */
  params?: Record<string, unknown>;
  /** The definition's `columns`; default one STRING column, `text`. */
  columns?: { name: string; type: string }[];
  /** Other files of the folder, by name. */
  files?: Record<string, string>;
}

/** Writes `<dir>/<name>/` and returns its path. */
export function writeEndpoint(dir: string, name: string, endpoint: OperatorEndpoint): string {
  const folder = join(dir, name);
  mkdirSync(folder, { recursive: true });
  const definition = {
    name,
    id: randomUUID(),
    description: `The test endpoint ${name}.`,
    params: endpoint.params ?? {},
    example: {},
    columns: endpoint.columns ?? [{ name: "text", type: "STRING" }],
    max_rows: 100,
  };
  // JSON is YAML.
  writeFileSync(join(folder, "endpoint.yaml"), JSON.stringify(definition, null, 2));
  writeFileSync(join(folder, "duckdb.sql"), endpoint.sql);
  for (const [file, text] of Object.entries(endpoint.files ?? {})) {
    writeFileSync(join(folder, file), text);
  }
  return folder;
}
