// The endpoints a running engine serves. An endpoint without SQL for the engine is not served
// (said once, at load); an operator's SQL is served only when the engine's own parser finds it one
// SELECT and its planner plans it (DuckDB's, BigQuery's dry run, which bills nothing), with no side
// effect: the service reads, and a script or a statement that writes is refused before anyone can
// call it. Its result must also be the row the definition declares (column-check.ts): that row is
// what /openapi.json tells every client to expect.
import { join, resolve, sep } from "node:path";
import { EngineError, type QueryEngine } from "../engines/engine.ts";
import { type Catalog, catalogOf, type EndpointDefinition, type EndpointSql } from "./catalog.ts";
import { columnMismatches } from "./column-check.ts";
import type { RowSchema } from "./columns.ts";
import { BUILT_IN_ENDPOINTS, CatalogError, loadCatalog } from "./load-catalog.ts";

export interface ServedCatalog {
  /** What the engine serves, when nothing was refused. */
  catalog: Catalog;
  /** One line per SQL file refused, naming it; any refuses the whole catalog. */
  problems: string[];
  /** One line per endpoint the engine has no SQL for. */
  notServed: string[];
}

/**
 * `loaded` as `engine` serves it; the SQL of the endpoints `checked` picks is inspected by the
 * engine (the built-in endpoints' is proven by the test suite instead, and startup makes no dry run
 * for it).
 */
export async function servedOn(
  loaded: Catalog,
  engine: QueryEngine,
  checked: (endpoint: EndpointDefinition) => boolean,
): Promise<ServedCatalog> {
  const served: EndpointDefinition[] = [];
  const problems: string[] = [];
  const notServed: string[] = [];
  for (const endpoint of loaded.entries) {
    const sql = endpoint.sql[engine.dialect];
    if (sql === undefined) {
      notServed.push(
        `${endpoint.folder ?? endpoint.name}: no ${engine.dialect}.sql, so ${endpoint.name} is not served on ${engine.dialect}`,
      );
      continue;
    }
    if (checked(endpoint)) problems.push(...(await refusals(endpoint, sql, engine)));
    served.push(endpoint);
  }
  return { catalog: catalogOf(served), problems, notServed };
}

/**
 * The endpoints of the built-in folder and `operatorDirs` (ENDPOINTS_DIR) as `engine` serves them,
 * operators' SQL checked by the engine; throws CatalogError listing every problem.
 */
export async function loadServedCatalog(
  operatorDirs: readonly string[],
  engine: QueryEngine,
): Promise<Omit<ServedCatalog, "problems">> {
  const loaded = loadCatalog([BUILT_IN_ENDPOINTS, ...operatorDirs]);
  const served = await servedOn(loaded, engine, (endpoint) => !builtIn(endpoint));
  if (served.problems.length > 0) throw new CatalogError(served.problems);
  return served;
}

const builtIn = (endpoint: EndpointDefinition) =>
  endpoint.folder !== undefined &&
  resolve(endpoint.folder).startsWith(resolve(BUILT_IN_ENDPOINTS) + sep);

/**
 * Each of the endpoint's SQL files for the engine that is not one read-only query, or whose result
 * is not the declared row.
 */
async function refusals(
  endpoint: EndpointDefinition,
  sql: EndpointSql,
  engine: QueryEngine,
): Promise<string[]> {
  const problems: string[] = [];
  for (const [use, text] of Object.entries(sql)) {
    const name = `${use === "query" ? "" : `${use}.`}${engine.dialect}.sql`;
    const file =
      endpoint.folder === undefined ? `${endpoint.name}/${name}` : join(endpoint.folder, name);
    const problem = await sqlProblem(engine, file, text, endpoint.columns);
    if (problem !== undefined) problems.push(problem);
  }
  return problems;
}

/**
 * Why `engine` refuses the SQL `text` of `file` (not one read-only query, or not planned; with
 * `row`, a result other than that row where the engine can tell), as one line naming the file;
 * undefined when it takes it, or cannot inspect SQL.
 */
export async function sqlProblem(
  engine: QueryEngine,
  file: string,
  text: string,
  row?: RowSchema,
): Promise<string | undefined> {
  if (!engine.inspect) return undefined;
  try {
    const { kind, columns } = await engine.inspect(text);
    if (kind !== "SELECT") return `${file}: ${described(kind)}, not one read-only query (SELECT)`;
    const mismatches = row && columns ? columnMismatches(row, columns) : [];
    if (mismatches.length === 0) return undefined;
    return `${file}: its result is not the row endpoint.yaml declares in columns: ${mismatches.join("; ")}`;
  } catch (error) {
    if (!(error instanceof EngineError)) throw error;
    const said = (error.detail?.cause ?? error.message).replace(/\s+/g, " ").trim();
    return `${file}: ${engine.dialect === "bigquery" ? "BigQuery's dry run" : "DuckDB"}: ${said}`;
  }
}

/** A statement kind of StatementShape, as the problem line says it. */
function described(kind: string): string {
  if (kind === "SCRIPT") return "is more than one statement";
  // DuckDB's parser says only that one of its statements is not a SELECT.
  if (kind === "OTHER") return "holds a statement other than SELECT";
  return `is a ${kind} statement`;
}
