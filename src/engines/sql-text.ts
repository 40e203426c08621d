// What an SQL text names, read as the engines' lexers would: outside comments, strings and quoted
// names. A parameter is `@name` in GoogleSQL (BigQuery; `@@` starts a system variable) and `$name`
// in DuckDB.
import type { Dialect } from "./engine.ts";

const NOT_CODE =
  /--[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/|'''[\s\S]*?'''|"""[\s\S]*?"""|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`/g;

const PARAM: Record<Dialect, RegExp> = {
  bigquery: /(?<![@\w])@([A-Za-z_]\w*)/g,
  duckdb: /(?<![$\w])\$([A-Za-z_]\w*)/g,
};

/** The named parameters `sql` refers to, lower case (neither engine tells case apart), sorted. */
export function referencedParams(sql: string, dialect: Dialect = "bigquery"): string[] {
  // DuckDB has no # comments and no triple-quoted strings, and "…" is a quoted name in both.
  const code = sql.replace(NOT_CODE, (text) =>
    dialect === "duckdb" && text.startsWith("#") ? text : " ",
  );
  const names = [...code.matchAll(PARAM[dialect])].map((m) => (m[1] as string).toLowerCase());
  return [...new Set(names)].sort();
}
