// A checked definition (definition.ts) and its SQL, compiled once into the entry every surface reads
// (catalog.ts): the validator built from the declared parameters, the JSON Schemas of the query
// string and of a row, the window the engine binds, the paths. What does not fit (a SQL parameter
// nobody declares or binds, a contract naming a parameter that is not there) is one problem each.
import { createHash } from "node:crypto";
import { z } from "zod";
import type { Dialect } from "../engines/engine.ts";
import type { WindowBinding } from "../engines/sql-params.ts";
import { referencedParams } from "../engines/sql-text.ts";
import type { EndpointDefinition, EndpointSql, PagingContract } from "./catalog.ts";
import {
  arrayOf,
  BOOL,
  type ColumnSchema,
  DATETIME,
  FLOAT64,
  INT64,
  nullable,
  type RowSchema,
  STRING,
  struct,
  TIMESTAMP,
} from "./columns.ts";
import type { ColumnDefinition, EndpointDefinitionFile, ParamDefinition } from "./definition.ts";
import {
  DURATION_EXAMPLES,
  durationSeconds,
  durationValue,
  integerValue,
  listValue,
  oneOf,
  optionalText,
  PATTERN_FORMAT,
  type ParamsSchema,
  pagedParamsOf,
  paramsOf,
  re2Value,
  requiredText,
  TIMESTAMP_FORMAT,
  timestampValue,
  unlessAbsent,
  type ValueCheck,
} from "./params.ts";
import { termPattern } from "./re2-pattern.ts";
import {
  DEFAULT_LADDER,
  DEFAULT_MAX_POINTS,
  DEFAULT_MAX_RANGE,
  RANGE_BINDS,
  RANGE_PARAMS,
  RANGE_SETTLED,
  type RangeContract,
  rangedParamsOf,
  rangeWindow,
} from "./time-range.ts";
import { NO_WINDOW, pagedWindow, type Span, spanWindow } from "./window.ts";

/** One problem of a definition: the field it is about (dotted) and what is wrong. */
export interface Problem {
  field: string;
  message: string;
}

/** The SQL texts of one endpoint folder, by file name (bigquery.sql, window.duckdb.sql, ...). */
export type SqlFiles = Readonly<Record<string, string>>;

const DIALECTS: readonly Dialect[] = ["bigquery", "duckdb"];
/** How each engine's SQL names a parameter. */
/** What an engine binds in every query of its own: DuckDB's `$now` (engines/duckdb.ts). */
const ENGINE_PARAMS: Record<Dialect, readonly string[]> = { bigquery: [], duckdb: ["now"] };
/** What a paged endpoint's cursor binds (params.ts), and a resumed stream's position (follow.ts). */
const CURSOR_PARAMS = ["cursor_timestamp", "cursor_id"];
const AFTER_PARAMS = ["after_timestamp", "after_id"];
/** What a follow stream takes besides the endpoint's parameters: a resume, a settled run. */
const FOLLOW_STREAM_PARAMS = ["after", "until"];

/** The entry of a definition, or the problems that keep it from being one. */
export function compileEndpoint(
  definition: EndpointDefinitionFile,
  sqlFiles: SqlFiles,
): { entry: EndpointDefinition } | { problems: Problem[] } {
  const problems: Problem[] = [];
  const paging = pagingContract(definition, problems);
  const range = rangeContract(definition, problems);
  const spanParam = range?.spanParam;
  const shape = Object.fromEntries(
    Object.entries(definition.params).map(([name, param]) => [
      name,
      // A range stands in for the span parameter: required only without one (rangedParamsOf).
      paramSchema(
        name,
        name === spanParam ? { ...param, required: false } : param,
        definition.example[name],
        name === spanParam,
      ),
    ]),
  );
  const params: ParamsSchema = paging
    ? pagedParamsOf(shape, paging.window)
    : range
      ? rangedParamsOf(shape, range, spanMissing(definition, spanParam))
      : paramsOf(shape);
  const window = windowBinding(definition, paging, range, problems);
  const sql = sqlOf(definition, paging, range !== undefined, window.binds, sqlFiles, problems);
  for (const name of Object.keys(definition.example)) {
    if (!(name in definition.params)) {
      problems.push({ field: `example.${name}`, message: "is not a declared parameter" });
    }
  }
  if (problems.length > 0) return { problems };
  const jsonSchema = z.toJSONSchema(params, { io: "input", unrepresentable: "any" });
  const paramsJsonSchema = jsonSchema as EndpointDefinition["paramsJsonSchema"];
  const columns = struct(columnsOf(definition.columns));
  const { name, id } = definition;
  return {
    entry: {
      name,
      id: id.toLowerCase(),
      revision: revisionOf(definition, sqlFiles),
      description: definition.description,
      params,
      paramNames: new Set(Object.keys(paramsJsonSchema.properties)),
      patternParams: new Set(
        Object.entries(paramsJsonSchema.properties)
          .filter(([, property]) => property.format === PATTERN_FORMAT.format)
          .map(([param]) => param),
      ),
      paramsJsonSchema,
      example: definition.example,
      columns,
      columnNames: Object.freeze(Object.keys(columns.properties)),
      timeColumns: Object.freeze(
        definition.columns
          .filter(({ type, mode }) => TIME_TYPES.has(type) && mode !== "REPEATED")
          .map((column) => column.name),
      ),
      maxRows: definition.max_rows,
      ...(paging && { paging }),
      ...(range && { range }),
      ...(definition.cache && {
        cache: {
          ttlSeconds: definition.cache.ttl_seconds,
          warmingSeconds: definition.cache.warming_seconds,
        },
      }),
      window: window.binding,
      sql,
    },
  };
}

/** The SQL types of an instant; an array of them is not one (time_format leaves it as it is). */
const TIME_TYPES = new Set(["TIMESTAMP", "DATETIME"]);

/** The first 12 hex digits of the SHA-256 of a definition and its SQL files, in name order. */
function revisionOf(definition: EndpointDefinitionFile, sqlFiles: SqlFiles): string {
  const hash = createHash("sha256").update(JSON.stringify(definition));
  for (const file of Object.keys(sqlFiles).sort()) hash.update(`\0${file}\0${sqlFiles[file]}`);
  return hash.digest("hex").slice(0, 12);
}

/** A parameter's validator: the text given (absent: null), as the SQL binds it. */
type ParamSchema = z.ZodType<string | null, unknown>;

/**
 * The validator of one parameter, from the pieces of params.ts. `absentStays`: its `default` is
 * documented but not applied (a time range's schema applies it only when no range is given).
 */
function paramSchema(
  name: string,
  param: ParamDefinition,
  endpointExample?: string,
  absentStays = false,
): ParamSchema {
  const { description } = param;
  const withDefault = (schema: ParamSchema, { default: fallback }: ParamDefinition) =>
    fallback === undefined || absentStays ? schema : schema.transform((value) => value ?? fallback);
  const example = param.example ?? endpointExample;
  const hint = example === undefined ? undefined : `${name}=${example}`;
  // The examples a type shows when the definition gives none.
  const shown = (fallback?: string[]) => param.examples ?? fallback;
  const text = (examples = shown()): ParamSchema =>
    param.required
      ? requiredText(description, hint).meta(examples ? { examples } : {})
      : optionalText(description, examples, param.default);
  const checked = (check: ValueCheck, base = text()): ParamSchema =>
    withDefault(
      param.required
        ? base.transform((value, ctx) => check(value as string, ctx))
        : base.transform(unlessAbsent(check)),
      param,
    );
  switch (param.type) {
    case "string": {
      const { prefix } = param;
      const base = withDefault(text(), param);
      if (!prefix) return base;
      return base.refine((value) => value === null || value.startsWith(prefix.value), {
        message: prefix.message,
      });
    }
    case "enum": {
      const values = param.values as [string, ...string[]];
      const { otherwise } = param;
      if (param.required && otherwise === undefined && param.examples === undefined) {
        return oneOf(values, description);
      }
      const expected = `one of ${values.join(", ")}`;
      return checked(
        (value, ctx) => {
          if (values.includes(value)) return value;
          if (otherwise !== undefined) return otherwise;
          ctx.addIssue({ code: "custom", message: `must be ${expected}` });
          return z.NEVER;
        },
        // Without `otherwise` the values are the only ones: documented as an enum, offered as such.
        otherwise === undefined ? text(shown(values)).meta({ enum: values }) : text(shown(values)),
      );
    }
    case "timestamp":
      return checked(timestampValue, text().meta(TIMESTAMP_FORMAT));
    case "duration":
      return checked(durationValue, text(shown(DURATION_EXAMPLES)));
    case "re2":
      // A refinement, not a transform: the pattern is given to the SQL as it is.
      return withDefault(
        text()
          .superRefine((value, ctx) => {
            if (value !== null) re2Value(value, ctx);
          })
          .meta(PATTERN_FORMAT),
        param,
      );
    case "integer":
      return checked(integerValue(param.minimum, param.maximum));
    case "list": {
      const { term, max_terms } = param;
      const normalise = (value: string) =>
        term.case === "lower"
          ? value.toLowerCase()
          : term.case === "upper"
            ? value.toUpperCase()
            : value;
      // A term given in any case is normalised: its pattern is matched in any case too.
      return checked(
        listValue(
          termPattern(term.pattern, term.case !== undefined),
          term.is,
          normalise,
          max_terms,
        ),
      );
    }
  }
}

/** BigQuery table-schema columns as the JSON Schema of one row (columns.ts). */
function columnsOf(columns: readonly ColumnDefinition[]): Record<string, ColumnSchema> {
  return Object.fromEntries(columns.map((column) => [column.name, columnOf(column)]));
}

function columnOf(column: ColumnDefinition): ColumnSchema {
  const element = elementOf(column);
  if (column.mode === "REPEATED") return arrayOf(element);
  return column.mode === "REQUIRED" ? element : nullable(element);
}

function elementOf(column: ColumnDefinition): ColumnSchema | RowSchema {
  switch (column.type) {
    case "STRING":
      return STRING;
    case "INT64":
    case "INTEGER":
      return INT64;
    case "FLOAT64":
    case "FLOAT":
      return FLOAT64;
    case "BOOL":
    case "BOOLEAN":
      return BOOL;
    case "TIMESTAMP":
      return TIMESTAMP;
    case "DATETIME":
      return DATETIME;
    default:
      return struct(columnsOf(column.fields ?? []));
  }
}

/** The paging contract, its parameters checked against the declared ones. */
function pagingContract(
  definition: EndpointDefinitionFile,
  problems: Problem[],
): PagingContract | undefined {
  const { paging } = definition;
  if (!paging) return undefined;
  const expect = (field: string, param: string | undefined, type: ParamDefinition["type"]) => {
    if (param === undefined) return;
    const declared = definition.params[param];
    if (declared?.type !== type) {
      problems.push({
        field: `paging.${field}`,
        message: `names ${param}, which is not a declared ${type} parameter`,
      });
    }
  };
  expect("window.start", paging.window.start, "timestamp");
  expect("window.end", paging.window.end, "timestamp");
  expect("window.since", paging.window.since, "duration");
  if (!(paging.retention.param in definition.params)) {
    problems.push({
      field: "paging.retention.param",
      message: `names ${paging.retention.param}, which is not a declared parameter`,
    });
  }
  if ("cursor" in definition.params) {
    problems.push({
      field: "params.cursor",
      message: "is the paging cursor; a paged endpoint cannot declare it",
    });
  }
  // A follow stream takes these besides the endpoint's parameters, which would then never reach it.
  for (const own of paging.follow ? FOLLOW_STREAM_PARAMS : []) {
    if (own in definition.params) {
      problems.push({
        field: `params.${own}`,
        message: `is a follow stream's own parameter; a followable endpoint cannot declare it`,
      });
    }
  }
  return {
    pageSize: paging.page_size,
    order: paging.order,
    window: paging.window,
    retention: paging.retention,
    follow: paging.follow ?? false,
  };
}

/**
 * What a required span parameter's absence means, as its own check says it: a ranged endpoint's
 * schema takes it as optional and says so itself when `from` is absent too.
 */
function spanMissing(
  definition: EndpointDefinitionFile,
  spanParam: string | undefined,
): string | undefined {
  const param = spanParam === undefined ? undefined : definition.params[spanParam];
  if (spanParam === undefined || !param?.required) return undefined;
  const checked = paramSchema(spanParam, param, definition.example[spanParam]).safeParse(undefined);
  return checked.success ? undefined : checked.error.issues[0]?.message;
}

/** The time buckets a definition declares, checked against its other parts. */
function rangeContract(
  definition: EndpointDefinitionFile,
  problems: Problem[],
): RangeContract | undefined {
  const { buckets } = definition;
  if (!buckets) return undefined;
  if (definition.paging) {
    problems.push({
      field: "buckets",
      message: "a paged endpoint answers records, not buckets: declare one of them",
    });
  }
  for (const own of [...RANGE_PARAMS, RANGE_SETTLED]) {
    if (own in definition.params) {
      problems.push({
        field: `params.${own}`,
        message: "is a time range's own parameter; an endpoint with buckets cannot declare it",
      });
    }
  }
  const micros = (text: string) => BigInt(durationSeconds(text) ?? 0) * 1_000_000n;
  const ladder = (buckets.ladder ?? DEFAULT_LADDER).map(micros);
  if (ladder.some((size, i) => i > 0 && size <= (ladder[i - 1] as bigint))) {
    problems.push({ field: "buckets.ladder", message: "must go from the smallest size up" });
  }
  return {
    ladder,
    maxRange: micros(buckets.max_range ?? DEFAULT_MAX_RANGE),
    maxPoints: Math.min(DEFAULT_MAX_POINTS, definition.max_rows),
    maxRows: definition.max_rows,
    spanParam: definition.window?.param,
    spanDefault: definition.window && definition.params[definition.window.param]?.default,
  };
}

/** The window the engine binds, and the names it binds. */
function windowBinding(
  definition: EndpointDefinitionFile,
  paging: PagingContract | undefined,
  range: RangeContract | undefined,
  problems: Problem[],
): { binding: WindowBinding; binds: string[] } {
  const spans = spanBinding(definition, paging, problems);
  if (!range) return spans;
  return {
    binding: rangeWindow(spans.binding),
    binds: [...new Set([...spans.binds, ...RANGE_BINDS])],
  };
}

/** The window of a span parameter or a paging contract, and the names it binds. */
function spanBinding(
  definition: EndpointDefinitionFile,
  paging: PagingContract | undefined,
  problems: Problem[],
): { binding: WindowBinding; binds: string[] } {
  const { window } = definition;
  if (window && paging) {
    problems.push({
      field: "window",
      message: "a paged endpoint's window comes from its paging contract: declare one of them",
    });
  }
  if (paging) return { binding: pagedWindow(paging), binds: ["window_start", "window_end"] };
  if (!window) return { binding: NO_WINDOW, binds: [] };
  const param = definition.params[window.param];
  if (!param) {
    problems.push({
      field: "window.param",
      message: `names ${window.param}, which is not a declared parameter`,
    });
  }
  const micros = (text: string) => BigInt(durationSeconds(text) ?? 0) * 1_000_000n;
  const spans = new Map<string, Span>(
    Object.entries(window.spans).map(([value, span]) => [
      value,
      {
        length: micros(span.length),
        bucket: span.bucket === undefined ? undefined : micros(span.bucket),
      },
    ]),
  );
  const otherwise = param?.type === "enum" ? param.otherwise : undefined;
  const bucketed = [...spans.values()].some((span) => span.bucket !== undefined);
  return {
    binding: spanWindow(window.param, spans, otherwise),
    binds: bucketed ? ["window_start", "last_bucket"] : ["window_start"],
  };
}

/**
 * The SQL per engine and use, each file's parameters matched against what is bound: the declared
 * ones (less those only the window reads), the window's, and a paged query's cursor or a window
 * query's resume position. A use a paged or followable endpoint needs and lacks is a problem, and
 * so is a bucketed endpoint's query that reads neither its bucket size nor its range's end.
 */
function sqlOf(
  definition: EndpointDefinitionFile,
  paging: PagingContract | undefined,
  bucketed: boolean,
  windowBinds: readonly string[],
  files: SqlFiles,
  problems: Problem[],
): Partial<Record<Dialect, EndpointSql>> {
  const declared = Object.keys(definition.params).filter((name) => name !== paging?.window.since);
  // Parameters the window may read instead of the SQL: not every file needs to name them.
  const windowOnly = new Set(
    [
      definition.window?.param,
      paging?.window.start,
      paging?.window.end,
      paging?.retention.param,
    ].filter((name) => name !== undefined),
  );
  const sql: Partial<Record<Dialect, EndpointSql>> = {};
  for (const dialect of DIALECTS) {
    const query = files[`${dialect}.sql`];
    const window = files[`window.${dialect}.sql`];
    const rest = files[`rest.${dialect}.sql`];
    if (query === undefined) {
      for (const file of [window, rest]) {
        if (file !== undefined) {
          problems.push({
            field: `${dialect}.sql`,
            message: `missing, beside the window or rest SQL of ${dialect}`,
          });
          break;
        }
      }
      continue;
    }
    const mark = dialect === "bigquery" ? "@" : "$";
    // Each group: one of its parameters must be read.
    const check = (
      file: string,
      text: string,
      extra: readonly string[],
      needed: string[][] = [],
    ) => {
      const bound = new Set([...declared, ...windowBinds, ...extra, ...ENGINE_PARAMS[dialect]]);
      const used = new Set(referencedParams(text, dialect));
      for (const group of needed.filter((group) => !group.some((name) => used.has(name)))) {
        problems.push({
          field: file,
          message: `${group.map((name) => mark + name).join(" or ")} is not used: an endpoint with buckets answers a range in buckets of ${mark}bucket_seconds, up to its end (${mark}window_end, or ${mark}last_bucket's bucket) (docs/endpoints.md)`,
        });
      }
      for (const name of used) {
        if (!bound.has(name)) {
          problems.push({
            field: file,
            message: `${mark}${name} is neither a declared parameter nor one the engine binds (${[...bound].join(", ")})`,
          });
        }
      }
      for (const name of declared) {
        if (!used.has(name) && !windowOnly.has(name)) {
          problems.push({ field: `params.${name}`, message: `is not used by ${file}` });
        }
      }
    };
    check(
      `${dialect}.sql`,
      query,
      paging ? CURSOR_PARAMS : [],
      bucketed ? [["bucket_seconds"], ["window_end", "last_bucket"]] : [],
    );
    if (paging && rest === undefined) {
      problems.push({
        field: `rest.${dialect}.sql`,
        message: "missing: a paged endpoint's rest of a walk",
      });
    }
    if (paging?.follow && window === undefined) {
      problems.push({
        field: `window.${dialect}.sql`,
        message: "missing: a followable endpoint's window query",
      });
    }
    if (rest !== undefined) check(`rest.${dialect}.sql`, rest, CURSOR_PARAMS);
    if (window !== undefined) check(`window.${dialect}.sql`, window, AFTER_PARAMS);
    sql[dialect] = {
      query,
      ...(window !== undefined && { window }),
      ...(rest !== undefined && { rest }),
    };
  }
  return sql;
}
