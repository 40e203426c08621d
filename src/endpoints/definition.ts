// The format of an endpoint's definition file (endpoints/<name>/endpoint.yaml): what an operator
// writes, checked field by field. Its JSON Schema (endpoints/endpoint.schema.json, for editors) is
// generated from this schema; compile.ts turns a checked definition into the entry every surface reads.
import { z } from "zod";
import { formatSuffixOf } from "./format-suffixes.ts";
import { durationSeconds } from "./params.ts";
import { re2SyntaxProblem } from "./re2-pattern.ts";

const NAME = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/;
const PARAM_NAME = /^[a-z][a-z0-9_]*$/;
/** A length of time as the `duration` parameter type takes it. */
const duration = z
  .string()
  .refine(
    (text) => durationSeconds(text) !== undefined,
    "a whole number and s, m, h or d, e.g. 15m",
  )
  .describe("a whole number and s, m, h or d, e.g. 15m");

const common = {
  description: z.string().min(1).describe("what the parameter does, as the catalog listing says"),
  required: z.boolean().optional().describe("a request without it is refused; default false"),
  default: z
    .string()
    .optional()
    .describe("the value an absent (or empty) optional parameter takes"),
  examples: z.array(z.string()).optional().describe("values shown in the documentation"),
  example: z
    .string()
    .optional()
    .describe(
      "the value a missing required parameter's message suggests; default: the endpoint's `example`",
    ),
};

const stringParam = z.strictObject({
  type: z.literal("string"),
  ...common,
  prefix: z
    .strictObject({
      value: z.string().min(1),
      message: z.string().min(1).describe("the message of a value without the prefix"),
    })
    .optional()
    .describe("a value must start with this text"),
});

const enumParam = z.strictObject({
  type: z.literal("enum"),
  ...common,
  values: z.array(z.string().min(1)).min(1).describe("the values taken"),
  otherwise: z
    .string()
    .optional()
    .describe("the value any other given value means; absent: any other value is refused"),
});

const timestampParam = z.strictObject({ type: z.literal("timestamp"), ...common });
const durationParam = z.strictObject({ type: z.literal("duration"), ...common });
const re2Param = z.strictObject({ type: z.literal("re2"), ...common });

const integerParam = z.strictObject({
  type: z.literal("integer"),
  ...common,
  minimum: z.number().int().optional(),
  maximum: z.number().int().optional(),
});

const listParam = z.strictObject({
  type: z.literal("list"),
  ...common,
  term: z.strictObject({
    pattern: z
      .string()
      .min(1)
      .superRefine((pattern, ctx) => {
        const problem = re2SyntaxProblem(pattern);
        if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
      })
      .describe("a regular expression each comma-separated term matches (in any case with `case`)"),
    is: z.string().min(1).describe("what a term is, for the message of a bad one"),
    case: z
      .enum(["lower", "upper"])
      .optional()
      .describe("the case a term is given to the SQL in; absent: as given"),
  }),
  max_terms: z.number().int().positive().optional().describe("the most distinct terms; default 20"),
});

export const paramDefinition = z.discriminatedUnion("type", [
  stringParam,
  enumParam,
  timestampParam,
  durationParam,
  re2Param,
  integerParam,
  listParam,
]);
export type ParamDefinition = z.infer<typeof paramDefinition>;

export interface ColumnDefinition {
  name: string;
  type: string;
  mode?: "NULLABLE" | "REQUIRED" | "REPEATED" | undefined;
  description?: string | undefined;
  fields?: ColumnDefinition[] | undefined;
}

const column: z.ZodType<ColumnDefinition> = z.lazy(() =>
  z.strictObject({
    name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
    type: z.enum([
      "STRING",
      "INT64",
      "INTEGER",
      "FLOAT64",
      "FLOAT",
      "BOOL",
      "BOOLEAN",
      "TIMESTAMP",
      "DATETIME",
      "RECORD",
      "STRUCT",
    ]),
    mode: z.enum(["NULLABLE", "REQUIRED", "REPEATED"]).optional(),
    description: z.string().optional(),
    fields: z.array(column).optional(),
  }),
);

const windowDefinition = z
  .strictObject({
    param: z.string().regex(PARAM_NAME).describe("the parameter whose value picks the window"),
    spans: z
      .record(
        z.string(),
        z.strictObject({
          length: duration.describe("how far back from now the window starts"),
          bucket: duration
            .optional()
            .describe(
              "the bucket unit: the start and `last_bucket` (now) are truncated to it; absent: no last_bucket",
            ),
        }),
      )
      .describe("per value of the parameter; a value not listed binds a null window_start"),
  })
  .describe(
    "what the engine binds as @window_start (and @last_bucket) from one reading of now; a paged endpoint's window comes from its paging contract",
  );

const bucketsDefinition = z
  .strictObject({
    ladder: z
      .array(duration)
      .min(1)
      .optional()
      .describe(
        "the bucket sizes a range is answered in without bucket, smallest first; a bucket given may be any size up to the last; default 1s 5s 10s 30s 1m 5m 15m 30m 1h 3h 6h 12h 1d 7d",
      ),
    max_range: duration
      .optional()
      .describe("how far back from now a range may start (so how long it may be); default 90d"),
  })
  .describe(
    "it answers any time range: `from` and `to` (epoch milliseconds or RFC 3339) in place of the window's parameter, in buckets its SQL binds as @window_start, @last_bucket, @window_end and @bucket_seconds (docs/endpoints.md)",
  );

const pagingDefinition = z
  .strictObject({
    page_size: z.number().int().positive(),
    order: z
      .array(z.string())
      .describe("the order of its rows, as the SQL gives it (e.g. timestamp DESC, id DESC)"),
    window: z
      .strictObject({
        start: z
          .string()
          .regex(PARAM_NAME)
          .describe("the parameter that starts the window (exclusive)"),
        end: z
          .string()
          .regex(PARAM_NAME)
          .describe("the parameter that ends the window (inclusive)"),
        since: z
          .string()
          .regex(PARAM_NAME)
          .optional()
          .describe("a duration parameter meaning start = now − it"),
      })
      .describe("which parameters bound the window the engine binds as @window_start/@window_end"),
    retention: z
      .strictObject({
        param: z.string().regex(PARAM_NAME),
        days: z.record(z.string(), z.number().int().positive()),
        otherwise: z.number().int().positive().describe("days for any other value"),
      })
      .describe("how far back the window reaches, by the value of a parameter"),
    follow: z.boolean().optional().describe("new records can be streamed at <path>/follow"),
  })
  .describe("the contract of an endpoint that answers pages of records, newest first");

export const endpointDefinition = z
  .strictObject({
    name: z
      .string()
      .regex(NAME, "a lower-case dotted name such as auth.failures-per-hour")
      .superRefine((name, ctx) => {
        const suffix = formatSuffixOf(name);
        if (suffix === undefined) return;
        ctx.addIssue({
          code: "custom",
          message: `ends in ${suffix}, which asks for a format on an endpoint's path (${name} would be ${name.slice(0, -suffix.length)} in that format); choose another name`,
        });
      }),
    id: z.uuid(),
    description: z.string().min(1),
    params: z.record(z.string().regex(PARAM_NAME), paramDefinition),
    example: z.record(z.string(), z.string()).describe("a valid query string, as a map"),
    columns: z.array(column).min(1).describe("one row, in BigQuery's table-schema form"),
    max_rows: z.number().int().positive(),
    cache: z
      .strictObject({
        ttl_seconds: z.number().int().positive(),
        warming_seconds: z.number().int().nonnegative(),
      })
      .optional()
      .describe("absent: every request runs the query"),
    window: windowDefinition.optional(),
    buckets: bucketsDefinition.optional(),
    paging: pagingDefinition.optional(),
  })
  .describe("An endpoint: a saved query with typed parameters (endpoints/<name>/endpoint.yaml).");
export type EndpointDefinitionFile = z.infer<typeof endpointDefinition>;

/** Where the JSON Schema of the definition file is kept, beside the built-in endpoints. */
export const DEFINITION_SCHEMA_FILE = new URL(
  "../../endpoints/endpoint.schema.json",
  import.meta.url,
);

/** The JSON Schema of the definition file, as endpoints/endpoint.schema.json holds it. */
export function definitionJsonSchema(): string {
  const schema = z.toJSONSchema(endpointDefinition, { io: "input" });
  return `${JSON.stringify({ ...schema, title: "endpoint.yaml" }, null, 2)}\n`;
}
