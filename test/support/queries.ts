// The saved BigQuery SQL of each endpoint, read from queries/bigquery as the service ships it.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const BIGQUERY_DIR = fileURLToPath(new URL("../../queries/bigquery/", import.meta.url));

/** Endpoint names that have a BigQuery SQL file, sorted. */
export function bigQueryEndpoints(): string[] {
  return readdirSync(BIGQUERY_DIR)
    .filter((file) => file.endsWith(".sql"))
    .map((file) => file.replace(/\.sql$/, ""))
    .sort();
}

/** The BigQuery SQL text of one endpoint. */
export function bigQuerySql(endpoint: string): string {
  return readFileSync(`${BIGQUERY_DIR}${endpoint}.sql`, "utf8");
}
