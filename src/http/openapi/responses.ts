// What the routes' schemas are made of: the error envelope of every code and the error response
// of every status, both from errors.ts's ERROR_CODES, and the response headers, each described
// once. The routes declare their responses with these; @fastify/swagger turns them into
// /openapi.json.
import { ERROR_CODES, type ErrorCode } from "../errors.ts";
import { ALLOWED_METHODS } from "../methods.ts";

export type Json = Record<string, unknown>;

export const STRING = { type: "string" };
export const INTEGER = { type: "integer", minimum: 0 };

/** A body of `schema` in JSON. */
export const json = (schema: Json) => ({ "application/json": { schema } });

const HEADERS = {
  "X-Request-Id": {
    description: "The request's id (yours, when you sent a plain token).",
    ...STRING,
  },
  "RateLimit-Limit": { description: "Requests a minute this credential may make.", ...INTEGER },
  "RateLimit-Remaining": { description: "Requests left in this minute.", ...INTEGER },
  "RateLimit-Reset": {
    description: "Seconds until the minute's budget is whole again.",
    ...INTEGER,
  },
  "Retry-After": { description: "Seconds to wait before trying again.", ...INTEGER },
  Allow: {
    description: `The methods the path answers: \`${ALLOWED_METHODS}\`.`,
    enum: [ALLOWED_METHODS],
  },
  "Cache-Control": {
    description: "`private, max-age=<TTL>` for cached endpoints, `no-store` for the others.",
    ...STRING,
  },
  "X-Cache": {
    description:
      "HIT; MISS; STALE: from memory but older than the warming interval; REFRESH: recomputed because the request asked for a fresher value (Cache-Control).",
    enum: ["HIT", "MISS", "STALE", "REFRESH"],
  },
  Age: {
    description: "Seconds since the value was computed (max-age minus Age is what is left).",
    ...INTEGER,
  },
  ETag: {
    description: "Strong validator of this representation; send it as If-None-Match to get a 304.",
    ...STRING,
  },
  "X-Result-Truncated": {
    description: "Present when the result was cut at the row cap.",
    enum: ["true"],
  },
  "Cache-Status": {
    description:
      "RFC 9211: `query-service; hit; ttl=<seconds left>` (with `detail=stale` past the warming interval, `detail=refresh-budget` when a forced refresh was refused), `query-service; fwd=miss; stored`, `query-service; fwd=request; stored` (a refresh the caller asked for), or `query-service; fwd=uri-miss` on an endpoint without a cache.",
    ...STRING,
  },
  "Server-Timing": {
    description:
      "W3C Server Timing: `cache;desc=HIT|MISS|STALE|REFRESH`, `engine;dur=<ms>` when the engine ran for this request, `total;dur=<ms>`.",
    ...STRING,
  },
  "Timing-Allow-Origin": {
    description: "`*`: a browser page of any origin may read Server-Timing.",
    enum: ["*"],
  },
  "X-Bytes-Processed": {
    description:
      "BigQuery only: bytes the query that computed this answer processed (on a cached answer, the query that filled the cache); 0 on a later page of a walk read from the kept result of the walk's query, which runs no query.",
    ...INTEGER,
  },
  Link: {
    description:
      'On a full page of a paged endpoint: `<url>; rel="next"` (RFC 8288), the same path and parameters with the next page\'s `cursor`. The last page has none (on BigQuery a later page knows it is the last, on DuckDB a full last page links to an empty one).',
    ...STRING,
  },
} as const satisfies Record<string, Json>;

export type HeaderName = keyof typeof HEADERS;

/** A response's headers, by name. */
export const headers = (...names: HeaderName[]) =>
  Object.fromEntries(names.map((name) => [name, HEADERS[name]]));

export const RATE_LIMIT: HeaderName[] = [
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
];

/**
 * Statuses any request can be answered: its method or shape refused (a 405 is the path's answer to
 * a method other than GET and HEAD, declared on its GET as no other operation is described), or a bug.
 */
export const ANY_REQUEST_ERRORS = [405, 408, 413, 431, 500];

/** Codes only a probe answers, left out of the responses the other routes share. */
const PROBE_ONLY: readonly ErrorCode[] = ["not_ready"];

const STATUS_HEADERS: Record<number, HeaderName[]> = {
  405: ["Allow"],
  429: ["Retry-After", ...RATE_LIMIT],
  503: ["Retry-After"],
};

/** The shared schema of one code's envelope, `{"error":{"code","message",...}}`, by its `$id`. */
function errorSchema(code: ErrorCode): Json {
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
    $id: `error.${code}`,
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

/** Every code's envelope, for the app's shared schemas; the responses refer to them by `$id`. */
export const ERROR_SCHEMAS = (Object.keys(ERROR_CODES) as ErrorCode[]).map(errorSchema);

/** The codes that every route answering `status` may send with it. */
const codesOf = (status: number) =>
  (Object.keys(ERROR_CODES) as ErrorCode[]).filter(
    (code) => ERROR_CODES[code][0] === status && !PROBE_ONLY.includes(code),
  );

/** What a response naming `codes` says: each code and when it is sent. */
export const errorDescription = (codes: readonly ErrorCode[]) =>
  codes.map((code) => `\`${code}\`: ${ERROR_CODES[code][1]}.`).join(" ");

/** The error response of `status` naming `codes`: the shared one of that status by default. */
export function errorResponse(status: number, codes: readonly ErrorCode[] = codesOf(status)): Json {
  const refs = codes.map((code) => ({ $ref: `error.${code}#` }));
  return {
    description: errorDescription(codes),
    headers: headers("X-Request-Id", ...(STATUS_HEADERS[status] ?? [])),
    content: json(refs.length === 1 ? (refs[0] as Json) : { oneOf: refs }),
  };
}

/** The shared error response of each status. */
export const errorResponses = (statuses: readonly number[]) =>
  Object.fromEntries(statuses.map((status) => [status, errorResponse(status)]));

/** Whether `response` is the shared one of `status`, which the document names once. */
export const isSharedErrorResponse = (status: number, response: { description?: unknown }) =>
  status >= 400 && response.description === errorDescription(codesOf(status));
