// The row an endpoint answers, declared in its definition's `columns` and compiled into the JSON
// Schema of one row: the SQL's output columns in order, each with the JSON type the wire format
// gives its SQL type.
// test/sql/row-schemas.test.ts holds every declaration equal to the columns GoogleSQL's analyzer
// finds in endpoints/<name>/bigquery.sql, and nullable exactly where the SQL can give NULL.

type JsonType = "integer" | "number" | "boolean" | "string" | "array" | "object";

export interface ColumnSchema {
  readonly type: JsonType | readonly [JsonType, "null"];
  readonly format?: string;
  readonly description?: string;
  readonly items?: ColumnSchema;
  readonly properties?: Readonly<Record<string, ColumnSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: false;
}

/** One row: an object with every column, in the SQL's order. */
export interface RowSchema extends ColumnSchema {
  readonly type: "object";
  readonly properties: Readonly<Record<string, ColumnSchema>>;
}

export const INT64: ColumnSchema = { type: "integer" };
export const FLOAT64: ColumnSchema = { type: "number" };
export const STRING: ColumnSchema = { type: "string" };
export const BOOL: ColumnSchema = { type: "boolean" };
export const TIMESTAMP: ColumnSchema = {
  type: "string",
  format: "date-time",
  description: "RFC 3339 UTC with microseconds, e.g. 2026-11-21T05:00:00.000000Z",
};
// date-time-local, the OpenAPI Format Registry's RFC 3339 date-time without an offset: what tells a
// client (the explorer's charts among them) that the column is a time, read as UTC by the spec.
export const DATETIME: ColumnSchema = {
  type: "string",
  format: "date-time-local",
  description: "UTC date and time without a zone, e.g. 2026-11-21T05:00:00",
};

/** A column the SQL can give NULL in (BigQuery arrays never are: an empty one is []). */
export function nullable(column: ColumnSchema): ColumnSchema {
  return { ...column, type: [column.type as JsonType, "null"] };
}

/** ARRAY<element>: a JSON array. */
export function arrayOf(element: ColumnSchema): ColumnSchema {
  return { type: "array", items: element };
}

/** STRUCT<...>, and a whole row: an object with exactly these fields. */
export function struct(fields: Readonly<Record<string, ColumnSchema>>): RowSchema {
  return {
    type: "object",
    properties: fields,
    required: Object.keys(fields),
    additionalProperties: false,
  };
}
