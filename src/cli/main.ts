// log-query: the service's command-line client. `main` reads the command line and the
// environment, runs one command, and answers its exit code; failures are one line on stderr.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { CliError, type Connection, EXIT } from "./client.ts";
import { listEndpoints } from "./endpoints-command.ts";
import { runExport } from "./export-command.ts";
import { runQuery } from "./query-command.ts";
import { runTail } from "./tail-command.ts";

export const USAGE = `Usage: log-query <command> [options]

Commands:
  tail                      follow logs.all as records arrive, reconnecting by itself
  export --state <file>     every record since the last run, once: for cron jobs and CI steps
  query <endpoint> [name=value ...]
                            run any endpoint; --all follows its pages
  endpoints                 the endpoints your key may call, with their parameters

Connection (every command):
  --url <url>               the service (default: $LOG_QUERY_URL, else http://127.0.0.1:3000)
  --key-file <file>         a file holding the key (default: the key in $LOG_QUERY_KEY)

tail and export:
  --project <ref>           project ref (required)
  --tier <tier>             project_tier: FREE, PRO, PAYG, ENTERPRISE (default FREE)
  --status <terms>          e.g. 5xx or 404,429
  --method <methods>        e.g. POST,PATCH
  --path <prefix>           e.g. /rest/v1/
  --search <text>           in event_message, any case
  --search-regex <re2>      on event_message
  --since <duration>        90s, 15m, 2h, 7d: where tail, or export's first run, starts
  --format <format>         tail: ndjson or text (default text on a terminal, else ndjson);
                            export: ndjson or csv (default ndjson)

export:
  --state <file>            where the cursor of the last run is kept (required)
  --out <file>              append to this file instead of writing to stdout

query:
  --format <format>         json, ndjson or csv (default json)
  --all                     follow Link: rel="next" to the last page

Exit codes: 0 done, 2 usage or a refused parameter, 3 key missing or refused, 4 no such
endpoint, 5 the service failed, 6 the service could not be reached.
`;

const OPTIONS = {
  url: { type: "string" },
  "key-file": { type: "string" },
  project: { type: "string" },
  tier: { type: "string" },
  status: { type: "string" },
  method: { type: "string" },
  path: { type: "string" },
  search: { type: "string" },
  "search-regex": { type: "string" },
  since: { type: "string" },
  format: { type: "string" },
  state: { type: "string" },
  out: { type: "string" },
  all: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

export type Options = ReturnType<typeof parse>["values"];

function parse(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
}

/** Runs the command line `args` (without node and the script); resolves to the exit code. */
export async function main(args: string[], env = process.env): Promise<number> {
  // A reader that has had enough (`| head -n 3`) closes the pipe: that ends the command, quietly.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    process.exit(EXIT.ok);
  });
  try {
    let parsed: ReturnType<typeof parse>;
    try {
      parsed = parse(args);
    } catch (error) {
      throw new CliError(`${(error as Error).message}\n\n${USAGE}`, EXIT.usage);
    }
    const { values, positionals } = parsed;
    const [command, ...rest] = positionals;
    if (values.help || command === undefined || command === "help") {
      process.stdout.write(USAGE);
      return command === undefined && !values.help ? EXIT.usage : EXIT.ok;
    }
    const connection = connect(values, env);
    switch (command) {
      case "endpoints":
        return await listEndpoints(connection, values);
      case "query":
        return await runQuery(connection, rest, values);
      case "tail":
        return await runTail(connection, values);
      case "export":
        return await runExport(connection, values);
      default:
        throw new CliError(`unknown command "${command}"\n\n${USAGE}`, EXIT.usage);
    }
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    process.stderr.write(`log-query: ${error.message}\n`);
    return error.exitCode;
  }
}

/** Where the service is and the key to show it: never from the command line, which others can read. */
function connect(values: Options, env: NodeJS.ProcessEnv): Connection {
  const url = values.url ?? env.LOG_QUERY_URL ?? "http://127.0.0.1:3000";
  if (!URL.canParse(url)) throw new CliError(`--url: "${url}" is not a URL`, EXIT.usage);
  let key = env.LOG_QUERY_KEY;
  if (values["key-file"] !== undefined) {
    try {
      key = readFileSync(values["key-file"], "utf8").trim();
    } catch (error) {
      throw new CliError(`--key-file: ${(error as Error).message}`, EXIT.usage);
    }
  }
  if (!key) {
    throw new CliError(
      "no key: set LOG_QUERY_KEY, or give --key-file with a file that holds it",
      EXIT.auth,
    );
  }
  return { url, key };
}

/** A required option's value, or a usage error naming it. */
export function required(values: Options, name: "project" | "state"): string {
  const value = values[name];
  if (value === undefined || value === "") {
    throw new CliError(`--${name} is required\n\n${USAGE}`, EXIT.usage);
  }
  return value;
}

/** `--format`, one of `allowed`; `fallback` when it is not given. */
export function formatOf<const T extends string>(
  values: Options,
  allowed: readonly T[],
  fallback: T,
): T {
  const format = values.format ?? fallback;
  if ((allowed as readonly string[]).includes(format)) return format as T;
  throw new CliError(`--format must be one of ${allowed.join(", ")}`, EXIT.usage);
}

/** logs.all's parameters from the options: project, tier and the filters the service takes. */
export function logsParams(values: Options): URLSearchParams {
  const params = new URLSearchParams({
    project: required(values, "project"),
    project_tier: values.tier ?? "FREE",
  });
  const filters = [
    ["status", values.status],
    ["method", values.method],
    ["path", values.path],
    ["search", values.search],
    ["search_regex", values["search-regex"]],
  ] as const;
  for (const [name, value] of filters) if (value !== undefined) params.set(name, value);
  return params;
}
