// `log-query endpoints`: the catalog the key may call, a line per endpoint and one per parameter
// (required, fixed by the key, or its default), control characters escaped, or the service's JSON
// as it sent it with --format json. Either is written only once the whole listing is read and of
// the shape it should be.
import { answerOf, listingSchema } from "./answers.ts";
import { EXIT } from "./cli-error.ts";
import { type Connection, get } from "./client.ts";
import { formatOf, type Options } from "./options.ts";
import { text } from "./streams.ts";
import { shown } from "./terminal.ts";

export async function listEndpoints(connection: Connection, values: Options): Promise<number> {
  const format = formatOf(values, ["text", "json"], "text");
  const body = await text(await get(connection, "/api/endpoints"));
  const { result } = answerOf(listingSchema, body, "a listing of endpoints");
  if (format === "json") {
    process.stdout.write(`${body}\n`);
    return EXIT.ok;
  }
  const writeLine = (line: string) => process.stdout.write(`${shown(line)}\n`);
  for (const endpoint of result) {
    const follow = endpoint.paths.some((path) => path.endsWith("/follow")) ? " (followable)" : "";
    writeLine(`${endpoint.name}${follow}: ${endpoint.description}`);
    for (const param of endpoint.params) {
      const fixed = endpoint.fixed_params?.[param.name];
      const mark =
        fixed !== undefined
          ? ` = ${fixed} (fixed by your key)`
          : param.required
            ? " (required)"
            : param.default !== undefined
              ? ` (default ${defaultShown(param.default)})`
              : "";
      writeLine(`  ${param.name}${mark}  ${param.description ?? ""}`);
    }
  }
  return EXIT.ok;
}

/** A default as a query string would give it: a string as it is, anything else as JSON. */
const defaultShown = (value: unknown) =>
  typeof value === "string" ? value : JSON.stringify(value);
