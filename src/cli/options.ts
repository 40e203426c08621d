// The options every log-query command reads, its usage text, and the helpers the commands share
// to read them: a required option, a --format, logs.all's filters.
import { parseArgs } from "node:util";
import { CliError, EXIT } from "./cli-error.ts";

/** What each exit code means, in a few words; the commands' help lists those they can end with. */
const EXIT_MEANINGS: Record<number, string> = {
  0: "done",
  1: "a file export cannot write",
  2: "usage, a refused parameter or a redirect",
  3: "key missing or refused",
  4: "no such endpoint",
  5: "the service failed, or sent more than log-query holds",
  6: "the service could not be reached",
};

const exitCodes = (...codes: number[]) =>
  `Exit codes:\n${codes.map((code) => `  ${code}  ${EXIT_MEANINGS[code]}`).join("\n")}`;

const CONNECTION = `Connection:
  --url <url>               the service (default: $LOG_QUERY_URL, else http://127.0.0.1:3000)
  --key-file <file>         a file holding the key (default: the key in $LOG_QUERY_KEY)`;

const LOGS_OPTIONS = `  --project <ref>           project ref (required)
  --tier <tier>             project_tier: FREE, PRO, PAYG, ENTERPRISE (default FREE)
  --status <terms>          e.g. 5xx or 404,429
  --method <methods>        e.g. POST,PATCH
  --path <prefix>           e.g. /rest/v1/
  --search <text>           in event_message, any case
  --search-regex <re2>      on event_message`;

export const USAGE = `Usage: log-query <command> [options]

Commands:
  tail                      follow logs.all as records arrive, reconnecting by itself
  export --state <file>     every record since the last run, once: for cron jobs and CI steps
  query <endpoint> [name=value ...]
                            run any endpoint; --all follows its pages
  endpoints                 the endpoints your key may call, with their parameters

log-query <command> --help says a command's options; log-query --version its version.

${CONNECTION}

${exitCodes(0, 1, 2, 3, 4, 5, 6)}
`;

/** Each command's --help. */
export const COMMAND_HELP: Record<string, string> = {
  tail: `Usage: log-query tail --project <ref> [options]

Follows logs.all: each record as it arrives, until stopped. After a dropped connection or a restart
of the service it reconnects by itself and resumes after the last record printed.

${LOGS_OPTIONS}
  --since <duration>        90s, 15m, 2h, 7d: where it starts (default: now)
  --format <format>         text (a line per record, control characters escaped) or ndjson
                            (default text on a terminal, else ndjson)

${CONNECTION}

${exitCodes(2, 3, 5)}
`,
  export: `Usage: log-query export --state <file> --project <ref> [options]

Writes every logs.all record since the last run, once, and keeps where it stopped in the state file.

  --state <file>            where the cursor of the last run is kept (required)
  --out <file>              append to this file instead of writing to stdout
${LOGS_OPTIONS}
  --since <duration>        90s, 15m, 2h, 7d: where the first run starts (default: now)
  --format <format>         ndjson or csv (default ndjson; CSV on a terminal: control
                            characters escaped)

${CONNECTION}

${exitCodes(0, 1, 2, 3, 5, 6)}
`,
  query: `Usage: log-query query <endpoint> [name=value ...] [options]

Runs an endpoint with the parameters given as name=value, and writes its answer as the service sent it.

  --format <format>         json, ndjson or csv (default json; CSV on a terminal: control
                            characters escaped)
  --all                     follow Link: rel="next" to the last page: one document, stream or table

${CONNECTION}

${exitCodes(0, 2, 3, 4, 5, 6)}
`,
  endpoints: `Usage: log-query endpoints [options]

Lists the endpoints your key may call, with their parameters.

  --format <format>         text (control characters escaped) or json (the service's listing)

${CONNECTION}

${exitCodes(0, 2, 3, 5, 6)}
`,
};

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
  version: { type: "boolean" },
} as const;

export type Options = ReturnType<typeof parse>["values"];

export function parse(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
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
