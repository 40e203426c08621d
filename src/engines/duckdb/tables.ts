// The source tables in DuckDB, typed from queries/schema/*.json (BigQuery's `bq show --schema`
// form) so that loaded data is never type-guessed. BigQuery TIMESTAMP is DuckDB TIMESTAMPTZ and
// a REPEATED field is a LIST that, as in BigQuery, is never NULL (absent means empty).
import type { SchemaField, SourceTable } from "../../schema.ts";

const SCALAR_TYPES: Record<string, string> = {
  STRING: "VARCHAR",
  TIMESTAMP: "TIMESTAMPTZ",
  DATETIME: "TIMESTAMP",
  INTEGER: "BIGINT",
  INT64: "BIGINT",
  FLOAT: "DOUBLE",
  FLOAT64: "DOUBLE",
  BOOLEAN: "BOOLEAN",
  BOOL: "BOOLEAN",
};

/** The DuckDB type of one schema field, e.g. `STRUCT("status_code" BIGINT)[]`. */
export function duckDbType(field: SchemaField): string {
  const element =
    field.type === "RECORD" || field.type === "STRUCT"
      ? `STRUCT(${(field.fields ?? []).map((f) => `${quoteIdent(f.name)} ${duckDbType(f)}`).join(", ")})`
      : SCALAR_TYPES[field.type];
  if (!element) throw new Error(`unsupported schema type ${field.type} (field ${field.name})`);
  return field.mode === "REPEATED" ? `${element}[]` : element;
}

export function createTableSql(table: SourceTable): string {
  const columns = table.fields.map((f) => `${quoteIdent(f.name)} ${duckDbType(f)}`).join(", ");
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(table.name)} (${columns})`;
}

/**
 * A select list that reads `table`'s columns from a relation typed by the schema and replaces a
 * NULL repeated field, at any depth, with an empty list: BigQuery cannot store NULL there.
 */
export function bigQueryShapedColumns(table: SourceTable): string {
  return table.fields
    .map((f) => `${shaped(quoteIdent(f.name), f, 0)} AS ${quoteIdent(f.name)}`)
    .join(", ");
}

function shaped(expression: string, field: SchemaField, depth: number): string {
  const isRecord = field.type === "RECORD" || field.type === "STRUCT";
  const nested = (field.fields ?? []).some((f) => f.mode === "REPEATED" || f.fields);
  const record = (value: string) =>
    nested
      ? `CASE WHEN ${value} IS NULL THEN NULL ELSE struct_pack(${(field.fields ?? [])
          .map(
            (f) =>
              `${quoteIdent(f.name)} := ${shaped(`${value}.${quoteIdent(f.name)}`, f, depth + 1)}`,
          )
          .join(", ")}) END`
      : value;
  if (field.mode === "REPEATED") {
    const element =
      isRecord && nested
        ? `list_transform(${expression}, e${depth} -> ${record(`e${depth}`)})`
        : expression;
    return `coalesce(${element}, [])`;
  }
  return isRecord ? record(expression) : expression;
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `text` as a DuckDB string literal. */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
