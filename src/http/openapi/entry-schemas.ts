// The schema each entry route declares (route-kinds.ts): an endpoint's answer (by name or id, in
// the format its suffix or Accept names), its follow stream and its watch, each made from the
// endpoint — its parameters as its validator takes them, its row, its cache and paging — so that
// what the document says of a path is what that path checks and sends.

import type { EndpointDefinition } from "../../endpoints/catalog.ts";
import { notFollowed } from "../../endpoints/catalog.ts";
import { csv } from "../formats/csv.ts";
import type { Format } from "../formats/format.ts";
import { json as jsonFormat } from "../formats/json.ts";
import { ndjson } from "../formats/ndjson.ts";
import { TIME_FORMAT_PARAM, TIME_FORMATS } from "../formats/time-format.ts";
import type { EndReason } from "../streams/outbound-stream.ts";
import {
  ANY_REQUEST_ERRORS,
  errorResponses,
  type HeaderName,
  headers,
  type Json,
  json,
  RATE_LIMIT,
  STRING,
} from "./responses.ts";
import { DASHBOARD_RESPONSE } from "./service-schemas.ts";

/** The name of `endpoint`'s row among the document's schemas. */
const rowName = (endpoint: EndpointDefinition) => `${endpoint.name}.row`;

/** `endpoint`'s row, as the schemas below refer to it. */
export const rowSchemaOf = (endpoint: EndpointDefinition): Json => {
  const { columns, timeColumns } = endpoint;
  return {
    $id: rowName(endpoint),
    ...columns,
    properties: {
      ...columns.properties,
      ...Object.fromEntries(
        timeColumns.map((column) => {
          const own = columns.properties[column];
          // A DATETIME (date-time-local) with time_format=rfc3339 gains its `Z`: a date-time.
          const forms = own?.format === "date-time" ? [own, EPOCH_MS] : [own, RFC3339, EPOCH_MS];
          return [column, { anyOf: forms }];
        }),
      ),
    },
  };
};

/** A DATETIME column with `time_format=rfc3339`: UTC, so an RFC 3339 date-time ending in Z. */
const RFC3339 = {
  type: "string",
  format: "date-time",
  description: "RFC 3339 with Z: the column's value with time_format=rfc3339.",
};

/** A time column with `time_format=epoch_ms`. */
const EPOCH_MS = {
  type: "integer",
  description: "Epoch milliseconds: the column's value with time_format=epoch_ms.",
};

const rowOf = (endpoint: EndpointDefinition) => ({ $ref: `${rowName(endpoint)}#` });

/**
 * Statuses an endpoint's GET can answer; its 404 when a reload removed the endpoint after this
 * document was read.
 */
const ENDPOINT_ERRORS = [400, 401, 403, 404, 406, 429, 502, 503, 504, ...ANY_REQUEST_ERRORS];

/** Statuses a follow stream's GET can answer: it runs no query before its 200. */
const FOLLOW_ERRORS = [400, 401, 403, 404, 406, 429, 503, ...ANY_REQUEST_ERRORS];

export const CACHE: HeaderName[] = ["X-Cache", "Age", "ETag"];
/** The headers of an endpoint's 304; those a cache sends may go. */
const NOT_MODIFIED_HEADERS: HeaderName[] = [
  "X-Request-Id",
  ...RATE_LIMIT,
  "Cache-Control",
  ...CACHE,
  "Cache-Status",
  "Server-Timing",
  "Timing-Allow-Origin",
  "X-Bytes-Processed",
];
/** The headers of an endpoint's 200, in every format; those a cache or a page sends may go. */
const OK_HEADERS: HeaderName[] = [...NOT_MODIFIED_HEADERS, "X-Result-Truncated", "Link"];

/** How each format writes the rows; `row` names the row's schema. */
const FORMAT_BODIES = new Map<Format, (row: string) => string>([
  [
    jsonFormat,
    () =>
      '`{"result":[row, ...]}`. Where the path has no format suffix, Accept picks the format: ' +
      "application/json (the default), or application/x-ndjson and text/csv, declared on that " +
      "path as text and answered as the `.ndjson` and `.csv` paths answer them (described there).",
  ],
  [
    ndjson,
    (row) =>
      `Each row as one line of JSON (schema \`${row}\`) ending in a newline; no rows, an empty body.`,
  ],
  [
    csv,
    () =>
      "CSV (RFC 4180): a header record of the column names, then one record per row, NULL as an " +
      "empty cell, arrays and objects as their JSON text; no rows, the header record alone.",
  ],
]);

/** A format's media type. */
export const mediaType = (format: Format) => format.contentType.split(";")[0] as string;

const IF_NONE_MATCH = {
  type: "string",
  description:
    "An ETag from an earlier answer: unchanged, the answer is a bodyless 304. A request with it is " +
    "a poll, answered from the cache: the `Cache-Control: no-cache` or `max-age=0` that fetch " +
    "and browsers add beside it ask for no recomputation (a `max-age` of 1 s or more still does).",
};

/** What an entry route's schema is made from (route-kinds.ts's entry routes). */
export interface DescribedEntry {
  readonly endpoint: EndpointDefinition;
  /** How its path names the endpoint, as its operation id (`_by_id`) and summary (`by id`) say. */
  readonly naming: { readonly operation: string; readonly summary: string };
  /** The format its suffix names; absent on a path without one. */
  readonly format?: Format;
}

/** Word characters only: Swagger UI's "try it" fails to find an operation whose id has a dot. */
const operationIdOf = ({ endpoint, naming, format }: DescribedEntry, kind?: string) =>
  [`${endpoint.name.replace(/\W/g, "_")}${naming.operation}`, format?.suffix, kind]
    .filter(Boolean)
    .join("_");

/**
 * The endpoint's query string as its validator takes it (the JSON Schema of `endpoint.params`),
 * less `omitted`. The endpoint's example value of a parameter comes first among its examples: the
 * one Swagger UI's "try it" fills in.
 */
function queryStringOf(endpoint: EndpointDefinition, omitted: readonly string[] = []): Json {
  const { properties, required = [] } = endpoint.paramsJsonSchema;
  const taken = (name: string) => !omitted.includes(name);
  return {
    type: "object",
    properties: {
      ...Object.fromEntries(
        Object.entries(properties)
          .filter(([name]) => taken(name))
          .map(([name, property]) => {
            const example = endpoint.example[name];
            if (example === undefined) return [name, property];
            const others = (property.examples ?? []).filter((value) => value !== example);
            return [name, { ...property, examples: [example, ...others] }];
          }),
      ),
      [TIME_FORMAT_PARAM]: timeFormatParam(endpoint),
    },
    required: required.filter(taken),
  };
}

/**
 * `time_format`, which every path of an endpoint's rows takes, and the columns it rewrites
 * (`x-time-columns`, as the listing's `time_columns`).
 */
function timeFormatParam({ timeColumns }: EndpointDefinition): Json {
  const columns = timeColumns.length
    ? `its time columns (${timeColumns.join(", ")})`
    : "its time columns (it has none: the rows are as without it)";
  return {
    type: "string",
    enum: [...TIME_FORMATS],
    description:
      `How ${columns} are written: \`epoch_ms\` as JSON numbers of epoch milliseconds, ` +
      "`rfc3339` as RFC 3339 strings in UTC ending in `Z` (a DATETIME is UTC). In every format " +
      "and stream; absent, as the row's schema gives them. A presentation of the same answer: " +
      "it is cached once, and a credential's scope neither fixes nor forbids it.",
    "x-time-columns": [...timeColumns],
  };
}

const cachedNote = (endpoint: EndpointDefinition) =>
  endpoint.cache
    ? ` Cached ${endpoint.cache.ttlSeconds} s and warmed every ${endpoint.cache.warmingSeconds} s: a matching If-None-Match gets 304.`
    : "";

/**
 * An endpoint's 200. Its JSON is the one typed success body, so that a generated client's `data`
 * is `{result}` rather than a union with text: on the plain path the formats Accept picks are
 * declared beside it as strings, and a suffix's path declares its format alone. Only the headers
 * its cache and paging send.
 */
function okResponse({ endpoint, format }: DescribedEntry): Json {
  const sent = OK_HEADERS.filter(
    (name) => (endpoint.cache || !CACHE.includes(name)) && (endpoint.paging || name !== "Link"),
  );
  const rows = {
    type: "object",
    required: ["result"],
    properties: { result: { type: "array", items: rowOf(endpoint), maxItems: endpoint.maxRows } },
  };
  const offered: Record<string, { schema: Json }> = {
    ...json(rows),
    // Text, so that a generated client's type for the answer stays the JSON one.
    ...Object.fromEntries([ndjson, csv].map((other) => [mediaType(other), { schema: STRING }])),
  };
  const body = FORMAT_BODIES.get(format ?? jsonFormat)?.(rowName(endpoint)) ?? "";
  return {
    description: `The rows, at most ${endpoint.maxRows}${format && format !== jsonFormat ? "." : ":"} ${body}${cachedNote(endpoint)}`,
    headers: headers(...sent),
    content: format ? { [mediaType(format)]: offered[mediaType(format)] } : offered,
  };
}

const NOT_MODIFIED = {
  description:
    "The If-None-Match given matches: the representation you hold is current. No body, and " +
    "none of the headers that would describe one (Content-Type, Content-Length: RFC 9110 §15.4.5).",
  headers: headers(...NOT_MODIFIED_HEADERS),
  type: "null",
};

/** GET of an endpoint, by its name or id, in the format its suffix names or else Accept. */
export function answerSchema(entry: DescribedEntry) {
  const { endpoint, naming, format } = entry;
  return {
    tags: [endpoint.name],
    operationId: operationIdOf(entry),
    summary: format
      ? `${endpoint.name} as ${mediaType(format)}, ${naming.summary}`
      : `${endpoint.name}, ${naming.summary}`,
    description:
      `${endpoint.description} Unknown and repeated parameters are refused by name; a required ` +
      "parameter given empty counts as missing, an optional one as absent." +
      (format ? ` The suffix \`.${format.suffix}\` names the format, whatever Accept says.` : ""),
    querystring: queryStringOf(endpoint),
    ...(endpoint.cache && {
      headers: { type: "object", properties: { "If-None-Match": IF_NONE_MATCH } },
    }),
    response: {
      200: okResponse(entry),
      ...(endpoint.cache && { 304: NOT_MODIFIED }),
      // With a suffix, the suffix names the format, not Accept.
      ...errorResponses(ENDPOINT_ERRORS.filter((status) => !format || status !== 406)),
    },
  };
}

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
  endpoint_removed:
    "a reload (SIGHUP) removed the endpoint: a reconnect is answered 404 endpoint_not_found",
  endpoint_changed:
    "a reload (SIGHUP) changed the endpoint's definition or SQL: reconnect, with Last-Event-ID, to follow or watch its new version",
};

/** What an `end` says: why, and where the next stream resumes (`after=`). */
const FOLLOW_END_DATA = {
  $id: "follow.end-data",
  type: "object",
  required: ["reason"],
  properties: {
    reason: { enum: Object.keys(END_REASONS) },
    cursor: STRING,
    bytes_processed: {
      type: "integer",
      minimum: 0,
      description: "On BigQuery, the bytes the settled run's queries processed (what they bill).",
    },
  },
};

/** The `end` event a Server-Sent Events stream closes with, and each reason it gives. */
const FOLLOW_END = {
  $id: "follow.end",
  type: "object",
  description:
    '`event: end` and `data: {"reason": …}`, the last event of a stream the service ended: ' +
    Object.entries(END_REASONS)
      .map(([reason, when]) => `\`${reason}\` when ${when}`)
      .join("; ") +
    ". A client leaving ends it with no event.",
  required: ["event", "data"],
  properties: { event: { const: "end" }, data: { $ref: "follow.end-data#" } },
};

/** The schemas the stream routes share, for the app's shared schemas. */
export const STREAM_SCHEMAS = [FOLLOW_END_DATA, FOLLOW_END];

/** A Server-Sent Event with a name, an id and `data` as the schema gives it. */
const namedEvent = (event: string, data: Json): Json => ({
  type: "object",
  required: ["event", "id", "data"],
  properties: { event: { const: event }, id: STRING, data },
});

/** A stream's Last-Event-ID header, as `description` says it is taken. */
const lastEventId = (description: string) => ({
  type: "object",
  properties: { "Last-Event-ID": { type: "string", description } },
});

const STREAM_CAPS =
  "LOGS_FOLLOW_MAX_PER_CREDENTIAL per credential and STREAMS_MAX_PER_ADDRESS per client " +
  "address (429 `rate_limited`), STREAMS_MAX_OPEN per process (503 `overloaded`).";

/** A follow stream's own parameters, beside its endpoint's. */
const FOLLOW_PARAMS: Record<string, Json> = {
  after: {
    type: "string",
    description:
      "An event id, or the cursor a settled stream ended with: the stream resumes from that " +
      "place, as with Last-Event-ID (which wins when both are given), for clients that cannot " +
      "set a header, whatever start of the window the URL gives (a scope's start still " +
      "bounds it). A cursor this service did not make is 400 `invalid_params`; with " +
      "`until=settled`, so is one older than the tier's retention (records after it were dropped).",
  },
  until: {
    enum: ["settled"],
    description:
      "`settled`: instead of going live, send every record up to now − LOGS_FOLLOW_LAG_SECONDS " +
      "(which no late record can overtake any more), then end with `event: end` and " +
      '`{"reason":"settled","cursor":…}` (NDJSON: a last line `{"end":{"reason":"settled","cursor":…}}`). ' +
      "Runs each started `after` the last one's cursor give every record once, in order; " +
      "a run with `after` resumes there whatever start of the window the URL gives.",
  },
};

/** GET …/<name>/follow of an endpoint that has it. */
export function followSchema(entry: DescribedEntry) {
  const { endpoint, naming } = entry;
  const endpointParams = queryStringOf(
    endpoint,
    endpoint.paging ? notFollowed(endpoint.paging) : [],
  ) as { properties: Json; required: string[] };
  return {
    tags: [endpoint.name],
    operationId: operationIdOf(entry, "follow"),
    summary: `${endpoint.name}, followed as records arrive, ${naming.summary}`,
    description:
      "`tail -f` for the endpoint: its parameters but the end of its window and `cursor` (400 " +
      "naming them; 403 for a credential whose scope fixes the end). Without the start of its " +
      "window (or its `since`, or a cursor as `after` or Last-Event-ID) the stream " +
      "starts at the moment of connection; with it, it first sends every record after that " +
      "point, then goes live, or with `until=settled` ends once what can no longer change was " +
      `sent. At most ${STREAM_CAPS}`,
    querystring: {
      ...endpointParams,
      properties: { ...endpointParams.properties, ...FOLLOW_PARAMS },
    },
    headers: lastEventId(
      "The id of the last event received (EventSource sends it by itself when it reconnects): a " +
        "place in what the stream sent, from which it resumes with every record not sent yet, late " +
        "ones within the lag included, none twice, whatever start of the window the URL gives " +
        "(a scope's start still bounds it). An id this service did not make is 400 `bad_request`.",
    ),
    response: {
      200: {
        description:
          "The endpoint's new records as they arrive, oldest first, each once, until the caller " +
          "leaves or the service ends the stream; the connection is closed after it. Accept picks " +
          "the framing. text/event-stream (the default, what EventSource sends): Server-Sent Events, " +
          "first `event: start` (`id:` where the stream starts, `data:` its time and whether it " +
          "resumed), then one per record, its fields as the schema gives them (`data:` the record " +
          "as JSON, `id:` the event id Last-Event-ID takes back), a comment line every 15 s while idle, and " +
          "`event: end` (follow.end) when the service ends the stream. application/x-ndjson: one " +
          "record per line, and when the service ends the stream a last line with its end (where it " +
          "got to: `after=` resumes there). Framed, a stream " +
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
                  properties: { id: STRING, data: rowOf(endpoint) },
                },
                namedEvent("start", {
                  type: "object",
                  required: ["from", "resumed"],
                  properties: { from: STRING, resumed: { type: "boolean" } },
                }),
                { $ref: "follow.end#" },
              ],
            },
          },
          "application/x-ndjson": {
            schema: {
              ...STRING,
              description:
                "Lines of JSON: each a record (the endpoint's row); after a settled run, a last " +
                '`{"end":{"reason":"settled","cursor":…}}` (`follow.end-data`).',
            },
          },
        },
      },
      ...errorResponses(FOLLOW_ERRORS),
    },
  };
}

/** GET …/<name>/watch of an endpoint that has it (a cached one). */
export function watchSchema(entry: DescribedEntry) {
  const { endpoint, naming } = entry;
  return {
    tags: [endpoint.name],
    operationId: operationIdOf(entry, "watch"),
    summary: `${endpoint.name}, watched as its cached value changes, ${naming.summary}`,
    description:
      "For dashboards: instead of polling, receive each new value the service computes. The " +
      "stream queries nothing of its own: it keeps the value warm as a polling client would. " +
      `Streams count against the same caps as follow streams: ${STREAM_CAPS}`,
    querystring: queryStringOf(endpoint),
    headers: lastEventId(
      "The ETag of the value last received (EventSource sends it by itself when it reconnects): " +
        "while it is still the current value, nothing is sent until the value changes.",
    ),
    response: {
      200: {
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
                  properties: { result: { type: "array", items: rowOf(endpoint) } },
                }),
                { $ref: "follow.end#" },
              ],
            },
          },
        },
      },
      ...errorResponses(ENDPOINT_ERRORS),
    },
  };
}

/** GET …/<name>/grafana: the endpoint's Grafana dashboard for the caller's credential. */
export function grafanaSchema(entry: DescribedEntry) {
  const { endpoint, naming } = entry;
  return {
    tags: [endpoint.name],
    operationId: operationIdOf(entry, "grafana"),
    summary: `${endpoint.name} as a Grafana dashboard, ${naming.summary}`,
    description:
      "A dashboard JSON for Grafana's Infinity datasource, for this credential: one panel of the " +
      "endpoint (a time series when its columns are one time and numbers, else a table), the " +
      "dashboard's time range in its URL, every column typed (`time_format=epoch_ms`), a " +
      "variable per required parameter the credential's scope does not fix, and a refresh no " +
      "faster than the endpoint's warming. It holds no credential: the datasource does " +
      "(docs/grafana.md). Takes no parameters.",
    querystring: { type: "object", properties: {} },
    response: {
      200: DASHBOARD_RESPONSE,
      ...errorResponses([400, 401, 403, 404, 406, 429, 503, ...ANY_REQUEST_ERRORS]),
    },
  };
}
