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
import type { JsonValue, Row } from "../engine.ts";

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

/** A result column: its name in the rows, and its type as the query declared it (aliases kept). */
export interface WireColumn {
  name: string;
  type: DuckDBType;
}

/**
 * A chunk's rows in the wire format, converted a column at a time. A column of DuckDB's JSON type
 * (`to_json(t.metadata)`) is the value its text holds: DuckDB writes a nested value as JSON in its
 * own threads, and JSON.parse reads it many times faster than this process walks the value element
 * by element, into the same arrays, objects (keys in order), strings and integers. Only values whose
 * JSON is their wire form belong in one: a nested TIMESTAMP would come as DuckDB writes it.
 */
export function wireRows(chunk: DuckDBDataChunk, columns: readonly WireColumn[]): Row[] {
  const rows: Row[] = Array.from({ length: chunk.rowCount }, () => ({}));
  for (const [index, { name, type }] of columns.entries()) {
    // The vector's own type has lost the alias: a JSON column's says VARCHAR.
    const json = type.alias === "JSON";
    chunk.visitColumnValues(index, (value, row, _column, vectorType) => {
      (rows[row] as Row)[name] =
        json && typeof value === "string"
          ? (JSON.parse(value) as JsonValue)
          : toWireValue(value, vectorType, toWireValue);
    });
  }
  return rows;
}
