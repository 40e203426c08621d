// The saved BigQuery SQL of each endpoint, read from its folder (endpoints/<name>/) as the service
// ships it, and run on the reference engine.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { SqlParams } from "../../src/engines/sql-params.ts";
import { parseIsoTimestamp } from "../../src/time.ts";
import { endpointNamed } from "./catalog.ts";
import type { Params, QueryResult, Row } from "./googlesql.ts";
import { referenceEngine } from "./reference-engine.ts";

export const ENDPOINTS_DIR = fileURLToPath(new URL("../../endpoints/", import.meta.url));

/** Endpoint names that have a BigQuery SQL file, sorted. */
export function bigQueryEndpoints(): string[] {
  return readdirSync(ENDPOINTS_DIR)
    .filter((name) => existsSync(`${ENDPOINTS_DIR}${name}/bigquery.sql`))
    .sort();
}

/** Every BigQuery SQL file of every endpoint, as paths under endpoints/ (logs.all/rest.bigquery.sql). */
export function bigQueryFiles(): string[] {
  return readdirSync(ENDPOINTS_DIR, { recursive: true, encoding: "utf8" })
    .filter((file) => /(^|[/.])bigquery\.sql$/.test(file))
    .sort();
}

/**
 * Where a query's BigQuery SQL is: an endpoint name (its query), or a use and a name (window/logs.all:
 * the window query of logs.all).
 */
function queryFile(query: string): { endpoint: string; path: string } {
  const slash = query.indexOf("/");
  const endpoint = query.slice(slash + 1);
  const file = slash === -1 ? "bigquery.sql" : `${query.slice(0, slash)}.bigquery.sql`;
  return { endpoint, path: `${ENDPOINTS_DIR}${endpoint}/${file}` };
}

/** The BigQuery SQL text of one endpoint, or of another of its queries (window/logs.all). */
export function bigQuerySql(query: string): string {
  return readFileSync(queryFile(query).path, "utf8");
}

/**
 * `params` with the time window the BigQuery engine binds for `query` (an endpoint name, or a
 * variant such as window/logs.all) at `now`: the service's own computation (the entry's window,
 * src/endpoints/window.ts), which the SQL tests prove together with the SQL against answers they
 * compute themselves.
 */
export function windowed(query: string, params: Params, now: string): SqlParams {
  const micros = parseIsoTimestamp(now);
  if (micros === undefined) throw new Error(`not an instant: ${now}`);
  return endpointNamed(queryFile(query).endpoint).window(params as SqlParams, micros);
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
