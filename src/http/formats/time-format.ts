// `time_format`: how an answer's instants are written, for clients that cannot read the spec's
// forms (a DATETIME has no zone, which JavaScript reads as local time; Grafana's Infinity types
// epoch milliseconds without a format string). A presentation of a result, not a parameter of its
// query: taken out of the query string before the scope and the endpoint's validator see it, so no
// scope fixes or forbids it, and the one cached result is rendered per time format.
import type { Payload, Rendition } from "../../cache/payload.ts";
import { resultRows } from "../../cache/serialized-result.ts";
import type { RawQuery } from "../../credentials/scope-rule.ts";
import type { EndpointDefinition } from "../../endpoints/catalog.ts";
import { InvalidParamsError } from "../../endpoints/params.ts";
import type { Row } from "../../engines/engine.ts";
import { formatTimestamp, parseIsoTimestamp, wireTimestampMicros } from "../../time.ts";
import type { Format } from "./format.ts";

export const TIME_FORMAT_PARAM = "time_format";

/** Epoch milliseconds (a JSON number), or RFC 3339 in UTC ending in `Z`. */
export const TIME_FORMATS = ["epoch_ms", "rfc3339"] as const;
export type TimeFormat = (typeof TIME_FORMATS)[number];

/** A query string's frozen object (query-string.ts) without `time_format`, made once. */
const withoutByQuery = new WeakMap<RawQuery, { query: RawQuery; given: unknown }>();

/**
 * The query string without `time_format`, and the value it gave (unchecked: the scope refuses
 * before a bad value does). The same text keeps finding the same frozen object (query-string.ts),
 * so that what is derived from it (validated parameters) is found by identity: the query is
 * returned as it is when it has none, and made once per frozen query when it has one (a Grafana
 * panel always sends it).
 */
export function withoutTimeFormat(query: RawQuery): { query: RawQuery; given: unknown } {
  if (!(TIME_FORMAT_PARAM in query)) return { query, given: undefined };
  let without = withoutByQuery.get(query);
  if (without === undefined) {
    const { [TIME_FORMAT_PARAM]: given, ...rest } = query;
    without = { query: Object.freeze(rest), given };
    if (Object.isFrozen(query)) withoutByQuery.set(query, without);
  }
  return without;
}

/** The time format a request asked for: undefined when it gave none (or an empty one); else 400. */
export function timeFormatOf(given: unknown): TimeFormat | undefined {
  if (given === undefined || given === "") return undefined;
  const found = TIME_FORMATS.find((format) => format === given);
  if (found) return found;
  throw new InvalidParamsError([
    {
      param: TIME_FORMAT_PARAM,
      message: `must be one of ${TIME_FORMATS.join(", ")}`,
    },
  ]);
}

/** A row with each of `columns` written in `format`; the other columns (and NULLs) as they are. */
export function presentTimes(row: Row, columns: readonly string[], format: TimeFormat): Row {
  const presented: Row = { ...row };
  for (const column of columns) {
    const value = row[column];
    if (typeof value !== "string") continue;
    const micros = instantOf(value);
    if (micros === undefined) continue;
    presented[column] = format === "rfc3339" ? formatTimestamp(micros) : epochMillis(micros);
  }
  return presented;
}

/**
 * Epoch µs of a TIMESTAMP as rows carry it (`2026-11-21T05:00:00.000000Z`) or of a DATETIME
 * (`2026-11-21T05:00:00`, UTC by the spec).
 */
function instantOf(value: string): bigint | undefined {
  return /(?:[Zz]|[+-]\d\d:\d\d)$/.test(value)
    ? wireTimestampMicros(value)
    : parseIsoTimestamp(`${value}Z`);
}

/** Whole milliseconds, rounded down (before 1970 too). */
function epochMillis(micros: bigint): number {
  const below = ((micros % 1000n) + 1000n) % 1000n;
  return Number((micros - below) / 1000n);
}

/** The payload's rows with their instants in `format`, as JSON writes them. */
function presentedPayload(payload: Payload, columns: readonly string[], format: TimeFormat) {
  const rows = resultRows(payload).map((row) => presentTimes(row, columns, format));
  return { ...payload, body: JSON.stringify({ result: rows }) };
}

const renditions = new WeakMap<EndpointDefinition, Map<string, Rendition>>();

/**
 * How an answer of `endpoint` is made from its cached JSON in `format` with its instants in
 * `timeFormat`: undefined for the JSON as stored, the format's own rendition without a time
 * format (or without a time column), else one that presents the instants first. Each is its own
 * rendition of the entry (name and ETag), so one engine query answers every time format.
 */
export function renditionFor(
  endpoint: EndpointDefinition,
  format: Format,
  timeFormat: TimeFormat | undefined,
): Rendition | undefined {
  const plain = format.renditionFor?.(endpoint.columnNames);
  if (timeFormat === undefined || endpoint.timeColumns.length === 0) return plain;
  let ofEndpoint = renditions.get(endpoint);
  if (ofEndpoint === undefined) {
    ofEndpoint = new Map();
    renditions.set(endpoint, ofEndpoint);
  }
  const name = `${format.suffix}+${timeFormat}`;
  let rendition = ofEndpoint.get(name);
  if (rendition === undefined) {
    rendition = {
      name,
      render: (payload) => {
        const presented = presentedPayload(payload, endpoint.timeColumns, timeFormat);
        return plain ? plain.render(presented) : presented;
      },
    };
    ofEndpoint.set(name, rendition);
  }
  return rendition;
}
