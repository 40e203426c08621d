// `log-query query <endpoint> [name=value ...]`: one endpoint's answer as JSON, NDJSON or CSV;
// with --all, every page, following Link: rel="next", as one JSON document, one NDJSON stream or
// one CSV table. JSON and NDJSON are written as the service sent them once each page (each line)
// is read as JSON; CSV as sent into a pipe or file, its control characters escaped on a terminal.
import { answerOf, jsonText, pageSchema, recordSchema } from "./answers.ts";
import { CliError, EXIT } from "./cli-error.ts";
import { type Connection, get } from "./client.ts";
import { formatOf, type Options, USAGE } from "./options.ts";
import { csvForStdout, writeStdout } from "./output.ts";
import { text } from "./streams.ts";

const MEDIA_TYPES = {
  json: "application/json",
  ndjson: "application/x-ndjson",
  csv: "text/csv",
} as const;

export async function runQuery(
  connection: Connection,
  positionals: string[],
  values: Options,
): Promise<number> {
  const [endpoint, ...pairs] = positionals;
  if (!endpoint) throw new CliError(`query needs an endpoint name\n\n${USAGE}`, EXIT.usage);
  const params = new URLSearchParams();
  for (const pair of pairs) {
    const equals = pair.indexOf("=");
    if (equals <= 0) throw new CliError(`"${pair}" is not name=value`, EXIT.usage);
    params.append(pair.slice(0, equals), pair.slice(equals + 1));
  }
  const format = formatOf(values, ["json", "ndjson", "csv"], "json");
  let next: string | undefined = `/api/endpoints/${encodeURIComponent(endpoint)}?${params}`;
  const pages = pageWriter(format);
  while (next) {
    const response = await get(connection, next, { accept: MEDIA_TYPES[format] });
    await pages.write(await text(response));
    next = values.all ? nextLink(response) : undefined;
  }
  await pages.end();
  return EXIT.ok;
}

/** The path of the next page an answer links to, if any. */
function nextLink(response: Response): string | undefined {
  const link = response.headers.get("link");
  return link ? /<([^>]+)>;\s*rel="next"/.exec(link)?.[1] : undefined;
}

/**
 * Writes pages as one output: JSON pages' results joined into one document, CSV pages under one
 * header, NDJSON as it comes; `end` closes it.
 */
function pageWriter(format: keyof typeof MEDIA_TYPES) {
  let pages = 0;
  let rows = 0;
  return {
    async write(page: string) {
      let out = page;
      if (format === "json") {
        out = "";
        const { result } = answerOf(pageSchema, page, "a page");
        for (const row of result)
          out += `${rows++ === 0 ? '{"result":[' : ","}${jsonText(row, "a page")}`;
      } else if (format === "ndjson") {
        for (const line of page.split("\n")) if (line !== "") answerOf(recordSchema, line, "a row");
      } else out = csvForStdout(pages > 0 ? page.slice(page.indexOf("\n") + 1) : page);
      pages++;
      if (out !== "") await writeStdout(out);
    },
    async end() {
      if (format === "json") await writeStdout(rows === 0 ? '{"result":[]}\n' : "]}\n");
    },
  };
}
