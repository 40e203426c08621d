// The OpenAPI 3.1 document, built from the catalog: each endpoint at its three paths, with its
// parameters from the zod schema, its row schema from the catalog entry and its three
// representations; the error envelope of every status; the credentials; the response headers.
import { z } from "zod";
import packageJson from "../../../package.json" with { type: "json" };
import type { EndpointDefinition } from "../../endpoints/catalog.ts";

/** An endpoint the document describes, with the parameters a credential's scope fixes (if any). */
export interface Callable {
  endpoint: EndpointDefinition;
  fixed: Readonly<Record<string, string>>;
}

type Json = Record<string, unknown>;

export interface OpenApiDocument {
  openapi: "3.1.0";
  info: Json;
  security: Json[];
  tags: Json[];
  paths: Record<string, { get: Json }>;
  components: {
    securitySchemes: Json;
    schemas: Record<string, object>;
    parameters: Record<string, Json>;
    responses: Record<string, Json>;
    headers: Record<string, Json>;
  };
}

const ref = (section: string, name: string) => ({ $ref: `#/components/${section}/${name}` });

/** README's error table: every code answered in the envelope, its status, and when. */
const ERRORS: Readonly<Record<string, readonly [status: number, when: string]>> = {
  invalid_params: [400, "a parameter is missing, unknown, repeated or malformed (see details)"],
  bad_request: [400, "the URL is not validly percent-encoded, or the request not valid HTTP"],
  unauthorized: [401, "missing, unknown or expired key; bad, expired or not yet valid token"],
  forbidden: [403, "the credential's scopes do not allow this endpoint or parameter value"],
  endpoint_not_found: [404, "no endpoint has that name or id (checked after the credential)"],
  not_found: [404, "no such route"],
  method_not_allowed: [405, "a method other than GET on an endpoint path"],
  not_acceptable: [406, "Accept names none of the media types served (see available)"],
  request_timeout: [408, "the request did not arrive in time"],
  payload_too_large: [413, "the request declares a body: no route takes one"],
  rate_limited: [429, "over the credential's budget or engine share, or too many bad credentials"],
  headers_too_large: [431, "the request headers are over 16 KiB"],
  internal_error: [500, "a bug; the message quotes the request id"],
  engine_error: [502, "the engine failed"],
  overloaded: [503, "the engine's queue is full, or the service is under pressure"],
  shutting_down: [503, "the service is closing: ask another replica"],
  engine_timeout: [504, "no answer from the engine in time, waiting included"],
};

/** Statuses an endpoint's GET can answer: 404 and 405 concern other paths and methods. */
const ENDPOINT_ERRORS = [400, 401, 403, 406, 408, 413, 429, 431, 500, 502, 503, 504];

const STRING = { type: "string" };
const INTEGER = { type: "integer", minimum: 0 };

const HEADERS: Record<string, Json> = {
  "X-Request-Id": {
    description: "The request's id (yours, when you sent a plain token).",
    schema: STRING,
  },
  "RateLimit-Limit": {
    description: "Requests a minute this credential may make.",
    schema: INTEGER,
  },
  "RateLimit-Remaining": { description: "Requests left in this minute.", schema: INTEGER },
  "RateLimit-Reset": {
    description: "Seconds until the minute's budget is whole again.",
    schema: INTEGER,
  },
  "Retry-After": { description: "Seconds to wait before trying again.", schema: INTEGER },
  "Cache-Control": {
    description: "`private, max-age=<TTL>` for cached endpoints, `no-store` for the others.",
    schema: STRING,
  },
  "X-Cache": {
    description:
      "HIT; MISS; STALE: from memory but older than the warming interval; REFRESH: recomputed because the request asked for a fresher value (Cache-Control).",
    schema: { enum: ["HIT", "MISS", "STALE", "REFRESH"] },
  },
  Age: {
    description: "Seconds since the value was computed (max-age minus Age is what is left).",
    schema: INTEGER,
  },
  ETag: {
    description: "Strong validator of this representation; send it as If-None-Match to get a 304.",
    schema: STRING,
  },
  "X-Result-Truncated": {
    description: "Present when the result was cut at the row cap.",
    schema: { enum: ["true"] },
  },
  "Cache-Status": {
    description:
      "RFC 9211: `query-service; hit; ttl=<seconds left>` (with `detail=stale` past the warming interval, `detail=refresh-budget` when a forced refresh was refused), `query-service; fwd=miss; stored`, `query-service; fwd=request; stored` (a refresh the caller asked for), or `query-service; fwd=uri-miss` on an endpoint without a cache.",
    schema: STRING,
  },
  "Server-Timing": {
    description:
      "W3C Server Timing: `cache;desc=HIT|MISS|STALE|REFRESH`, `engine;dur=<ms>` when the engine ran for this request, `total;dur=<ms>`.",
    schema: STRING,
  },
  "Timing-Allow-Origin": {
    description: "`*`: a browser page of any origin may read Server-Timing.",
    schema: { enum: ["*"] },
  },
  "X-Bytes-Processed": {
    description:
      "BigQuery only: bytes the query that computed this answer processed (on a cached answer, the query that filled the cache).",
    schema: INTEGER,
  },
  Link: {
    description:
      'On a full page of a paged endpoint: `<url>; rel="next"` (RFC 8288), the same path and parameters with the next page\'s `cursor`. The last page has none.',
    schema: STRING,
  },
  Allow: { description: "The methods the path answers.", schema: { enum: ["GET"] } },
};

const headers = (...names: string[]) =>
  Object.fromEntries(names.map((name) => [name, ref("headers", name)]));
const RATE_LIMIT = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];
const CACHE = ["Cache-Control", "X-Cache", "Age", "ETag"];
const FRESHNESS = ["Cache-Status", "Server-Timing", "Timing-Allow-Origin", "X-Bytes-Processed"];
const STATUS_HEADERS: Record<number, string[]> = {
  405: ["Allow"],
  429: ["Retry-After", ...RATE_LIMIT],
  503: ["Retry-After"],
};

/** One code's envelope: `{"error":{"code","message",...}}`. */
function errorSchema(code: string): Json {
  const extra: Record<string, Json> =
    code === "invalid_params"
      ? {
          details: {
            type: "array",
            items: {
              type: "object",
              required: ["param", "message"],
              properties: { param: STRING, message: STRING },
            },
          },
        }
      : code === "not_acceptable"
        ? { available: { type: "array", items: STRING } }
        : {};
  return {
    type: "object",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["code", "message", ...Object.keys(extra)],
        properties: { code: { const: code }, message: STRING, ...extra },
      },
    },
  };
}

function errorResponse(status: number): Json {
  const errors = Object.entries(ERRORS).filter(([, [at]]) => at === status);
  const refs = errors.map(([code]) => ref("schemas", `error.${code}`));
  return {
    description: errors.map(([code, [, when]]) => `\`${code}\`: ${when}.`).join(" "),
    headers: headers("X-Request-Id", ...(STATUS_HEADERS[status] ?? [])),
    content: { "application/json": { schema: refs.length === 1 ? refs[0] : { oneOf: refs } } },
  };
}

interface ParamsJsonSchema {
  properties: Record<string, Json & { description?: string }>;
  required?: string[];
}

/** Each query parameter, as the zod schema validates it; a fixed one may only be omitted or equal. */
function parameters({ endpoint, fixed }: Callable): Record<string, Json> {
  const schema = z.toJSONSchema(endpoint.params, {
    io: "input",
    unrepresentable: "any",
  }) as unknown as ParamsJsonSchema;
  return Object.fromEntries(
    Object.entries(schema.properties).map(([name, { description, ...property }]) => {
      const value = fixed[name];
      const parameter =
        value === undefined
          ? {
              required: schema.required?.includes(name) ?? false,
              description,
              schema: property,
              ...(endpoint.example[name] !== undefined && { example: endpoint.example[name] }),
            }
          : {
              required: false,
              description: `${description}. Fixed by this credential: omit it, or send exactly this value.`,
              schema: { ...property, const: value, default: value },
            };
      return [`${endpoint.name}.${name}`, { name, in: "query", ...parameter }];
    }),
  );
}

function okResponse(endpoint: EndpointDefinition): Json {
  const row = ref("schemas", `${endpoint.name}.row`);
  const cached = endpoint.cache
    ? ` Cached ${endpoint.cache.ttlSeconds} s and warmed every ${endpoint.cache.warmingSeconds} s: a matching If-None-Match gets 304.`
    : "";
  return {
    description:
      `The rows, at most ${endpoint.maxRows}, in the format Accept asks for, or a suffix on the ` +
      "name (`.json`, `.ndjson`, `.csv`, not on a UUID), which wins over Accept: " +
      'application/json (the default) `{"result":[row, ...]}`; application/x-ndjson, each row ' +
      "as one line of JSON ending in a newline; text/csv (RFC 4180), a header record of the " +
      "column names, then one record per row, NULL as an empty cell, arrays as their JSON text, " +
      `and an empty body for no rows.${cached}`,
    headers: headers(
      "X-Request-Id",
      ...RATE_LIMIT,
      ...(endpoint.cache ? CACHE : ["Cache-Control"]),
      ...FRESHNESS,
      "X-Result-Truncated",
      ...(endpoint.pageSize ? ["Link"] : []),
    ),
    content: {
      "application/json": {
        schema: {
          type: "object",
          required: ["result"],
          properties: { result: { type: "array", maxItems: endpoint.maxRows, items: row } },
        },
      },
      "application/x-ndjson": { schema: row },
      "text/csv": { schema: STRING },
    },
  };
}

const NOT_MODIFIED: Json = {
  description: "The If-None-Match given matches: the representation you hold is current.",
  headers: headers("X-Request-Id", ...RATE_LIMIT, ...CACHE),
};

const IF_NONE_MATCH: Json = {
  name: "If-None-Match",
  in: "header",
  required: false,
  description: "An ETag from an earlier answer: unchanged, the answer is a bodyless 304.",
  schema: STRING,
};

/** The three paths of an endpoint, and what its operation there is called. */
function pathsOf(
  endpoint: EndpointDefinition,
): [path: string, operationId: string, summary: string][] {
  // Word characters only: Swagger UI's "try it" fails to find an operation whose id has a dot.
  const id = endpoint.name.replace(/\W/g, "_");
  return [
    [`/api/endpoints/${endpoint.name}`, id, "by name"],
    [`/api/endpoints/query/${endpoint.id}`, `${id}_by_id`, "by id"],
    [
      `/api/endpoints/query/${endpoint.name}`,
      `${id}_query_path`,
      "by name, at the path Logflare and Supabase Studio call",
    ],
  ];
}

function operation(
  endpoint: EndpointDefinition,
  parameterNames: string[],
  operationId: string,
  summary: string,
): Json {
  const params = parameterNames.map((name) => ref("parameters", name));
  return {
    tags: [endpoint.name],
    operationId,
    summary: `${endpoint.name}, ${summary}`,
    description:
      `${endpoint.description} Unknown and repeated parameters are refused by name; a required ` +
      "parameter given empty counts as missing, an optional one as absent.",
    parameters: endpoint.cache ? [...params, ref("parameters", "If-None-Match")] : params,
    responses: {
      200: ref("responses", `${endpoint.name}.ok`),
      ...(endpoint.cache && { 304: ref("responses", "NotModified") }),
      ...Object.fromEntries(
        ENDPOINT_ERRORS.map((status) => [status, ref("responses", String(status))]),
      ),
    },
  };
}

/** The document describing `callable`: the whole catalog, or what one credential may call. */
export function openApiDocument(callable: readonly Callable[]): OpenApiDocument {
  const statuses = [...new Set(Object.values(ERRORS).map(([status]) => status))];
  const params = new Map(callable.map((entry) => [entry.endpoint, parameters(entry)]));
  return {
    openapi: "3.1.0",
    info: {
      title: "Log & usage query service",
      version: packageJson.version,
      description:
        "Saved, read-only analytics queries over request and function logs. Every call needs a " +
        "credential: an API key as `X-API-KEY`, or an API key or signed access token as " +
        "`Authorization: Bearer`. `GET /openapi.json` without a credential describes every endpoint; " +
        "with one, only those it may call, with the parameters its scopes fix.",
    },
    security: [{ apiKey: [] }, { bearer: [] }],
    tags: callable.map(({ endpoint }) => ({
      name: endpoint.name,
      description: endpoint.description,
    })),
    paths: Object.fromEntries(
      callable.flatMap(({ endpoint }) => {
        const names = Object.keys(params.get(endpoint) ?? {});
        return pathsOf(endpoint).map(([path, operationId, summary]) => [
          path,
          { get: operation(endpoint, names, operationId, summary) },
        ]);
      }),
    ),
    components: {
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "X-API-KEY", description: "An API key." },
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "An API key, or a signed access token (JWT) from your backend.",
        },
      },
      schemas: {
        ...Object.fromEntries(
          callable.map(({ endpoint }) => [`${endpoint.name}.row`, endpoint.columns]),
        ),
        ...Object.fromEntries(
          Object.keys(ERRORS).map((code) => [`error.${code}`, errorSchema(code)]),
        ),
      },
      parameters: {
        ...Object.assign({}, ...params.values()),
        "If-None-Match": IF_NONE_MATCH,
      },
      responses: {
        ...Object.fromEntries(
          callable.map(({ endpoint }) => [`${endpoint.name}.ok`, okResponse(endpoint)]),
        ),
        NotModified: NOT_MODIFIED,
        ...Object.fromEntries(statuses.map((status) => [String(status), errorResponse(status)])),
      },
      headers: HEADERS,
    },
  };
}
