// The endpoints, as data. Adding one is an entry here plus queries/{bigquery,duckdb}/<name>.sql
// and its tests; nothing else changes.
import { z } from "zod";
import type { CachePolicy } from "../cache/result-cache.ts";
import {
  arrayOf,
  DATETIME,
  FLOAT64,
  INT64,
  nullable,
  type RowSchema,
  STRING,
  struct,
  TIMESTAMP,
} from "./columns.ts";
import {
  MAX_LIST_TERMS,
  oneOf,
  optionalDuration,
  optionalList,
  optionalRe2Pattern,
  optionalText,
  optionalTimestamp,
  type ParamsSchema,
  pagedParamsOf,
  paramsOf,
  re2Pattern,
  requiredText,
} from "./params.ts";

export interface EndpointDefinition {
  name: string;
  id: string;
  description: string;
  params: ParamsSchema;
  /** A valid query string as a record: shown in the catalog listing, and the base of generated tests. */
  example: Readonly<Record<string, string>>;
  /** One result row: the SQL's output columns, in order (see columns.ts). */
  columns: RowSchema;
  maxRows: number;
  /**
   * A paged endpoint's SQL orders by (timestamp, id) descending, takes `cursor` (pagedParamsOf) and
   * answers at most this many rows; a full page links to the next.
   */
  pageSize?: number;
  /** A paged endpoint whose new records can be streamed as they arrive, at <path>/follow. */
  follow?: boolean;
  /** Absent: every request runs the query. */
  cache?: CachePolicy;
}

const DASHBOARD_CACHE: CachePolicy = { ttlSeconds: 900, warmingSeconds: 300 };

const STATS_INTERVALS = ["5min", "15min", "1hr", "1day", "7day"] as const;

export const catalog: readonly EndpointDefinition[] = [
  {
    name: "functions.invocation-stats",
    id: "301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c",
    description:
      "Time-bucketed statistics of serverless function invocations for one project: counts, error counts, execution times.",
    params: paramsOf({
      project: requiredText("project ref whose invocations are counted", "project=default"),
      function_id: optionalText("only this function's invocations; absent or empty for all"),
      interval: requiredText(
        `window and bucket size: ${STATS_INTERVALS.join(", ")}; any other value means 1day`,
        "interval=1hr",
      )
        .meta({ examples: [...STATS_INTERVALS] })
        .transform((value) => (STATS_INTERVALS.some((known) => known === value) ? value : "1day")),
    }),
    example: { project: "default", interval: "1hr" },
    // An invocation without execution_time_ms leaves a bucket of only those without times.
    columns: struct({
      timestamp: TIMESTAMP,
      min_execution_time: nullable(FLOAT64),
      max_execution_time: nullable(FLOAT64),
      avg_execution_time: nullable(FLOAT64),
      p95_execution_time: nullable(FLOAT64),
      p99_execution_time: nullable(FLOAT64),
      count: INT64,
      error_count: INT64,
    }),
    maxRows: 1000,
    cache: DASHBOARD_CACHE,
  },
  {
    name: "logs.all",
    id: "c4e48f7a-e763-48a3-9217-93a065d845d8",
    description:
      "The newest 100 edge request log records of one project, within its tier's retention and an optional time range; a full page links to the next (Link rel=next).",
    params: pagedParamsOf({
      project: requiredText("project ref", "project=default"),
      project_tier: requiredText(
        "retention tier: FREE (1 day), PRO (7 days), PAYG or ENTERPRISE (90 days); any other value means 1 day",
        "project_tier=PRO",
      ),
      iso_timestamp_start: optionalTimestamp("only records strictly after this ISO 8601 instant"),
      iso_timestamp_end: optionalTimestamp("only records at or before this ISO 8601 instant"),
      // Filters: a record matches one when any of its metadata elements does; they combine with AND.
      status: optionalList(
        `only records with a response status among these comma-separated codes (404) or classes (4xx, 5xx), at most ${MAX_LIST_TERMS}`,
        /^[1-5][0-9][0-9]$|^[1-5]xx$/i,
        "a status code (100 to 599) such as 404 or a class (1xx to 5xx) such as 5xx",
        (term) => term.toLowerCase(),
        ["5xx", "404", "4xx,5xx"],
      ),
      method: optionalList(
        `only records of a request with one of these comma-separated HTTP methods, in any case, at most ${MAX_LIST_TERMS}`,
        /^[A-Za-z]{1,20}$/,
        "an HTTP method such as GET",
        (term) => term.toUpperCase(),
        ["GET", "POST,PATCH"],
      ),
      path: optionalText(
        "only records of a request whose path starts with this text, compared exactly (no wildcards); it starts with /",
        ["/rest/v1/", "/auth/v1/", "/storage/v1/"],
      ).refine((value) => value === null || value.startsWith("/"), {
        // A request's path always starts with /: without it the filter would match nothing.
        message: "must start with /, as every request path does: e.g. /rest/v1/",
      }),
      search: optionalText(
        "only records whose event_message contains this text, in any case (% _ and \\ are plain characters)",
      ),
      search_regex: optionalRe2Pattern(
        "only records whose event_message matches this RE2 regular expression",
      ),
      since: optionalDuration(
        "only records strictly after now minus this duration: a whole number and s, m, h or d (15m); not with iso_timestamp_start",
      ),
    }),
    example: { project: "default", project_tier: "FREE" },
    columns: struct({
      id: nullable(STRING),
      timestamp: TIMESTAMP,
      event_message: nullable(STRING),
      metadata: arrayOf(
        struct({
          request: arrayOf(
            struct({
              method: nullable(STRING),
              path: nullable(STRING),
              url: nullable(STRING),
              host: nullable(STRING),
            }),
          ),
          response: arrayOf(struct({ status_code: nullable(INT64) })),
        }),
      ),
    }),
    maxRows: 1000,
    pageSize: 100,
    follow: true,
  },
  {
    name: "usage.api-counts",
    id: "fa6e0509-d5f7-468e-b429-8c4aecf8563d",
    description:
      "Time-bucketed counts of one project's API requests by area: REST, storage, auth, realtime.",
    params: paramsOf({
      project: re2Pattern("RE2 regular expression matched against request URLs", "project=default"),
      interval: oneOf(["minutely", "hourly", "daily"], "window and bucket size"),
    }),
    example: { project: "default", interval: "hourly" },
    columns: struct({
      timestamp: DATETIME,
      total_rest_requests: INT64,
      total_storage_requests: INT64,
      total_auth_requests: INT64,
      total_realtime_requests: INT64,
    }),
    maxRows: 1000,
    cache: DASHBOARD_CACHE,
  },
];

const byName = new Map(catalog.map((endpoint) => [endpoint.name, endpoint]));
const byId = new Map(catalog.map((endpoint) => [endpoint.id, endpoint]));

/** By name or by UUID (in either case); undefined when neither matches. */
export function findEndpoint(nameOrId: string): EndpointDefinition | undefined {
  return byName.get(nameOrId) ?? byId.get(nameOrId.toLowerCase());
}

const properties = new WeakMap<EndpointDefinition, Record<string, { format?: string }>>();

/** Each parameter's JSON Schema, as the catalog listing describes it. */
function paramProperties(endpoint: EndpointDefinition): Record<string, { format?: string }> {
  let found = properties.get(endpoint);
  if (!found) {
    const schema = z.toJSONSchema(endpoint.params, { io: "input", unrepresentable: "any" });
    found = (schema.properties ?? {}) as Record<string, { format?: string }>;
    properties.set(endpoint, found);
  }
  return found;
}

const declared = new WeakMap<EndpointDefinition, ReadonlySet<string>>();

/** The names of the parameters an endpoint takes. */
export function declaredParams(endpoint: EndpointDefinition): ReadonlySet<string> {
  let names = declared.get(endpoint);
  if (!names) {
    names = new Set(Object.keys(paramProperties(endpoint)));
    declared.set(endpoint, names);
  }
  return names;
}

/** Whether the parameter is a regular expression rather than a plain value. */
export function isPatternParam(endpoint: EndpointDefinition, param: string): boolean {
  return paramProperties(endpoint)[param]?.format === "regex";
}

const names = new WeakMap<EndpointDefinition, readonly string[]>();

/** The names of the columns an endpoint answers, in the SQL's order. */
export function columnNames(endpoint: EndpointDefinition): readonly string[] {
  let found = names.get(endpoint);
  if (!found) {
    found = Object.freeze(Object.keys(endpoint.columns.properties));
    names.set(endpoint, found);
  }
  return found;
}
