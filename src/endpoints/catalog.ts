// The endpoints, as the service reads them: each one's compiled entry (compile.ts, from its folder
// under endpoints/, load-catalog.ts), and the catalog object that holds them. Every surface reads
// an entry; none names a particular endpoint or its parameters.
import type { CachePolicy } from "../cache/result-cache.ts";
import type { Dialect } from "../engines/engine.ts";
import type { WindowBinding } from "../engines/sql-params.ts";
import type { RowSchema } from "./columns.ts";
import type { ParamsSchema } from "./params.ts";
import type { RangeContract } from "./time-range.ts";

/**
 * The contract of a paged endpoint: its SQL orders by (timestamp, id) as `order` says, takes
 * `cursor` and answers at most `pageSize` rows; a full page links to the next.
 */
export interface PagingContract {
  pageSize: number;
  order: readonly string[];
  /** The parameters that bound the window: start (exclusive), end (inclusive), since (now − it). */
  window: { start: string; end: string; since?: string | undefined };
  /** How far back the window reaches, by the value of `param`; `otherwise` for any other value. */
  retention: { param: string; days: Readonly<Record<string, number>>; otherwise: number };
  /** Its new records can be streamed as they arrive, at <path>/follow. */
  follow: boolean;
}

/** A follow stream runs on past any end: it takes neither the window's end nor a page's cursor. */
export const notFollowed = (paging: PagingContract) => [paging.window.end, "cursor"];

/** An endpoint's SQL for one engine: its query, and the queries a paged endpoint needs beside it. */
export interface EndpointSql {
  query: string;
  /** A followable endpoint's catch-up or settled run's window: oldest first, no LIMIT. */
  window?: string;
  /** A paged endpoint's rest of a page walk, from a cursor, with no LIMIT. */
  rest?: string;
}

/** One endpoint, compiled once from its definition. */
export interface EndpointDefinition {
  name: string;
  id: string;
  /**
   * Which version of it this is: a digest of its definition and SQL, so that answers cached by one
   * version (here or by a replica over Redis) are never served for another after a reload.
   */
  revision: string;
  description: string;
  /** The validator of its query string: what the SQL binds, or one detail per bad parameter. */
  params: ParamsSchema;
  /** The names of the parameters it takes. */
  paramNames: ReadonlySet<string>;
  /** Those that are regular expressions rather than plain values. */
  patternParams: ReadonlySet<string>;
  /** The JSON Schema of its query string (every parameter a string). */
  paramsJsonSchema: {
    properties: Record<
      string,
      {
        description?: string;
        enum?: string[];
        format?: string;
        examples?: string[];
        default?: string;
      }
    >;
    required?: string[];
  };
  /** A valid query string as a record: shown in the catalog listing, and the base of generated tests. */
  example: Readonly<Record<string, string>>;
  /** One result row: the SQL's output columns, in order (see columns.ts). */
  columns: RowSchema;
  /** The names of the columns, in the SQL's order. */
  columnNames: readonly string[];
  /**
   * The columns that hold an instant (TIMESTAMP, or DATETIME, which is UTC by the spec), in the
   * SQL's order: what `time_format` presents, and what the listing calls `time_columns`.
   */
  timeColumns: readonly string[];
  maxRows: number;
  paging?: PagingContract;
  /** Absent: every request runs the query. */
  cache?: CachePolicy;
  /** Its time buckets: it answers any range (`from`, `to`) in them (time-range.ts). */
  range?: RangeContract;
  /** The time window the engine binds (window_start, ...), given with each of its queries. */
  window: WindowBinding;
  /** Its SQL per engine; an engine it has none for does not serve it. */
  sql: Partial<Record<Dialect, EndpointSql>>;
  /** The folder it was read from, as problem lines name it. */
  folder?: string;
}

/** An endpoint whose answers are cached: what a watch watches and the cache keeps. */
export type CachedEndpoint = EndpointDefinition & { cache: CachePolicy };

/** The endpoints a service serves: built at startup, replaced whole on a reload. */
export interface Catalog {
  readonly entries: readonly EndpointDefinition[];
  /** By name or by UUID (in either case); undefined when neither matches. */
  find(nameOrId: string): EndpointDefinition | undefined;
}

export function catalogOf(entries: readonly EndpointDefinition[]): Catalog {
  const byName = new Map(entries.map((endpoint) => [endpoint.name, endpoint]));
  const byId = new Map(entries.map((endpoint) => [endpoint.id, endpoint]));
  return {
    entries,
    find: (nameOrId) => byName.get(nameOrId) ?? byId.get(nameOrId.toLowerCase()),
  };
}

/**
 * The catalog a running service serves: every surface holds this one object, and a reload
 * (SIGHUP) puts the new endpoints in it at once. A request that found an entry keeps that entry.
 */
export class LiveCatalog implements Catalog {
  #current: Catalog;
  readonly #listeners = new Set<(next: Catalog) => void>();

  constructor(initial: Catalog) {
    this.#current = initial;
  }

  get entries(): readonly EndpointDefinition[] {
    return this.#current.entries;
  }

  find(nameOrId: string): EndpointDefinition | undefined {
    return this.#current.find(nameOrId);
  }

  /** Serves `next` from now on, then tells the listeners (in the same turn). */
  replace(next: Catalog): void {
    this.#current = next;
    for (const listener of this.#listeners) listener(next);
  }

  /** Calls `listener` after each replace, until the returned function is called. */
  onReplace(listener: (next: Catalog) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/**
 * Why what was made for `endpoint` (a stream, warming) ends once `catalog` is served: the endpoint
 * went, or it is another version of it; undefined when `catalog` serves it as it was.
 */
export function endpointGone(
  catalog: Catalog,
  endpoint: EndpointDefinition,
): "endpoint_removed" | "endpoint_changed" | undefined {
  const now = catalog.find(endpoint.id);
  if (!now) return "endpoint_removed";
  return now.revision === endpoint.revision ? undefined : "endpoint_changed";
}
