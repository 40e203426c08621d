// BigQuery REST result rows (`{f:[{v}]}` cells under a schema) → the wire format (docs/api.md, "Responses").
// Decoded here rather than by the client, whose TIMESTAMP objects drop microseconds to ms form.
import { formatDatetime, formatTimestamp, parseIsoTimestamp } from "../time.ts";
import type { JsonValue, ResultColumn, Row } from "./engine.ts";

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

/** BigQuery's REST names for types (its legacy ones) as an endpoint's columns name them. */
const STANDARD_NAMES: Readonly<Record<string, string>> = {
  INTEGER: "INT64",
  FLOAT: "FLOAT64",
  BOOLEAN: "BOOL",
  STRUCT: "RECORD",
};

/** A field of a result's schema as a ResultColumn; unnamed columns as BigQuery names them, f0_. */
export function resultColumnOf(field: RestField, index: number): ResultColumn {
  const given = field.type ?? "STRING";
  const type = STANDARD_NAMES[given] ?? given;
  const fields = field.fields?.map(resultColumnOf);
  const element = fields
    ? `STRUCT<${fields.map((f) => `${f.name} ${f.spelled}`).join(", ")}>`
    : type;
  return {
    name: field.name ?? `f${index}_`,
    type,
    ...(field.mode === "REPEATED" && { mode: "REPEATED" }),
    ...(fields && { fields }),
    spelled: field.mode === "REPEATED" ? `ARRAY<${element}>` : element,
  };
}
