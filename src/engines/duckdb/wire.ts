// DuckDB values → the wire format of docs/api.md, the same JSON the BigQuery engine gives for the
// same rows: TIMESTAMPTZ (BigQuery TIMESTAMP) and TIMESTAMP (BigQuery DATETIME) as strings,
// every integer width as a number, lists as arrays and structs as objects.
import {
  arrayFromArrayValue,
  arrayFromListValue,
  booleanFromValue,
  createDuckDBValueConverter,
  type DuckDBDataChunk,
  type DuckDBTimestampTZValue,
  type DuckDBTimestampValue,
  type DuckDBType,
  DuckDBTypeId,
  type DuckDBValueConverter,
  doubleFromDecimalValue,
  nullConverter,
  numberFromValue,
  objectFromStructValue,
  stringFromValue,
} from "@duckdb/node-api";
import { formatDatetime, formatTimestamp } from "../../time.ts";
import { type JsonValue, type ResultColumn, type Row, withJson } from "../engine.ts";

const integer: DuckDBValueConverter<JsonValue> = (value) => Number(value as bigint | number);

// Types the queries never return have no converter: DuckDB reports them instead of guessing.
const converters: Partial<Record<DuckDBTypeId, DuckDBValueConverter<JsonValue>>> = {
  [DuckDBTypeId.SQLNULL]: nullConverter,
  [DuckDBTypeId.BOOLEAN]: booleanFromValue,
  [DuckDBTypeId.TINYINT]: numberFromValue,
  [DuckDBTypeId.SMALLINT]: numberFromValue,
  [DuckDBTypeId.INTEGER]: numberFromValue,
  [DuckDBTypeId.UTINYINT]: numberFromValue,
  [DuckDBTypeId.USMALLINT]: numberFromValue,
  [DuckDBTypeId.UINTEGER]: numberFromValue,
  [DuckDBTypeId.BIGINT]: integer,
  [DuckDBTypeId.UBIGINT]: integer,
  [DuckDBTypeId.HUGEINT]: integer,
  [DuckDBTypeId.UHUGEINT]: integer,
  [DuckDBTypeId.FLOAT]: numberFromValue,
  [DuckDBTypeId.DOUBLE]: numberFromValue,
  [DuckDBTypeId.DECIMAL]: doubleFromDecimalValue,
  [DuckDBTypeId.VARCHAR]: stringFromValue,
  [DuckDBTypeId.ENUM]: stringFromValue,
  [DuckDBTypeId.UUID]: stringFromValue,
  [DuckDBTypeId.TIMESTAMP_TZ]: (value) => formatTimestamp((value as DuckDBTimestampTZValue).micros),
  [DuckDBTypeId.TIMESTAMP]: (value) => formatDatetime((value as DuckDBTimestampValue).micros),
  [DuckDBTypeId.LIST]: arrayFromListValue,
  [DuckDBTypeId.ARRAY]: arrayFromArrayValue,
  [DuckDBTypeId.STRUCT]: (value, type, converter) =>
    objectFromStructValue(value, type, converter) as JsonValue,
};

export const toWireValue = createDuckDBValueConverter(
  converters as Record<DuckDBTypeId, DuckDBValueConverter<JsonValue> | undefined>,
);

/** What the converters above make of each type, in BigQuery's name for it (ResultColumn). */
const WIRE_TYPES: Partial<Record<DuckDBTypeId, string>> = {
  [DuckDBTypeId.SQLNULL]: "JSON",
  [DuckDBTypeId.BOOLEAN]: "BOOL",
  [DuckDBTypeId.TINYINT]: "INT64",
  [DuckDBTypeId.SMALLINT]: "INT64",
  [DuckDBTypeId.INTEGER]: "INT64",
  [DuckDBTypeId.UTINYINT]: "INT64",
  [DuckDBTypeId.USMALLINT]: "INT64",
  [DuckDBTypeId.UINTEGER]: "INT64",
  [DuckDBTypeId.BIGINT]: "INT64",
  [DuckDBTypeId.UBIGINT]: "INT64",
  [DuckDBTypeId.HUGEINT]: "INT64",
  [DuckDBTypeId.UHUGEINT]: "INT64",
  [DuckDBTypeId.FLOAT]: "FLOAT64",
  [DuckDBTypeId.DOUBLE]: "FLOAT64",
  [DuckDBTypeId.DECIMAL]: "FLOAT64",
  [DuckDBTypeId.VARCHAR]: "STRING",
  [DuckDBTypeId.ENUM]: "STRING",
  [DuckDBTypeId.UUID]: "STRING",
  [DuckDBTypeId.TIMESTAMP_TZ]: "TIMESTAMP",
  [DuckDBTypeId.TIMESTAMP]: "DATETIME",
};

/**
 * A result column of `type` as the wire format gives it (ResultColumn): a list as REPEATED (a list
 * of lists has no such form, nor a type the converters do not take: they keep DuckDB's name), a
 * struct as a RECORD, a JSON value as any.
 */
export function resultColumn(name: string, type: DuckDBType): ResultColumn {
  const spelled = type.toString();
  if (type.alias === "JSON") return { name, type: "JSON", spelled };
  if (type.typeId === DuckDBTypeId.LIST || type.typeId === DuckDBTypeId.ARRAY) {
    const element = resultColumn(name, type.valueType);
    return element.mode === "REPEATED"
      ? { name, type: spelled, spelled }
      : { ...element, mode: "REPEATED", spelled };
  }
  if (type.typeId === DuckDBTypeId.STRUCT) {
    const fields = type.entryNames.map((entry, index) =>
      resultColumn(entry, type.entryTypes[index] as DuckDBType),
    );
    return { name, type: "RECORD", fields, spelled };
  }
  return { name, type: WIRE_TYPES[type.typeId] ?? spelled, spelled };
}

/** A result column: its name in the rows, and its type as the query declared it (aliases kept). */
export interface WireColumn {
  name: string;
  type: DuckDBType;
}

/** The one column of a result that holds each row whole, as JSON (rowsOfJson). */
const ROW_AS_JSON = "row";

/** Whether a result of `columns` holds each row whole in one JSON column (rowsOfJson). */
export function rowsAsJson(columns: readonly WireColumn[]): boolean {
  const [only] = columns;
  return columns.length === 1 && only?.name === ROW_AS_JSON && only.type.alias === "JSON";
}

/**
 * A chunk's rows in the wire format, converted a column at a time; a result whose one column is
 * ROW_AS_JSON, of DuckDB's JSON type, holds each row whole (rowsOfJson).
 */
export function wireRows(chunk: DuckDBDataChunk, columns: readonly WireColumn[]): Row[] {
  // The vectors' own types have lost the alias: a JSON column's says VARCHAR.
  if (rowsAsJson(columns)) return rowsOfJson(chunk);
  const rows: Row[] = Array.from({ length: chunk.rowCount }, () => ({}));
  for (const [index, { name }] of columns.entries()) {
    chunk.visitColumnValues(index, (value, row, _column, type) => {
      (rows[row] as Row)[name] = toWireValue(value, type, toWireValue);
    });
  }
  return rows;
}

/**
 * DuckDB writes JSON as JSON.stringify does, but for two things: the hex digits of a `\u` escape
 * (a control character) in upper case, and an integer past 2^53 exactly, where a JS number rounds.
 * An integer is a value, so it follows a `:`, `[` or `,` (DuckDB writes no spaces).
 */
const NOT_AS_STRINGIFY_WRITES = /\\u|[:,[]-?\d{16}/;

/**
 * The rows of a result whose one column holds each row as a JSON object, its keys the columns
 * (`to_json(struct_pack(...))`), which only values whose JSON is their wire form may fill: strings,
 * integers, booleans, lists and structs of them, TIMESTAMPs written as formatTimestamp writes them
 * (not a DOUBLE, nor a TIMESTAMP as DuckDB writes it). DuckDB writes it in its own threads, and one
 * string a row is read out of it instead of one a column; JSON.parse makes the row many times faster
 * than nested values are converted element by element here, and a stream sends the text as it is
 * (rowJson) where it is the text JSON.stringify would write.
 */
function rowsOfJson(chunk: DuckDBDataChunk): Row[] {
  return chunk.getColumnValues(0).map((value) => {
    const json = String(value);
    const row = JSON.parse(json) as Row;
    return NOT_AS_STRINGIFY_WRITES.test(json) ? row : withJson(row, json);
  });
}
