// BigQuery REST result rows (`{f:[{v}]}` cells under a schema) → the wire format (docs/api.md, "Responses").
// Decoded here rather than by the client, whose TIMESTAMP objects drop microseconds to ms form.
import { formatDatetime, formatTimestamp, parseIsoTimestamp } from "../time.ts";
import type { JsonValue, Row } from "./engine.ts";

export interface RestField {
  name?: string | null;
  type?: string | null;
  mode?: string | null;
  fields?: RestField[] | null;
}

export interface RestRow {
  f?: { v?: unknown }[] | null;
}

/** Rows as objects keyed in schema order, i.e. the query's column order. */
export function decodeRows(fields: RestField[], rows: RestRow[]): Row[] {
  return rows.map((row) => decodeRecord(fields, row));
}

function decodeRecord(fields: RestField[], row: RestRow): Row {
  const cells = row.f ?? [];
  return Object.fromEntries(
    fields.map((field, i) => [field.name ?? `f${i}_`, decodeField(cells[i]?.v, field)]),
  );
}

function decodeField(v: unknown, field: RestField): JsonValue {
  if (v === null || v === undefined) return null;
  if (field.mode === "REPEATED") {
    return (v as { v?: unknown }[]).map((element) => decodeValue(element.v, field));
  }
  return decodeValue(v, field);
}

function decodeValue(v: unknown, field: RestField): JsonValue {
  if (v === null || v === undefined) return null;
  switch (field.type) {
    case "RECORD":
    case "STRUCT":
      return decodeRecord(field.fields ?? [], v as RestRow);
    // The client asks for formatOptions.useInt64Timestamp, so TIMESTAMP is epoch microseconds.
    case "TIMESTAMP":
      return formatTimestamp(BigInt(v as string));
    case "DATETIME": {
      const micros = parseIsoTimestamp(`${v}Z`);
      return micros === undefined ? (v as string) : formatDatetime(micros);
    }
    case "INTEGER":
    case "INT64":
    case "FLOAT":
    case "FLOAT64":
      return Number(v);
    case "BOOLEAN":
    case "BOOL":
      return v === "true";
    default:
      // STRING, and BigQuery's own text for types our queries do not return (DATE, NUMERIC, ...).
      return v as string;
  }
}
