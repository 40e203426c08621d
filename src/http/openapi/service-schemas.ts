// The schemas of the routes beside the endpoints': the catalog listing (GET /api/endpoints), the
// alert rules (GET /api/alerts), the probes (GET /health, GET /ready), the metrics (GET /metrics)
// and the document itself (GET /openapi.json).
import {
  ANY_REQUEST_ERRORS,
  errorResponse,
  errorResponses,
  headers,
  INTEGER,
  type Json,
  json,
  RATE_LIMIT,
  STRING,
} from "./responses.ts";

export const CATALOG_TAG = { name: "catalog", description: "What a credential may call, and how." };
export const SERVICE_TAG = {
  name: "service",
  description:
    "Probes, metrics and this document. With MANAGEMENT_PORT set the probes and metrics are " +
    "served there too, with no credential.",
};

const STRINGS = { type: "array", items: STRING };

/** One parameter of an entry of GET /api/endpoints. */
const CATALOG_PARAM: Json = {
  type: "object",
  required: ["name", "type", "required"],
  properties: {
    name: STRING,
    type: { const: "string" },
    required: { type: "boolean" },
    description: STRING,
    allowed: { ...STRINGS, description: "The only values taken." },
    examples: { ...STRINGS, description: "Suggested values; others are taken too." },
    default: { ...STRING, description: "The value the parameter takes when it is not given." },
    format: { ...STRING, description: "`date-time` for a timestamp, `regex` for a pattern." },
  },
};

/** One entry of GET /api/endpoints: an endpoint the credential may call. */
export const CATALOG_ENTRY: Json = {
  $id: "catalog.entry",
  type: "object",
  required: [
    "name",
    "id",
    "description",
    "params",
    "max_rows",
    "cache",
    "paths",
    "example",
    "fixed_params",
    "time_columns",
  ],
  properties: {
    name: STRING,
    id: { type: "string", format: "uuid" },
    description: STRING,
    params: { type: "array", items: CATALOG_PARAM },
    max_rows: { ...INTEGER, description: "The most rows an answer holds." },
    cache: {
      description: "How long answers are kept and how often they are recomputed; null: never kept.",
      oneOf: [
        { type: "null" },
        {
          type: "object",
          required: ["ttl_seconds", "warming_seconds"],
          properties: { ttl_seconds: INTEGER, warming_seconds: INTEGER },
        },
      ],
    },
    paths: { ...STRINGS, description: "Where it answers; a followable one's follow stream too." },
    example: { ...STRING, description: "A valid request: path and query string." },
    time_columns: {
      ...STRINGS,
      description:
        "The columns that hold an instant (TIMESTAMP, or DATETIME in UTC), which `time_format` " +
        "writes as epoch milliseconds or RFC 3339.",
    },
    fixed_params: {
      type: "object",
      additionalProperties: STRING,
      description: "What the credential's scope fixes: omit these, or send exactly these values.",
    },
    range: {
      type: "object",
      description:
        "Only on an endpoint whose definition declares time buckets: it answers any time range, " +
        "`from` and `to` (epoch milliseconds or RFC 3339) in place of its span parameter, in " +
        "buckets aligned to their size.",
      required: ["ladder", "max_points", "max_range"],
      properties: {
        instead_of: { ...STRING, description: "The span parameter a range stands in for." },
        ladder: {
          ...STRINGS,
          description:
            "The bucket sizes, smallest first: without `bucket`, the smallest that gives at most `max_points` buckets.",
        },
        max_points: {
          ...INTEGER,
          description: "The most buckets an answer holds without `max_points`.",
        },
        max_range: { ...STRING, description: "How far back from now `from` may be." },
      },
    },
    paging: {
      type: "object",
      description:
        "Only on an endpoint whose answers are pages: how its rows are ordered, the parameters " +
        "that bound its window, and whether it can be followed.",
      required: ["page_size", "order", "window", "follow"],
      properties: {
        page_size: { ...INTEGER, description: "The most rows a page holds." },
        order: { ...STRINGS, description: "The rows' order: a column and ASC or DESC each." },
        window: {
          type: "object",
          required: ["start", "end"],
          properties: {
            start: { ...STRING, description: "The parameter after which rows start (exclusive)." },
            end: { ...STRING, description: "The parameter at which rows end (inclusive)." },
            since: { ...STRING, description: "The parameter for a start of now − seconds." },
          },
        },
        follow: { type: "boolean", description: "Its new rows can be streamed at …/follow." },
      },
    },
  },
};

/** A Grafana dashboard JSON (Grafana's own schema describes the rest of it). */
export const GRAFANA_DASHBOARD: Json = {
  $id: "grafana.dashboard",
  type: "object",
  description:
    "A Grafana dashboard (schemaVersion 42) whose panels query this service through the Infinity " +
    "datasource the `datasource` variable picks.",
  required: ["uid", "title", "schemaVersion", "refresh", "templating", "panels"],
  properties: {
    uid: STRING,
    title: STRING,
    schemaVersion: INTEGER,
    refresh: {
      ...STRING,
      description: "How often it refreshes: no faster than its endpoints' warming; empty, never.",
    },
    templating: { type: "object" },
    panels: { type: "array", items: { type: "object" } },
  },
};

const TIME_OR_NULL = { type: ["string", "null"], format: "date-time" };

/** One entry of GET /api/alerts: a rule the credential may see, and its state. */
export const ALERT_ENTRY: Json = {
  $id: "alerts.entry",
  type: "object",
  required: [
    "name",
    "endpoint",
    "params",
    "condition",
    "state",
    "firing_since",
    "last_evaluated_at",
    "last_delivery",
  ],
  properties: {
    name: STRING,
    endpoint: STRING,
    params: { type: "object", additionalProperties: STRING },
    condition: { type: "object", description: "As the rules file writes it." },
    state: {
      enum: ["pending", "ok", "firing"],
      description: "pending: not evaluated yet.",
    },
    firing_since: TIME_OR_NULL,
    last_evaluated_at: TIME_OR_NULL,
    last_delivery: {
      oneOf: [
        { type: "null" },
        {
          type: "object",
          required: ["at", "type", "outcome", "attempts"],
          properties: {
            at: { type: "string", format: "date-time" },
            type: { enum: ["alert.firing", "alert.resolved"] },
            outcome: { enum: ["delivered", "failed"] },
            attempts: INTEGER,
            status: {
              ...INTEGER,
              description: "The receiver's last HTTP status, when it answered.",
            },
          },
        },
      ],
    },
  },
};

/** A GET that takes no parameters and lists what the credential may see, each entry a `$id`. */
function listingSchema(
  operationId: string,
  [summary, description]: [string, string],
  [entry, listed]: [$id: string, description: string],
  /** A listing that names an endpoint: its query string, and the 403 and 404 that can then answer. */
  of?: { querystring: Record<string, unknown> },
) {
  return {
    tags: [CATALOG_TAG.name],
    operationId,
    summary,
    description: of ? description : `${description} Takes no parameters.`,
    ...(of && { querystring: of.querystring }),
    response: {
      200: {
        description: listed,
        headers: headers("X-Request-Id", ...RATE_LIMIT),
        content: json({
          type: "object",
          required: ["result"],
          properties: { result: { type: "array", items: { $ref: `${entry}#` } } },
        }),
      },
      ...errorResponses([
        400,
        401,
        ...(of ? [403, 404] : []),
        406,
        429,
        503,
        ...ANY_REQUEST_ERRORS,
      ]),
    },
  };
}

export const LISTING_SCHEMA = listingSchema(
  "listEndpoints",
  [
    "The endpoints this credential may call",
    "Each endpoint the credential may call: its name, id, parameters, the values its scopes " +
      "fix, row cap, cache, paths and an example request.",
  ],
  ["catalog.entry", "The endpoints the credential may call, each with the values its scopes fix."],
);

export const ALERTS_SCHEMA = listingSchema(
  "listAlerts",
  [
    "The alert rules this credential may see, and their state",
    "The rules of ALERT_RULES_FILE whose endpoint and parameters the credential may call " +
      "(its scope fixing nothing else), each with its state, when it started firing, when it " +
      "was last evaluated and its last webhook delivery.",
  ],
  ["alerts.entry", "The alert rules the credential may see, each with its state."],
  {
    querystring: {
      type: "object",
      properties: {
        endpoint: {
          type: "string",
          description:
            "Only the rules of this endpoint (its name or id): 404 when none has it, 403 when the credential may not call it.",
        },
      },
    },
  },
);

export const HEALTH_SCHEMA = {
  tags: [SERVICE_TAG.name],
  operationId: "health",
  summary: "Liveness: the process serves HTTP",
  description: "Needs no credential, and is answered under load.",
  security: [],
  response: {
    200: {
      description: "The process is alive.",
      headers: headers("X-Request-Id"),
      content: json({
        type: "object",
        required: ["status"],
        properties: { status: { const: "ok" } },
      }),
    },
    503: errorResponse(503, ["shutting_down"]),
    ...errorResponses(ANY_REQUEST_ERRORS),
  },
};

export const READY_SCHEMA = {
  tags: [SERVICE_TAG.name],
  operationId: "ready",
  summary: "Readiness: the engine answers a trivial query",
  description:
    "Needs no credential, and is answered under load. One check (a query on BigQuery) serves " +
    "every probe for 5 s; it waits at most 5 s for the engine.",
  security: [],
  response: {
    200: {
      description: "The engine answered.",
      headers: headers("X-Request-Id"),
      content: json({
        type: "object",
        required: ["status", "engine"],
        properties: {
          status: { const: "ready" },
          engine: { enum: ["bigquery", "duckdb"] },
        },
      }),
    },
    503: errorResponse(503, ["not_ready", "shutting_down"]),
    ...errorResponses(ANY_REQUEST_ERRORS),
  },
};

export const METRICS_SCHEMA = {
  tags: [SERVICE_TAG.name],
  operationId: "metrics",
  summary: "Prometheus metrics",
  description:
    "Requests by endpoint and status, the result cache, the engine and its gate, connections, " +
    "follow streams and Redis. Needs a credential with a `*` scope that fixes no parameter " +
    "(403 otherwise); reading it does not count against the credential's rate limit.",
  response: {
    200: {
      description: "The Prometheus text exposition format, version 0.0.4.",
      headers: headers("X-Request-Id"),
      content: { "text/plain": { schema: STRING } },
    },
    ...errorResponses([401, 403, 429, 503, ...ANY_REQUEST_ERRORS]),
  },
};

/** The headers of GET /openapi.json's 200 and 304. */
const DOCUMENT_HEADERS = headers("X-Request-Id", "Cache-Control", "ETag");

/** An OpenAPI 3.1 document, as far as this one says what it is. */
const DOCUMENT = {
  type: "object",
  required: ["openapi", "info", "paths"],
  properties: { openapi: { const: "3.1.0" }, info: { type: "object" }, paths: { type: "object" } },
};

export const OPENAPI_SCHEMA = {
  tags: [SERVICE_TAG.name],
  operationId: "openapi",
  summary: "This document",
  // A credential is optional here: none, or either kind.
  security: [{}, { apiKey: [] }, { bearer: [] }] as Record<string, string[]>[],
  description:
    "The OpenAPI 3.1 document of the service. Without a credential it describes every endpoint; " +
    "with one (checked when sent), only those it may call, with the values its scopes fix. " +
    "Without a credential it counts against ANONYMOUS_RATE_LIMIT_PER_MINUTE per client address.",
  headers: {
    type: "object",
    properties: {
      "If-None-Match": {
        type: "string",
        description: "An ETag from an earlier answer: unchanged, the answer is a bodyless 304.",
      },
    },
  },
  response: {
    200: {
      description:
        "The document, brotli- or gzip-compressed when Accept-Encoding allows; kept 60 s " +
        "(`public` without a credential, `private` with one).",
      headers: DOCUMENT_HEADERS,
      content: json(DOCUMENT),
    },
    304: {
      description: "The If-None-Match given matches: the document you hold is current. No body.",
      headers: DOCUMENT_HEADERS,
      type: "null",
    },
    ...errorResponses([401, 429, 503, ...ANY_REQUEST_ERRORS]),
  },
};

/** The 200 of a Grafana dashboard's GET, one endpoint's or every endpoint's. */
export const DASHBOARD_RESPONSE = {
  description: "The dashboard, to import into Grafana or provision.",
  headers: headers("X-Request-Id", ...RATE_LIMIT),
  content: json({ $ref: "grafana.dashboard#" }),
};

export const GRAFANA_SCHEMA = {
  operationId: "grafanaDashboard",
  tags: [CATALOG_TAG.name],
  summary: "A Grafana dashboard of every endpoint this credential may call",
  description:
    "One dashboard for Grafana's Infinity datasource with a panel per endpoint the credential " +
    "may call, as each endpoint's `…/grafana` gives it, its variables named by endpoint. Takes " +
    "no parameters.",
  response: {
    200: DASHBOARD_RESPONSE,
    ...errorResponses([400, 401, 406, 429, 503, ...ANY_REQUEST_ERRORS]),
  },
};
