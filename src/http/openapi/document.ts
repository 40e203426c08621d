// The OpenAPI 3.1 document, built from the catalog: each endpoint at its three paths, with its
// parameters from the zod schema, its row schema from the catalog entry and its three
// representations; a followable endpoint's follow stream at the same paths; the catalog listing,
// the probes and the metrics; the error envelope of every status; the credentials; the response
// headers.
import { z } from "zod";
import packageJson from "../../../package.json" with { type: "json" };
import type { EndpointDefinition } from "../../endpoints/catalog.ts";
import { ERROR_CODES, type ErrorCode } from "../errors.ts";
import { NOT_FOLLOWED } from "../follow-routes.ts";
import { csv } from "../formats/csv.ts";
import type { Format } from "../formats/format.ts";
import { json } from "../formats/json.ts";
import { ndjson } from "../formats/ndjson.ts";
import type { EndReason } from "../streams/outbound-stream.ts";
import {
  ANY_REQUEST_ERRORS,
  errorResponses,
  headers,
  INTEGER,
  type Json,
  RATE_LIMIT,
  ref,
  referenced,
  STRING,
} from "./parts.ts";
import { CATALOG_TAG, SERVICE_TAG, serviceComponents, servicePaths } from "./service-paths.ts";

/** An endpoint the document describes, with the parameters a credential's scope fixes (if any). */
export interface Callable {
  endpoint: EndpointDefinition;
  fixed: Readonly<Record<string, string>>;
}

/** What the document describes: the endpoints, and whether /metrics (full access only) is among it. */
export interface Described {
  callable: readonly Callable[];
  metrics: boolean;
}

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

/** Codes only a probe answers, left out of the responses the other paths share. */
const PROBE_ONLY: readonly ErrorCode[] = ["not_ready"];

/** Statuses an endpoint's GET can answer: 404 and 405 concern other paths and methods. */
const ENDPOINT_ERRORS = [400, 401, 403, 406, 429, 502, 503, 504, ...ANY_REQUEST_ERRORS];

/** Statuses a format suffix's GET can answer: the suffix, not Accept, names the format. */
const SUFFIX_ERRORS = ENDPOINT_ERRORS.filter((status) => status !== 406);

/** Statuses a follow stream's GET can answer: it runs no query before its 200. */
const FOLLOW_ERRORS = [400, 401, 403, 406, 429, 503, ...ANY_REQUEST_ERRORS];

/** Statuses a watch's GET can answer: its first answer may run the query before its 200. */
const WATCH_ERRORS = ENDPOINT_ERRORS;

/** Why a follow stream ended, as its `end` event says. */
const END_REASONS: Record<EndReason, string> = {
  shutting_down: "the service is closing: reconnect, with Last-Event-ID, to another replica",
  token_expired: "the access token that opened the stream expired",
  revoked:
    "the keys-file key that opened it left the file, was renamed, had its scopes changed or reached its expires_at",
  too_slow: "the client left more unread than the stream may hold for it",
  error: "the stream's catch-up failed in the engine",
  settled:
    "`until=settled` was given and every record that can no longer be overtaken by a late one was sent; `cursor` is where the next run resumes (`after`)",
};

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
      "BigQuery only: bytes the query that computed this answer processed (on a cached answer, the query that filled the cache); 0 on a later page of a walk read from the kept result of the walk's query, which runs no query.",
    schema: INTEGER,
  },
  Link: {
    description:
      'On a full page of a paged endpoint: `<url>; rel="next"` (RFC 8288), the same path and parameters with the next page\'s `cursor`. The last page has none (on BigQuery a later page knows it is the last, on DuckDB a full last page links to an empty one).',
    schema: STRING,
  },
};

const CACHE = ["Cache-Control", "X-Cache", "Age", "ETag"];
const FRESHNESS = ["Cache-Status", "Server-Timing", "Timing-Allow-Origin", "X-Bytes-Processed"];
const STATUS_HEADERS: Record<number, string[]> = {
  429: ["Retry-After", ...RATE_LIMIT],
  503: ["Retry-After"],
};

/** One code's envelope: `{"error":{"code","message",...}}`. */
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

/** The codes every path that answers `status` may send with it. */
const codesOf = (status: number) =>
  (Object.keys(ERROR_CODES) as ErrorCode[]).filter(
    (code) => ERROR_CODES[code][0] === status && !PROBE_ONLY.includes(code),
  );

/** The response of `status` naming `codes`. */
function errorResponse(status: number, codes: readonly ErrorCode[] = codesOf(status)): Json {
  const refs = codes.map((code) => ref("schemas", `error.${code}`));
  return {
    description: codes.map((code) => `\`${code}\`: ${ERROR_CODES[code][1]}.`).join(" "),
    headers: headers("X-Request-Id", ...(STATUS_HEADERS[status] ?? [])),
    content: { "application/json": { schema: refs.length === 1 ? refs[0] : { oneOf: refs } } },
  };
}

/** The responses only a probe answers with, beside the shared one of each status. */
const PROBE_RESPONSES: Record<string, readonly ErrorCode[]> = {
  ShuttingDown: ["shutting_down"],
  NotReady: ["not_ready", "shutting_down"],
};

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

/** The headers of an endpoint's 200, in every format. */
function okHeaders(endpoint: EndpointDefinition): Json {
  return headers(
    "X-Request-Id",
    ...RATE_LIMIT,
    ...(endpoint.cache ? CACHE : ["Cache-Control"]),
    ...FRESHNESS,
    "X-Result-Truncated",
    ...(endpoint.pageSize ? ["Link"] : []),
  );
}

const cachedNote = (endpoint: EndpointDefinition) =>
  endpoint.cache
    ? ` Cached ${endpoint.cache.ttlSeconds} s and warmed every ${endpoint.cache.warmingSeconds} s: a matching If-None-Match gets 304.`
    : "";

/**
 * The JSON answer: the one typed success body, and the only media type of the negotiated paths'
 * 200, so that a generated client's `data` is `{result}` rather than a union with text. The text
 * formats Accept also picks there are the same bytes as their suffix paths, which describe them.
 */
function jsonResponse(endpoint: EndpointDefinition): Json {
  return {
    description:
      `The rows, at most ${endpoint.maxRows}: \`{"result":[row, ...]}\`. Where the path has no ` +
      "format suffix, Accept picks the format: application/json (the default), or " +
      `application/x-ndjson and text/csv, answered as the \`${endpoint.name}.ndjson\` and ` +
      `\`${endpoint.name}.csv\` paths answer them (and described there).${cachedNote(endpoint)}`,
    headers: okHeaders(endpoint),
    content: {
      "application/json": {
        schema: {
          type: "object",
          required: ["result"],
          properties: {
            result: {
              type: "array",
              maxItems: endpoint.maxRows,
              items: ref("schemas", `${endpoint.name}.row`),
            },
          },
        },
      },
    },
  };
}

/** How each text format writes the rows: text, not one JSON document. */
const TEXT_BODIES: Record<string, (row: string) => string> = {
  [ndjson.suffix]: (row) =>
    `Each row as one line of JSON (schema \`${row}\`) ending in a newline; no rows, an empty body.`,
  [csv.suffix]: () =>
    "CSV (RFC 4180): a header record of the column names, then one record per row, NULL as an " +
    "empty cell, arrays and objects as their JSON text; no rows, the header record alone.",
};

function textResponse(endpoint: EndpointDefinition, format: Format): Json {
  return {
    description: `The rows, at most ${endpoint.maxRows}. ${TEXT_BODIES[format.suffix]?.(`${endpoint.name}.row`)}${cachedNote(endpoint)}`,
    headers: okHeaders(endpoint),
    content: { [mediaType(format)]: { schema: STRING } },
  };
}

const mediaType = (format: Format) => format.contentType.split(";")[0] as string;

/** The component of the 200 a format's suffix path answers. */
const okName = (endpoint: EndpointDefinition, format: Format) =>
  format === json ? `${endpoint.name}.ok` : `${endpoint.name}.${format.suffix}`;

const NOT_MODIFIED: Json = {
  description:
    "The If-None-Match given matches: the representation you hold is current. No body, and none " +
    "of the headers that would describe one (Content-Type, Content-Length: RFC 9110 §15.4.5).",
  headers: headers("X-Request-Id", ...RATE_LIMIT, ...CACHE, ...FRESHNESS),
};

const IF_NONE_MATCH: Json = {
  name: "If-None-Match",
  in: "header",
  required: false,
  description:
    "An ETag from an earlier answer: unchanged, the answer is a bodyless 304. A request with it is " +
    "a poll, answered from the cache: the `Cache-Control: no-cache` or `max-age=0` that fetch " +
    "and browsers add beside it ask for no recomputation (a `max-age` of 1 s or more still does).",
  schema: STRING,
};

/** The three paths of an endpoint, what its operation there is called, and whether a format suffix goes on it. */
function pathsOf(
  endpoint: EndpointDefinition,
): [path: string, operationId: string, summary: string, named: boolean][] {
  // Word characters only: Swagger UI's "try it" fails to find an operation whose id has a dot.
  const id = endpoint.name.replace(/\W/g, "_");
  return [
    [`/api/endpoints/${endpoint.name}`, id, "by name", true],
    [`/api/endpoints/query/${endpoint.id}`, `${id}_by_id`, "by id", false],
    [
      `/api/endpoints/query/${endpoint.name}`,
      `${id}_query_path`,
      "by name, at the path Logflare and Supabase Studio call",
      true,
    ],
  ];
}

/** The formats a suffix on a name path names, `.json` first. */
const SUFFIXED: readonly Format[] = [json, ndjson, csv];

function operation(
  endpoint: EndpointDefinition,
  parameterNames: string[],
  operationId: string,
  summary: string,
  format?: Format,
): Json {
  const params = parameterNames.map((name) => ref("parameters", name));
  return {
    tags: [endpoint.name],
    operationId: format ? `${operationId}_${format.suffix}` : operationId,
    summary: format
      ? `${endpoint.name} as ${mediaType(format)}, ${summary}`
      : `${endpoint.name}, ${summary}`,
    description:
      `${endpoint.description} Unknown and repeated parameters are refused by name; a required ` +
      "parameter given empty counts as missing, an optional one as absent." +
      (format ? ` The suffix \`.${format.suffix}\` names the format, whatever Accept says.` : ""),
    parameters: endpoint.cache ? [...params, ref("parameters", "If-None-Match")] : params,
    responses: {
      200: ref("responses", format ? okName(endpoint, format) : `${endpoint.name}.ok`),
      ...(endpoint.cache && { 304: ref("responses", "NotModified") }),
      ...errorResponses(format ? SUFFIX_ERRORS : ENDPOINT_ERRORS),
    },
  };
}

/** A follow stream's own parameters, beside the endpoint's. */
const FOLLOW_PARAMETERS: Record<string, Json> = {
  "follow.after": {
    name: "after",
    in: "query",
    required: false,
    description:
      "An event id, or the cursor a settled stream ended with: the stream resumes from that " +
      "place, as with Last-Event-ID (which wins when both are given), for clients that cannot " +
      "set a header, whatever since or iso_timestamp_start the URL gives (a scope's start still " +
      "bounds it). A cursor this service did not make is 400 `invalid_params`; with " +
      "`until=settled`, so is one older than the tier's retention (records after it were dropped).",
    schema: STRING,
  },
  "follow.until": {
    name: "until",
    in: "query",
    required: false,
    description:
      "`settled`: instead of going live, send every record up to now − LOGS_FOLLOW_LAG_SECONDS " +
      "(which no late record can overtake any more), then end with `event: end` and " +
      '`{"reason":"settled","cursor":…}` (NDJSON: a last line `{"end":{"reason":"settled","cursor":…}}`). ' +
      "Runs each started `after` the last one's cursor give every record once, in order; " +
      "a run with `after` resumes there whatever since or iso_timestamp_start the URL gives.",
    schema: { enum: ["settled"] },
  },
};

const LAST_EVENT_ID: Json = {
  name: "Last-Event-ID",
  in: "header",
  required: false,
  description:
    "The id of the last event received (EventSource sends it by itself when it reconnects): a " +
    "place in what the stream sent, from which it resumes with every record not sent yet, late " +
    "ones within the lag included, none twice, whatever since or iso_timestamp_start the URL " +
    "gives (a scope's start still bounds it). An id this service did not make is 400 `bad_request`.",
  schema: STRING,
};

/** The `end` event a Server-Sent Events stream closes with, and each reason it gives. */
const FOLLOW_END: Json = {
  type: "object",
  description:
    '`event: end` and `data: {"reason": …}`, the last event of a stream the service ended: ' +
    Object.entries(END_REASONS)
      .map(([reason, when]) => `\`${reason}\` when ${when}`)
      .join("; ") +
    ". A client leaving ends it with no event.",
  required: ["event", "data"],
  properties: {
    event: { const: "end" },
    data: ref("schemas", "follow.end-data"),
  },
};

/** What an `end` says: why, and after a settled run, where the next resumes. */
const FOLLOW_END_DATA: Json = {
  type: "object",
  required: ["reason"],
  properties: { reason: { enum: Object.keys(END_REASONS) }, cursor: STRING },
};

/** A Server-Sent Event with a name, an id and `data` as the schema gives it. */
const namedEvent = (event: string, data: Json): Json => ({
  type: "object",
  required: ["event", "id", "data"],
  properties: { event: { const: event }, id: STRING, data },
});

function followResponse(endpoint: EndpointDefinition): Json {
  const row = ref("schemas", `${endpoint.name}.row`);
  return {
    description:
      "The endpoint's new records as they arrive, oldest first, each once, until the caller " +
      "leaves or the service ends the stream; the connection is closed after it. Accept picks " +
      "the framing. text/event-stream (the default, what EventSource sends): Server-Sent Events, " +
      "first `event: start` (`id:` where the stream starts, `data:` its time and whether it " +
      "resumed), then one per record, its fields as the schema gives them (`data:` the record " +
      "as JSON, `id:` the event id Last-Event-ID takes back), a comment line every 15 s while idle, and " +
      "`event: end` (follow.end) when the service ends the stream. application/x-ndjson: one " +
      "record per line, and after a settled run a last line with its end. Framed, a stream " +
      "reads:\n\n```\nevent: start\nid: <event id>\n" +
      'data: {"from":"2026-11-21T05:17:42.123456Z","resumed":false}\n\n' +
      "id: <event id>\ndata: <the record as one line of JSON>\n\n: keep-alive\n\n" +
      'event: end\ndata: {"reason":"shutting_down"}\n```',
    headers: headers("X-Request-Id", "Cache-Control"),
    content: {
      // Each event's fields, as a schema can say them; the framing is in the description.
      "text/event-stream": {
        schema: {
          oneOf: [
            {
              type: "object",
              required: ["id", "data"],
              properties: { id: STRING, data: row },
            },
            namedEvent("start", {
              type: "object",
              required: ["from", "resumed"],
              properties: { from: STRING, resumed: { type: "boolean" } },
            }),
            ref("schemas", "follow.end"),
          ],
        },
      },
      "application/x-ndjson": {
        schema: {
          ...STRING,
          description:
            `Lines of JSON: each a record (\`${endpoint.name}.row\`); after a settled run, a last ` +
            '`{"end":{"reason":"settled","cursor":…}}` (`follow.end-data`).',
        },
      },
    },
  };
}

const WATCH_LAST_EVENT_ID: Json = {
  name: "Last-Event-ID",
  in: "header",
  required: false,
  description:
    "The ETag of the value last received (EventSource sends it by itself when it reconnects): " +
    "while it is still the current value, nothing is sent until the value changes.",
  schema: STRING,
};

function watchResponse(endpoint: EndpointDefinition): Json {
  return {
    description:
      "Server-Sent Events: the current answer first, then one event each time the cached value " +
      "for these parameters changes (a new ETag; a refresh that returns the same bytes sends " +
      "nothing), until the caller leaves or the service ends the stream (follow.end). Each " +
      "value: comment lines `: cache-status: …` and `: age: …` (as those headers of a GET would " +
      "say), `event: result`, `id:` its ETag, `data:` the JSON body as GET answers it. A comment " +
      "line every 15 s while idle. Framed, a stream reads:\n\n```\n" +
      ': cache-status: query-service; hit; ttl=900\n: age: 0\nevent: result\nid: "<ETag>"\n' +
      'data: {"result":[…]}\n\n: keep-alive\n\nevent: end\ndata: {"reason":"shutting_down"}\n```',
    headers: headers("X-Request-Id", "Cache-Control"),
    content: {
      "text/event-stream": {
        schema: {
          oneOf: [
            namedEvent("result", {
              type: "object",
              required: ["result"],
              properties: {
                result: { type: "array", items: ref("schemas", `${endpoint.name}.row`) },
              },
            }),
            ref("schemas", "follow.end"),
          ],
        },
      },
    },
  };
}

/** What tells one stream kind's operations apart. */
interface StreamKind {
  /** After the endpoint's path, and its operation id. */
  suffix: "follow" | "watch";
  summary: string;
  description: string;
  /** Parameter components beside the endpoint's own. */
  parameters: string[];
  errors: number[];
}

const FOLLOW_STREAM: StreamKind = {
  suffix: "follow",
  summary: "followed as records arrive",
  description:
    "`tail -f` for the endpoint: its parameters but `iso_timestamp_end` and `cursor` (400 " +
    "naming them; 403 for a credential whose scope fixes `iso_timestamp_end`). Without " +
    "`iso_timestamp_start` (or `since`, or a cursor as `after` or Last-Event-ID) the stream " +
    "starts at the moment of connection; with it, it first sends every record after that " +
    "point, then goes live, or with `until=settled` ends once what can no longer change was " +
    "sent. At most " +
    "LOGS_FOLLOW_MAX_PER_CREDENTIAL streams per credential and STREAMS_MAX_PER_ADDRESS per " +
    "client address (429 `rate_limited`), STREAMS_MAX_OPEN per process (503 `overloaded`).",
  parameters: ["follow.after", "follow.until", "Last-Event-ID"],
  errors: FOLLOW_ERRORS,
};

const WATCH_STREAM: StreamKind = {
  suffix: "watch",
  summary: "watched as its cached value changes",
  description:
    "For dashboards: instead of polling, receive each new value the service computes. The " +
    "stream queries nothing of its own: it keeps the value warm as a polling client would. " +
    "Streams count against the same caps as follow streams (LOGS_FOLLOW_MAX_PER_CREDENTIAL per " +
    "credential, STREAMS_MAX_PER_ADDRESS per address: 429; STREAMS_MAX_OPEN per process: 503).",
  parameters: ["watch.Last-Event-ID"],
  errors: WATCH_ERRORS,
};

/** A stream's operation; `parameterNames`: the endpoint's that the stream takes. */
function streamOperation(
  kind: StreamKind,
  endpoint: EndpointDefinition,
  parameterNames: string[],
  operationId: string,
  summary: string,
): Json {
  return {
    tags: [endpoint.name],
    operationId: `${operationId}_${kind.suffix}`,
    summary: `${endpoint.name}, ${kind.summary}, ${summary}`,
    description: kind.description,
    parameters: [...parameterNames, ...kind.parameters].map((name) => ref("parameters", name)),
    responses: {
      200: ref("responses", `${endpoint.name}.${kind.suffix}`),
      ...errorResponses(kind.errors),
    },
  };
}

/** Whether `entry` has a watch stream: its answers are cached. */
const watchable = ({ endpoint }: Callable) => endpoint.cache !== undefined;

/** Whether `entry` has a follow stream its credential may open: a scope fixing an end refuses it. */
const followable = ({ endpoint, fixed }: Callable) =>
  endpoint.follow === true && fixed.iso_timestamp_end === undefined;

/**
 * An endpoint's paths and their operations, each name path's format suffixes after it, its follow
 * stream's after each when it has one;
 * `params`: its parameters' components, by name.
 */
function endpointPaths(entry: Callable, params: Record<string, Json>): [string, { get: Json }][] {
  const { endpoint } = entry;
  const names = Object.keys(params);
  const followed = names.filter((name) => !NOT_FOLLOWED.includes(params[name]?.name as string));
  const paths: [string, { get: Json }][] = [];
  for (const [path, operationId, summary, named] of pathsOf(endpoint)) {
    paths.push([path, { get: operation(endpoint, names, operationId, summary) }]);
    for (const format of named ? SUFFIXED : []) {
      paths.push([
        `${path}.${format.suffix}`,
        { get: operation(endpoint, names, operationId, summary, format) },
      ]);
    }
    if (followable(entry)) {
      paths.push([
        `${path}/follow`,
        { get: streamOperation(FOLLOW_STREAM, endpoint, followed, operationId, summary) },
      ]);
    }
    if (watchable(entry)) {
      paths.push([
        `${path}/watch`,
        { get: streamOperation(WATCH_STREAM, endpoint, names, operationId, summary) },
      ]);
    }
  }
  return paths;
}

/** The document describing what a caller may call: the whole catalog, or what one credential may. */
export function openApiDocument({ callable, metrics }: Described): OpenApiDocument {
  const params = new Map(callable.map((entry) => [entry.endpoint, parameters(entry)]));
  const following = callable.filter(followable);
  const watching = callable.filter(watchable);
  const cached = watching.length > 0;
  const service = serviceComponents();
  const paths = {
    ...Object.fromEntries(
      callable.flatMap((entry) => endpointPaths(entry, params.get(entry.endpoint) ?? {})),
    ),
    ...servicePaths(metrics),
  };
  // The shared error responses the paths name, and the codes those and the probes' answer with.
  const statuses = [...referenced("responses", paths)]
    .filter((name) => /^\d{3}$/.test(name))
    .map(Number)
    .sort((a, b) => a - b);
  const codes = new Set([...statuses.flatMap(codesOf), ...Object.values(PROBE_RESPONSES).flat()]);
  const responses: Record<string, Json> = {
    ...Object.fromEntries(
      callable.flatMap(({ endpoint }) =>
        SUFFIXED.map((format) => [
          okName(endpoint, format),
          format === json ? jsonResponse(endpoint) : textResponse(endpoint, format),
        ]),
      ),
    ),
    ...Object.fromEntries(
      following.map(({ endpoint }) => [`${endpoint.name}.follow`, followResponse(endpoint)]),
    ),
    ...Object.fromEntries(
      watching.map(({ endpoint }) => [`${endpoint.name}.watch`, watchResponse(endpoint)]),
    ),
    ...(cached && { NotModified: NOT_MODIFIED }),
    ...service.responses,
    ...Object.fromEntries(statuses.map((status) => [String(status), errorResponse(status)])),
    ...Object.fromEntries(
      Object.entries(PROBE_RESPONSES).map(([name, codes]) => [name, errorResponse(503, codes)]),
    ),
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "Log & usage query service",
      version: packageJson.version,
      description:
        "Saved, read-only analytics queries over request and function logs. Every call but the " +
        "probes needs a credential: an API key as `X-API-KEY`, or an API key or signed access " +
        "token as `Authorization: Bearer`. `GET /openapi.json` without a credential describes " +
        "every endpoint; with one, only those it may call, with the parameters its scopes fix.",
    },
    security: [{ apiKey: [] }, { bearer: [] }],
    tags: [
      CATALOG_TAG,
      ...callable.map(({ endpoint }) => ({
        name: endpoint.name,
        description: endpoint.description,
      })),
      SERVICE_TAG,
    ],
    paths,
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
        ...(following.length + watching.length > 0 && {
          "follow.end": FOLLOW_END,
          "follow.end-data": FOLLOW_END_DATA,
        }),
        ...service.schemas,
        ...Object.fromEntries([...codes].map((code) => [`error.${code}`, errorSchema(code)])),
      },
      parameters: {
        ...Object.assign({}, ...params.values()),
        ...(cached && { "If-None-Match": IF_NONE_MATCH }),
        ...(following.length > 0 && { ...FOLLOW_PARAMETERS, "Last-Event-ID": LAST_EVENT_ID }),
        ...(watching.length > 0 && { "watch.Last-Event-ID": WATCH_LAST_EVENT_ID }),
      },
      responses,
      // Those the responses name: a document without a cached endpoint has no ETag.
      headers: Object.fromEntries(
        Object.entries(HEADERS).filter(([name]) => referenced("headers", responses).has(name)),
      ),
    },
  };
}
