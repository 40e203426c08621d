// Whether an endpoint's SQL gives the row its definition declares (`columns`, which /openapi.json
// publishes and every answer is described by): the same columns, in the same order, each of a type
// whose value on the wire can be the declared one. The engine says what its SQL gives without
// running it (ResultColumn); whether a column can be NULL only running it shows, so nullability is
// left to the tests of the SQL.
import type { ResultColumn } from "../engines/engine.ts";
import { type ColumnSchema, DATETIME, type RowSchema, TIMESTAMP } from "./columns.ts";

/** What is wrong with the columns `given` for the row `declared`, a short clause each; empty: nothing. */
export function columnMismatches(declared: RowSchema, given: readonly ResultColumn[]): string[] {
  return fieldMismatches(declared.properties, given, "");
}

function fieldMismatches(
  declared: Readonly<Record<string, ColumnSchema>>,
  given: readonly ResultColumn[],
  within: string,
): string[] {
  const givenNames = new Set(given.map((column) => column.name));
  const problems = [
    ...Object.entries(declared)
      .filter(([name]) => !givenNames.has(name))
      .map(([name, schema]) => `gives no ${within}${name}, declared ${typeName(schema)}`),
    ...given
      .filter((column) => !(column.name in declared))
      .map((column) => `gives ${within}${column.name} (${spelled(column)}), which is not declared`),
  ];
  if (problems.length > 0) return problems;
  const order = given.map((column) => column.name);
  if (order.join() !== Object.keys(declared).join()) {
    const named = within === "" ? "the columns" : `the fields of ${within.replace(/[.[\]]+$/, "")}`;
    return [
      `gives ${named} in the order ${order.join(", ")}; declared ${Object.keys(declared).join(", ")}`,
    ];
  }
  return given.flatMap((column) =>
    columnMismatch(declared[column.name] as ColumnSchema, column, `${within}${column.name}`),
  );
}

function columnMismatch(declared: ColumnSchema, given: ResultColumn, at: string): string[] {
  if (given.type === "JSON") return [];
  const repeated = declared.type === "array";
  const element = repeated ? (declared.items as ColumnSchema) : declared;
  if (repeated !== (given.mode === "REPEATED") || !elementAccepts(element, given.type)) {
    return [`${at} is ${spelled(given)}, which cannot be the declared ${typeName(declared)}`];
  }
  if (!element.properties) return [];
  return fieldMismatches(element.properties, given.fields ?? [], `${at}${repeated ? "[]." : "."}`);
}

/**
 * Whether a value of the wire type `given` can be one of `declared`: its own, an integer where a
 * FLOAT64 is declared, or a string where a time is (the SQL may write the time as text itself).
 */
function elementAccepts(declared: ColumnSchema, given: string): boolean {
  const wanted = typeName(declared);
  if (declared.properties) return given === "RECORD";
  if (given === wanted) return true;
  if (wanted === "FLOAT64") return given === "INT64";
  return (wanted === "TIMESTAMP" || wanted === "DATETIME") && given === "STRING";
}

/** A given column's type as its engine names it, and as a definition would where that differs. */
function spelled(column: ResultColumn): string {
  if (column.fields || column.type === column.spelled) return column.spelled;
  const wire = column.mode === "REPEATED" ? `ARRAY<${column.type}>` : column.type;
  return wire === column.spelled ? wire : `${column.spelled}, ${wire} on the wire`;
}

/** A declared column's type as an endpoint's definition names it: INT64, ARRAY<STRUCT<…>>. */
function typeName(schema: ColumnSchema): string {
  if (schema.items) return `ARRAY<${typeName(schema.items)}>`;
  if (schema.properties) {
    const fields = Object.entries(schema.properties).map(
      ([name, field]) => `${name} ${typeName(field)}`,
    );
    return `STRUCT<${fields.join(", ")}>`;
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "integer":
      return "INT64";
    case "number":
      return "FLOAT64";
    case "boolean":
      return "BOOL";
    default:
      if (schema.format === TIMESTAMP.format) return "TIMESTAMP";
      return schema.format === DATETIME.format ? "DATETIME" : "STRING";
  }
}
