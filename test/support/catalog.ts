// The built-in endpoints (endpoints/) as the service loads them, for tests that go through each,
// a catalog with one query swapped, for a test that needs an answer no endpoint gives, and a request
// of an endpoint's SQL as the runner makes it, for tests that run an engine directly.
import {
  type Catalog,
  catalogOf,
  type EndpointDefinition,
  type EndpointSql,
} from "../../src/endpoints/catalog.ts";
import { builtInCatalog } from "../../src/endpoints/load-catalog.ts";
import type { Dialect, QueryRequest } from "../../src/engines/engine.ts";
import type { SqlParams } from "../../src/engines/sql-params.ts";

export const builtIn: Catalog = builtInCatalog();
export const catalog: readonly EndpointDefinition[] = builtIn.entries;

/** The built-in endpoint of that name or id; undefined when there is none. */
export const findEndpoint = (nameOrId: string) => builtIn.find(nameOrId);

/** The built-in endpoint of that name; a test naming another fails here. */
export function endpointNamed(name: string): EndpointDefinition {
  const endpoint = builtIn.find(name);
  if (!endpoint) throw new Error(`no built-in endpoint ${name}`);
  return endpoint;
}

/** The built-in catalog with `name`'s query on `dialect` replaced by `sql`. */
export function withQuery(name: string, dialect: Dialect, sql: string): Catalog {
  return catalogOf(
    catalog.map((endpoint) =>
      endpoint.name === name
        ? {
            ...endpoint,
            sql: { ...endpoint.sql, [dialect]: { ...endpoint.sql[dialect], query: sql } },
          }
        : endpoint,
    ),
  );
}

/**
 * A request of `name`'s SQL on `dialect` (its query, or its window or rest query), with the window
 * its entry binds, as the service's runner makes it.
 */
export function endpointRequest(
  name: string,
  dialect: Dialect,
  params: SqlParams,
  use: keyof EndpointSql = "query",
): QueryRequest {
  const endpoint = endpointNamed(name);
  const sql = endpoint.sql[dialect]?.[use];
  if (sql === undefined) throw new Error(`${name} has no ${use} SQL for ${dialect}`);
  return { endpoint: name, sql, window: endpoint.window, params, maxRows: endpoint.maxRows };
}
