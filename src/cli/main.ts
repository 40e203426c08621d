// log-query: the service's command-line client. `main` reads the command line and the
// environment, runs one command, and answers its exit code; failures are one line on stderr.
import { readFileSync } from "node:fs";
import { CliError, EXIT } from "./cli-error.ts";
import type { Connection } from "./client.ts";
import { listEndpoints } from "./endpoints-command.ts";
import { runExport } from "./export-command.ts";
import { COMMAND_HELP, type Options, parse, USAGE } from "./options.ts";
import { runQuery } from "./query-command.ts";
import { runTail } from "./tail-command.ts";
import { shownLines } from "./terminal.ts";

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
    if (values.version) {
      process.stdout.write(`${version()}\n`);
      return EXIT.ok;
    }
    // `log-query <command> --help`, or `log-query help <command>`.
    const helpOn = command === "help" ? rest[0] : values.help ? command : undefined;
    if (helpOn !== undefined && COMMAND_HELP[helpOn] !== undefined) {
      process.stdout.write(COMMAND_HELP[helpOn]);
      return EXIT.ok;
    }
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
    // An answer the service sent is read through a schema (answers.ts), which says in a CliError
    // what it sent that cannot be read; anything else thrown here is log-query's own bug.
    if (!(error instanceof CliError)) throw error;
    // Text from the service was escaped where it was put into the message; this catches the rest.
    process.stderr.write(`log-query: ${shownLines(error.message)}\n`);
    return error.exitCode;
  }
}

/** The package's version, from its package.json. */
function version(): string {
  const manifest = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  return (JSON.parse(manifest) as { version: string }).version;
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
