// `log-query endpoints`: the catalog the key may call, a line per endpoint and one per parameter,
// or the service's JSON with --format json.
import { type Connection, EXIT, get } from "./client.ts";
import { formatOf, type Options } from "./options.ts";
import { text } from "./streams.ts";

interface Listed {
  name: string;
  description: string;
  params: { name: string; required: boolean; description?: string }[];
  fixed_params?: Record<string, string>;
  paths: string[];
}

export async function listEndpoints(connection: Connection, values: Options): Promise<number> {
  const format = formatOf(values, ["text", "json"], "text");
  const body = await text(await get(connection, "/api/endpoints"));
  if (format === "json") {
    process.stdout.write(`${body}\n`);
    return EXIT.ok;
  }
  const { result } = JSON.parse(body) as { result: Listed[] };
  for (const endpoint of result) {
    const follow = endpoint.paths.some((path) => path.endsWith("/follow")) ? " (followable)" : "";
    process.stdout.write(`${endpoint.name}${follow}: ${endpoint.description}\n`);
    for (const param of endpoint.params) {
      const fixed = endpoint.fixed_params?.[param.name];
      const mark =
        fixed !== undefined
          ? ` = ${fixed} (fixed by your key)`
          : param.required
            ? " (required)"
            : "";
      process.stdout.write(`  ${param.name}${mark}  ${param.description ?? ""}\n`);
    }
  }
  return EXIT.ok;
}
