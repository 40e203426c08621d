// Query-string parameters: every endpoint declares them as a zod schema built from these pieces,
// and every failure becomes one detail naming the parameter.
import { z } from "zod";
import type { SqlParams } from "../engines/sql-params.ts";
import { formatTimestamp, parseIsoTimestamp } from "../time.ts";
import { type CursorCodec, KEPT_PAGE_PARAM, keptPageText, type RecordPosition } from "./cursor.ts";
import { re2PatternProblem } from "./re2-pattern.ts";

export type ParamsSchema = z.ZodType<SqlParams, Record<string, unknown>>;

export interface ParamIssue {
  param: string;
  message: string;
}

export class InvalidParamsError extends Error {
  readonly details: ParamIssue[];

  constructor(details: ParamIssue[]) {
    super(details.map((d) => `${d.param}: ${d.message}`).join("; "));
    this.name = "InvalidParamsError";
    this.details = details;
  }
}

const MAX_LENGTH = 1024;
// abort: a value this long gets this one message, not also those of the checks after it.
const LENGTH_LIMIT = { error: `longer than ${MAX_LENGTH} characters`, abort: true };

/** The message for a value rejected before its own checks: missing, repeated, or not `expected`. */
function inputError(required: string, expected: string) {
  return ({ input }: { input?: unknown }) => {
    if (Array.isArray(input)) return "given more than once; pass it once";
    return input === undefined || input === "" ? `required: ${required}` : `must be ${expected}`;
  };
}

/** A required value; given empty it counts as missing. */
export function requiredText(description: string, example: string | undefined) {
  const required = example === undefined ? description : `${description}, e.g. ${example}`;
  return z
    .string({ error: inputError(required, "text") })
    .min(1, `required: ${required}`)
    .max(MAX_LENGTH, LENGTH_LIMIT)
    .describe(description);
}

/**
 * An optional value; given empty it counts as absent (null). `examples` and `fallback` (what an
 * absent value stands for, which the caller's transform applies) go on the text itself: JSON
 * Schema drops them from a transform, whose input they would not describe.
 */
export function optionalText(description: string, examples?: string[], fallback?: string) {
  return z
    .string({ error: inputError(description, "text") })
    .max(MAX_LENGTH, LENGTH_LIMIT)
    .meta({ ...(examples && { examples }), ...(fallback !== undefined && { default: fallback }) })
    .optional()
    .transform((value) => value || null)
    .describe(description);
}

/** One of a fixed list; anything else is rejected with the list. */
export function oneOf(values: readonly [string, ...string[]], description: string) {
  const expected = `one of ${values.join(", ")}`;
  return z
    .enum(values, { error: inputError(expected, expected) })
    .describe(`${description} (${expected})`);
}

/**
 * A check of a given value: the value the SQL is given, or z.NEVER after adding the issue. Absent
 * values (null) are never checked.
 */
export type ValueCheck = (value: string, ctx: z.RefinementCtx) => string;

/** `check` over an optional value: null passes through. */
export function unlessAbsent(check: ValueCheck) {
  return (value: string | null, ctx: z.RefinementCtx) =>
    value === null ? null : check(value, ctx);
}

function refused(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: "custom", message });
  return z.NEVER;
}

/** An RE2 regular expression (BigQuery's regex language, which a JS RegExp is not), as both engines run it. */
export const re2Value: ValueCheck = (pattern, ctx) => {
  const problem = re2PatternProblem(pattern);
  return problem === undefined ? pattern : refused(ctx, problem);
};

/** JSON Schema's name for a regular expression; credentials pinning it must anchor it. */
export const PATTERN_FORMAT = { format: "regex" } as const;

/**
 * The most terms a list filter takes by default, each once. Every record in the window is compared
 * with every term (on DuckDB, each term of a status list is a LIKE per response; on BigQuery an
 * UNNEST per record), so a list's cost grows with its length as a pattern's does with its program:
 * as `search_regex` is capped at the size where its cost stays within a few times a literal's, a
 * list is capped where it stays within a few times one term's (bench/log-filters.ts,
 * docs/benchmarks.md).
 */
export const MAX_LIST_TERMS = 20;

/**
 * A comma-separated list whose terms each match `term` (described by `expected`), given to the SQL
 * in `normalise`d form, each once, joined by commas. More than `maxTerms` distinct terms are refused.
 */
export function listValue(
  term: { test(text: string): boolean },
  expected: string,
  normalise: (term: string) => string,
  maxTerms = MAX_LIST_TERMS,
): ValueCheck {
  return (value, ctx) => {
    const terms = value.split(",").map((t) => t.trim());
    const bad = terms.filter((t) => !term.test(t));
    const distinct = new Set(terms.map(normalise));
    if (bad.length === 0 && distinct.size <= maxTerms) return [...distinct].join(",");
    if (bad.length === 0) {
      return refused(
        ctx,
        `has ${distinct.size} terms; at most ${maxTerms} are taken, since every record in the window is compared with each: narrow the list (a status class such as 5xx covers a hundred codes)`,
      );
    }
    return refused(
      ctx,
      `${bad.map((t) => JSON.stringify(t)).join(", ")} ${bad.length === 1 ? "is" : "are"} not ${expected}; separate several with commas`,
    );
  };
}

const DURATION = /^([1-9][0-9]{0,9})([smhd])$/;
const UNIT_SECONDS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;

/** Seconds of a duration such as 90s, 15m, 2h or 7d; undefined for any other text. */
export function durationSeconds(text: string): number | undefined {
  const [, count, unit] = DURATION.exec(text) ?? [];
  if (count === undefined || unit === undefined) return undefined;
  return Number(count) * UNIT_SECONDS[unit as keyof typeof UNIT_SECONDS];
}

export const DURATION_EXAMPLES = ["90s", "15m", "2h", "7d"];

/** A duration such as 90s, 15m, 2h or 7d, given to the SQL as a number of seconds. */
export const durationValue: ValueCheck = (value, ctx) => {
  const seconds = durationSeconds(value);
  return seconds !== undefined
    ? String(seconds)
    : refused(
        ctx,
        "must be a positive whole number and a unit, s, m, h or d: e.g. 90s, 15m, 2h or 7d",
      );
};

/** JSON Schema's name for an RFC 3339 instant, so that the catalog's schema says what this takes. */
export const TIMESTAMP_FORMAT = { format: "date-time" } as const;

/** An ISO 8601 timestamp with a zone, normalised to RFC 3339 UTC with microseconds. */
export const timestampValue: ValueCheck = (value, ctx) => {
  const micros = parseIsoTimestamp(value);
  return micros !== undefined
    ? formatTimestamp(micros)
    : refused(
        ctx,
        "must be an ISO 8601 timestamp with a zone, e.g. 2026-11-21T05:00:00Z or 2026-11-21T07:00:00+02:00, within years 0001 to 9999 in UTC",
      );
};

/** A whole number within the bounds given, as its decimal text. */
export function integerValue(minimum?: number, maximum?: number): ValueCheck {
  return (value, ctx) => {
    const number = /^-?[0-9]{1,15}$/.test(value) ? Number(value) : undefined;
    if (number === undefined) return refused(ctx, "must be a whole number, e.g. 10");
    if (minimum !== undefined && number < minimum)
      return refused(ctx, `must be at least ${minimum}`);
    if (maximum !== undefined && number > maximum)
      return refused(ctx, `must be at most ${maximum}`);
    return String(number);
  };
}

/** The schema of an endpoint's query string: the given parameters and no others. */
export function paramsOf<T extends z.ZodRawShape>(shape: T) {
  const names = Object.keys(shape);
  const unknown =
    names.length === 0
      ? "unknown parameter; this route takes none"
      : `unknown parameter; this endpoint takes ${names.join(", ")}`;
  return z.strictObject(shape, {
    error: (issue) => (issue.code === "unrecognized_keys" ? unknown : undefined),
  });
}

/** The query string of a route that takes no parameters: empty. */
export const NO_PARAMS = paramsOf({});

/**
 * A position from a previous answer's `Link: rel="next"`; empty = absent. Without `cursors` every
 * cursor is refused.
 */
function pageCursor(cursors?: CursorCodec) {
  return optionalText(
    "the next page: from the previous answer's Link rel=next URL, which carries it",
  ).transform((value, ctx) => {
    if (value === null) return null;
    const position = cursors?.decode(value);
    if (position) return position;
    ctx.addIssue({
      code: "custom",
      message:
        "is not a cursor this service made; follow the previous answer's Link rel=next URL as it is",
    });
    return z.NEVER;
  });
}

/** The parameters that bound a paged endpoint's window (its paging contract's). */
export interface WindowParams {
  start: string;
  end: string;
  since?: string | undefined;
}

/**
 * The schema of a paged endpoint's query string: the given parameters and `cursor`, which its SQL
 * binds as `cursor_timestamp` and `cursor_id` (both null without a cursor). A page after the first
 * keeps the first page's window: with `since`, its cursor carries the start `since` resolved to. A
 * cursor that says where the walk's next page waits hands it on as KEPT_PAGE_PARAM, for the runner.
 */
export function pagedParamsOf<T extends z.ZodRawShape>(shape: T, window: WindowParams) {
  const schema = pagedSchema(shape, window);
  keyedBuilds.set(schema, (cursors) => pagedSchema(shape, window, cursors));
  return schema;
}

function pagedSchema<T extends z.ZodRawShape>(
  shape: T,
  window: WindowParams,
  cursors?: CursorCodec,
) {
  const { since } = window;
  return paramsOf({ ...shape, cursor: pageCursor(cursors) })
    .superRefine(refuseTwoStarts(window))
    .transform((parsed) => {
      const { cursor, ...params } = parsed as Record<string, string | null> & {
        cursor: RecordPosition | null;
      };
      const keptStart = since !== undefined &&
        params[since] != null &&
        cursor?.windowStart !== undefined && { [CURSOR_WINDOW_START]: cursor.windowStart };
      const keptPage = cursor?.kept && { [KEPT_PAGE_PARAM]: keptPageText(cursor.kept) ?? null };
      return {
        ...params,
        ...keptStart,
        ...keptPage,
        cursor_timestamp: cursor?.timestamp ?? null,
        // Past every record at an instant, newest first, is every record before it: after id ''.
        cursor_id: cursor ? (cursor.id ?? "") : null,
      };
    });
}

/** `since` and the start parameter both say where the window starts: one of them, not both. */
function refuseTwoStarts({ start, since }: WindowParams) {
  return (params: Record<string, unknown>, ctx: z.RefinementCtx) => {
    if (since === undefined || params[since] == null || params[start] == null) return;
    for (const param of [since, start]) {
      ctx.addIssue({
        code: "custom",
        path: [param],
        message: `give ${since} or ${start}, not both: each says where the window starts`,
      });
    }
  };
}

// Well past the longest retention (90 days), where a longer `since` selects nothing more: the
// start it resolves to stays a valid timestamp however large `since` is.
const LONGEST_SINCE_US = 1_000n * 86_400_000_000n;
/** Where a page cursor says the run's `since` was resolved; never bound in the SQL. */
const CURSOR_WINDOW_START = "since_window_start";

/**
 * The parameters an engine binds, `since` (seconds) resolved into the start parameter it means:
 * only records strictly after now − since. Resolved per request, not with the rest of the
 * parameters, which are validated once per query string. A later page keeps the start its cursor
 * carries when `cursorWindow()` allows (asked only then): not where the caller's scope fixes
 * `since`, whose rule is now − since for every answer (a cursor is not bound to whoever made it).
 * Without a `since` in the window (`window` undefined: not paged), the parameters are unchanged.
 */
export function withWindowStart(
  window: WindowParams | undefined,
  params: SqlParams,
  now: bigint,
  cursorWindow: () => boolean = () => true,
): SqlParams {
  const since = window?.since;
  if (window === undefined || since === undefined || !(since in params)) return params;
  const { [since]: seconds, [CURSOR_WINDOW_START]: kept, ...bound } = params;
  if (seconds === null || seconds === undefined) return bound;
  if (kept && cursorWindow()) return { ...bound, [window.start]: kept };
  const back = BigInt(seconds) * 1_000_000n;
  return {
    ...bound,
    [window.start]: formatTimestamp(now - (back < LONGEST_SINCE_US ? back : LONGEST_SINCE_US)),
  };
}

// A paged schema as a service parses it: built again with the service's cursor codec (zod hands a
// parse nothing but its input, and only the service holds the secret that opens its cursors), once
// per codec and schema.
const keyedBuilds = new WeakMap<ParamsSchema, (cursors: CursorCodec) => ParamsSchema>();
const keyedSchemas = new WeakMap<CursorCodec, Map<ParamsSchema, ParamsSchema>>();

function keyedBy(schema: ParamsSchema, cursors: CursorCodec): ParamsSchema {
  const build = keyedBuilds.get(schema);
  if (!build) return schema;
  let schemas = keyedSchemas.get(cursors);
  if (!schemas) {
    schemas = new Map();
    keyedSchemas.set(cursors, schemas);
  }
  let keyed = schemas.get(schema);
  if (!keyed) {
    keyed = build(cursors);
    schemas.set(schema, keyed);
  }
  return keyed;
}

/**
 * Validates a parsed query string; throws InvalidParamsError with one detail per parameter. A
 * `cursor` is taken only when `cursors` opens it.
 */
export function parseParams(
  schema: ParamsSchema,
  query: unknown,
  cursors?: CursorCodec,
): SqlParams {
  const result = (cursors ? keyedBy(schema, cursors) : schema).safeParse(query ?? {});
  if (result.success) return result.data;
  const details = result.error.issues.flatMap((issue): ParamIssue[] =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((param) => ({ param, message: issue.message }))
      : [{ param: String(issue.path[0]), message: issue.message }],
  );
  throw new InvalidParamsError(details);
}
