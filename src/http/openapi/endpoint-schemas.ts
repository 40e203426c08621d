// The schemas of the endpoint routes: GET of an endpoint (by name or id, in a format its suffix or
// Accept names), its follow stream and its watch. The routes are generic (`:nameOrId`), so each
// schema describes what every endpoint shares; catalog-paths.ts makes it each endpoint's own, at
// its own paths, with its parameters and its row (`endpoint.row` here).
import { csv } from "../formats/csv.ts";
import type { Format } from "../formats/format.ts";
import { json as jsonFormat } from "../formats/json.ts";
import { ndjson } from "../formats/ndjson.ts";
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

/** Stands for one endpoint's row in these schemas; each endpoint's paths name its own. */
export const ROW_PLACEHOLDER = {
  $id: "endpoint.row",
  description: "One row of an endpoint's answer.",
};
const ROW = { $ref: "endpoint.row#" };

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
export const FORMAT_BODIES = new Map<Format, (row: string) => string>([
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

/**
 * GET of an endpoint. Its 200 is JSON, the one typed success body, so that a generated client's
 * `data` is `{result}` rather than a union with text: the formats Accept picks are declared beside
 * it as strings, and each format suffix's path has its own.
 */
export const QUERY_SCHEMA = {
  tags: ["endpoints"],
  summary: "",
  description:
    "Unknown and repeated parameters are refused by name; a required parameter given empty " +
    "counts as missing, an optional one as absent.",
  headers: { type: "object", properties: { "If-None-Match": IF_NONE_MATCH } },
  response: {
    200: {
      description: "The rows.",
      headers: headers(...OK_HEADERS),
      content: {
        ...json({
          type: "object",
          required: ["result"],
          properties: { result: { type: "array", items: ROW } },
        }),
        // Text, so that a generated client's type for the answer stays the JSON one.
        ...Object.fromEntries(
          [ndjson, csv].map((format) => [mediaType(format), { schema: STRING }]),
        ),
      },
    },
    304: {
      description:
        "The If-None-Match given matches: the representation you hold is current. No body, and " +
        "none of the headers that would describe one (Content-Type, Content-Length: RFC 9110 §15.4.5).",
      headers: headers(...NOT_MODIFIED_HEADERS),
      type: "null",
    },
    ...errorResponses(ENDPOINT_ERRORS),
  },
};

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

const STREAM_CAPS =
  "LOGS_FOLLOW_MAX_PER_CREDENTIAL per credential and STREAMS_MAX_PER_ADDRESS per client " +
  "address (429 `rate_limited`), STREAMS_MAX_OPEN per process (503 `overloaded`).";

export const FOLLOW_SCHEMA = {
  tags: ["endpoints"],
  summary: "followed as records arrive",
  description:
    "`tail -f` for the endpoint: its parameters but the end of its window and `cursor` (400 " +
    "naming them; 403 for a credential whose scope fixes the end). Without the start of its " +
    "window (or its `since`, or a cursor as `after` or Last-Event-ID) the stream " +
    "starts at the moment of connection; with it, it first sends every record after that " +
    "point, then goes live, or with `until=settled` ends once what can no longer change was " +
    `sent. At most ${STREAM_CAPS}`,
  querystring: {
    type: "object",
    properties: {
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
    },
  },
  headers: {
    type: "object",
    properties: {
      "Last-Event-ID": {
        type: "string",
        description:
          "The id of the last event received (EventSource sends it by itself when it reconnects): a " +
          "place in what the stream sent, from which it resumes with every record not sent yet, late " +
          "ones within the lag included, none twice, whatever start of the window the URL gives " +
          "(a scope's start still bounds it). An id this service did not make is 400 `bad_request`.",
      },
    },
  },
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
              { type: "object", required: ["id", "data"], properties: { id: STRING, data: ROW } },
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

export const WATCH_SCHEMA = {
  tags: ["endpoints"],
  summary: "watched as its cached value changes",
  description:
    "For dashboards: instead of polling, receive each new value the service computes. The " +
    "stream queries nothing of its own: it keeps the value warm as a polling client would. " +
    `Streams count against the same caps as follow streams: ${STREAM_CAPS}`,
  headers: {
    type: "object",
    properties: {
      "Last-Event-ID": {
        type: "string",
        description:
          "The ETag of the value last received (EventSource sends it by itself when it reconnects): " +
          "while it is still the current value, nothing is sent until the value changes.",
      },
    },
  },
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
                properties: { result: { type: "array", items: ROW } },
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
