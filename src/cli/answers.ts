// What the client reads in the service's answers, a zod schema each: a record, a stream's end, a
// page of an endpoint, the endpoint listing. An answer that is not JSON, or not of its shape, is the
// service's failure, said in one line (exit 5), not a TypeError deep in the command that read it.
import { z } from "zod";
import { CliError, EXIT } from "./cli-error.ts";
import { shown } from "./terminal.ts";

/** A log record (a line of NDJSON, an event's data): any object, written as it is. */
export const recordSchema = z.record(z.string(), z.unknown());

/** The fields a record's readable line shows. */
export const shownRecordSchema = z.looseObject({
  timestamp: z.string(),
  event_message: z.string().nullish(),
});

/** How a stream ended: `event: end`'s data, or an NDJSON stream's `{"end": …}` line. */
export const endSchema = z.object({ reason: z.string(), cursor: z.string().optional() });

/** A JSON page of an endpoint. */
export const pageSchema = z.object({ result: z.array(z.unknown()) });

/** GET /api/endpoints, as far as `log-query endpoints` shows it. */
export const listingSchema = z.object({
  result: z.array(
    z.object({
      name: z.string(),
      description: z.string(),
      params: z.array(
        z.object({
          name: z.string(),
          required: z.boolean(),
          description: z.string().optional(),
          default: z.unknown().optional(),
        }),
      ),
      fixed_params: z.record(z.string(), z.string()).optional(),
      paths: z.array(z.string()),
    }),
  ),
});

/** `json`, which the service sent as `what`, read as `schema` says it is. */
export function answerOf<T extends z.ZodType>(schema: T, json: string, what: string): z.output<T> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new CliError(
      `the service sent ${what} that is not JSON: ${shown((error as Error).message)}`,
      EXIT.server,
    );
  }
  return shapeOf(schema, value, what);
}

/** `value`, which the service sent as `what`, as `schema` says it is. */
export function shapeOf<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const checked = schema.safeParse(value);
  if (checked.success) return checked.data;
  const [issue] = checked.error.issues;
  const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
  throw new CliError(
    `the service sent ${what} log-query cannot read: ${shown(`${where}${issue?.message}`)}`,
    EXIT.server,
  );
}

/**
 * `value`, which the service sent as `what`, as JSON text again: a value nested deeper than the
 * stack goes (a page 200 000 arrays deep) is the service's failure, said in one line.
 */
export function jsonText(value: unknown, what: string): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new CliError(
      `the service sent ${what} log-query cannot print: nested too deeply`,
      EXIT.server,
    );
  }
}
