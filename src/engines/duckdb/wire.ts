// DuckDB values → the wire format of docs/api.md, the same JSON the BigQuery engine gives for the
// same rows: TIMESTAMPTZ (BigQuery TIMESTAMP) and TIMESTAMP (BigQuery DATETIME) as strings,
// every integer width as a number, lists as arrays and structs as objects.
import {
  arrayFromArrayValue,
  arrayFromListValue,
  booleanFromValue,
  createDuckDBValueConverter,
  type DuckDBTimestampTZValue,
  type DuckDBTimestampValue,
  DuckDBTypeId,
  type DuckDBValueConverter,
  doubleFromDecimalValue,
  nullConverter,
  numberFromValue,
  objectFromStructValue,
  stringFromValue,
} from "@duckdb/node-api";
import { formatDatetime, formatTimestamp } from "../../time.ts";
import type { JsonValue } from "../engine.ts";

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
