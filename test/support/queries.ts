// The saved BigQuery SQL of each endpoint, read from queries/bigquery as the service ships it, and
// run on the reference engine.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { SqlParams } from "../../src/endpoints/sql-params.ts";
import { withTimeWindow } from "../../src/endpoints/window.ts";
import { parseIsoTimestamp } from "../../src/time.ts";
import type { Params, QueryResult, Row } from "./googlesql.ts";
import { referenceEngine } from "./reference-engine.ts";

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

/**
 * `params` with the time window the BigQuery engine binds for `query` (an endpoint name, or a
 * variant such as window/logs.all) at `now`: the service's own computation (src/endpoints/window.ts),
 * which the SQL tests prove together with the SQL against answers they compute themselves.
 */
export function windowed(query: string, params: Params, now: string): SqlParams {
  const endpoint = query.slice(query.lastIndexOf("/") + 1);
  const micros = parseIsoTimestamp(now);
  if (micros === undefined) throw new Error(`not an instant: ${now}`);
  return withTimeWindow(endpoint, params as SqlParams, micros);
}

/**
 * Runs one endpoint's BigQuery SQL on the reference engine over rows of one table, with default
 * params the caller may override, at a pinned `now`. Closes its client after the test file.
 */
export function endpointQuery(endpoint: string, table: string, defaults: Params, now: string) {
  const engine = referenceEngine();
  const sql = bigQuerySql(endpoint);
  return (rows: Row[], params: Params = {}): Promise<QueryResult> =>
    engine.query(sql, {
      tables: { [table]: rows },
      params: windowed(endpoint, { ...defaults, ...params }, now),
      now,
    });
}
