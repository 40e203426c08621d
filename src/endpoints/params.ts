// Query-string parameters: every endpoint declares them as a zod schema built from these pieces,
// and every failure becomes one detail naming the parameter.
import { RE2JS } from "re2js";
import { z } from "zod";
import { formatTimestamp, parseIsoTimestamp } from "../time.ts";

/** Validated parameters as the SQL binds them: every declared name, null when absent. */
export type SqlParams = Record<string, string | null>;

export type ParamsSchema = z.ZodType<SqlParams, Record<string, unknown>>;

export interface ParamIssue {
  param: string;
  message: string;
}

export class InvalidParamsError extends Error {
  constructor(readonly details: ParamIssue[]) {
    super(details.map((d) => `${d.param}: ${d.message}`).join("; "));
    this.name = "InvalidParamsError";
  }
}

const MAX_LENGTH = 1024;

function shapeError(required: string) {
  return (issue: { input?: unknown }) =>
    issue.input === undefined ? `required: ${required}` : "given more than once; pass it once";
}

/** A required value; given empty it counts as missing. */
export function requiredText(description: string, example: string) {
  const required = `${description}, e.g. ${example}`;
  return z
    .string({ error: shapeError(required) })
    .min(1, `required: ${required}`)
    .max(MAX_LENGTH, `longer than ${MAX_LENGTH} characters`)
    .describe(description);
}

/** An optional value; given empty it counts as absent (null). */
export function optionalText(description: string) {
  return z
    .string({ error: shapeError(description) })
    .max(MAX_LENGTH, `longer than ${MAX_LENGTH} characters`)
    .optional()
    .transform((value) => value || null)
    .describe(description);
}

/** One of a fixed list; anything else is rejected with the list. */
export function oneOf<const T extends readonly [string, ...string[]]>(
  values: T,
  description: string,
) {
  const expected = `one of ${values.join(", ")}`;
  return z
    .enum(values, {
      error: ({ input }) => {
        if (Array.isArray(input)) return "given more than once; pass it once";
        return input === undefined || input === ""
          ? `required: ${expected}`
          : `must be ${expected}`;
      },
    })
    .describe(`${description} (${expected})`);
}

/** An RE2 regular expression (BigQuery's regex language, which a JS RegExp is not). */
export function re2Pattern(description: string, example: string) {
  return requiredText(description, example).superRefine((pattern, ctx) => {
    try {
      RE2JS.compile(pattern);
    } catch (error) {
      ctx.addIssue({
        code: "custom",
        message: `not a valid RE2 regular expression: ${(error as Error).message}`,
      });
    }
  });
}

/** An ISO 8601 timestamp with a zone, normalised to RFC 3339 UTC with microseconds; empty = absent. */
export function optionalTimestamp(description: string) {
  return optionalText(description).transform((value, ctx) => {
    if (value === null) return null;
    const micros = parseIsoTimestamp(value);
    if (micros !== undefined) return formatTimestamp(micros);
    ctx.addIssue({
      code: "custom",
      message:
        "must be an ISO 8601 timestamp with a zone, e.g. 2026-11-21T05:00:00Z or 2026-11-21T07:00:00+02:00",
    });
    return z.NEVER;
  });
}

/** The schema of an endpoint's query string: the given parameters and no others. */
export function paramsOf<T extends z.ZodRawShape>(shape: T) {
  const accepted = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `unknown parameter; this endpoint takes ${accepted}`
        : undefined,
  });
}

/** Validates a parsed query string; throws InvalidParamsError with one detail per parameter. */
export function parseParams(schema: ParamsSchema, query: unknown): SqlParams {
  const result = schema.safeParse(query ?? {});
  if (result.success) return result.data;
  const details = result.error.issues.flatMap((issue): ParamIssue[] =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((param) => ({ param, message: issue.message }))
      : [{ param: String(issue.path[0]), message: issue.message }],
  );
  throw new InvalidParamsError(details);
}
