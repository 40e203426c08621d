// `log-query export --state <file>`: every logs.all record since the last run, once. It reads the
// settled follow stream from the cursor the state file holds (before one: from --since), writes
// each record, and only once the output is flushed replaces the state file (write, then rename), so
// a run killed at any moment leaves the state of the last whole run.
//
// With --out, the file is appended to, and the state also holds how long the file was after the
// last whole run: a killed run's bytes past that are cut off before the next run appends, so the
// file holds every record once whenever a run is killed. On stdout, what a killed run wrote is
// written again by the next.
import {
  closeSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from "node:fs";
import { resolve } from "node:path";
import { endSchema, shapeOf } from "./answers.ts";
import { CliError, EXIT } from "./cli-error.ts";
import { type Connection, get } from "./client.ts";
import { formatOf, logsParams, type Options, required } from "./options.ts";
import {
  csvForStdout,
  csvHeader,
  formatRecord,
  type RecordFormat,
  recordOf,
  writeStdout,
} from "./output.ts";
import { lines } from "./streams.ts";
import { shown } from "./terminal.ts";

interface State {
  /** Where the next run resumes: the cursor the last settled stream ended with; none before one. */
  cursor?: string;
  /** With --out: the file written (its absolute path), and its length after the last whole run. */
  out?: string;
  outBytes?: number;
}

export async function runExport(connection: Connection, values: Options): Promise<number> {
  const statePath = required(values, "state");
  const format = formatOf(values, ["ndjson", "csv"], "ndjson");
  const state = readState(statePath);
  const params = logsParams(values);
  params.set("until", "settled");
  if (state?.cursor !== undefined) params.set("after", state.cursor);
  else if (values.since !== undefined) params.set("since", values.since);

  const response = await get(connection, `/api/endpoints/logs.all/follow?${params}`, {
    accept: "application/x-ndjson",
  });
  const out = values.out === undefined ? undefined : resolve(values.out);
  // The length a state keeps is of the file it was measured on; another file is taken as it is.
  const committed = out !== undefined && state?.out === out ? state?.outBytes : undefined;
  const output = out === undefined ? stdoutOutput(format) : fileOutput(out, committed);
  // Before a run writes to a file the state has no length for, the state says how long it is: a
  // run killed midway is then cut off like any other.
  if (out !== undefined && committed === undefined) {
    writeState(statePath, { ...state, out, outBytes: output.flush() });
  }
  try {
    let end: { reason: string; cursor?: string } | undefined;
    for await (const line of lines(response)) {
      const parsed = recordOf(line);
      if (parsed.end) {
        end = shapeOf(endSchema, parsed.end, "a stream's end");
        break;
      }
      if (format === "csv" && output.empty()) await output.write(csvHeader());
      await output.write(formatRecord(parsed, format));
    }
    if (end?.reason !== "settled" || end.cursor === undefined) {
      throw new CliError(
        `the stream ended before it settled${end ? ` (${shown(end.reason)})` : ""}; the state file is as it was, run again`,
        EXIT.server,
      );
    }
    const outBytes = output.flush();
    writeState(statePath, { cursor: end.cursor, ...(out !== undefined && { out, outBytes }) });
  } finally {
    output.close();
  }
  return EXIT.ok;
}

interface Output {
  /** Nothing written to it yet (a file: it is empty). */
  empty(): boolean;
  write(text: string): Promise<void>;
  /** Flushes what was written to its storage; a file's length after it. */
  flush(): number | undefined;
  close(): void;
}

function stdoutOutput(format: RecordFormat): Output {
  let written = false;
  return {
    empty: () => !written,
    write: (text) => {
      written = true;
      return writeStdout(format === "csv" ? csvForStdout(text) : text);
    },
    flush: () => undefined,
    close: () => {},
  };
}

/** `path` to append to, cut back first to `committed`, its length after the last whole run. */
function fileOutput(path: string, committed: number | undefined): Output {
  const fd = onFile("--out", () => openSync(path, "a+"));
  let bytes = fstatSync(fd).size;
  if (committed !== undefined && bytes > committed) {
    onFile("--out", () => ftruncateSync(fd, committed));
    bytes = committed;
  }
  return {
    empty: () => bytes === 0,
    write: async (text) => {
      bytes += onFile("--out", () => writeSync(fd, text));
    },
    flush: () => {
      onFile("--out", () => fsyncSync(fd));
      return bytes;
    },
    close: () => closeSync(fd),
  };
}

/** A file operation, its failure (no such folder, no space, no permission) one line saying which file. */
function onFile<T>(option: string, operation: () => T): T {
  try {
    return operation();
  } catch (error) {
    throw new CliError(`${option}: ${(error as Error).message}`, EXIT.failed);
  }
}

function readState(path: string): State | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new CliError(`--state: ${(error as Error).message}`, EXIT.usage);
  }
  try {
    const state = JSON.parse(text) as State;
    const valid =
      ["undefined", "string"].includes(typeof state.cursor) &&
      ["undefined", "string"].includes(typeof state.out) &&
      ["undefined", "number"].includes(typeof state.outBytes);
    if (valid) return state;
  } catch {
    // Said below.
  }
  throw new CliError(`--state: ${path} is not a state file of log-query export`, EXIT.usage);
}

/** Replaces the state file whole: a new file, flushed, renamed over the old. */
function writeState(path: string, state: State): void {
  const temporary = `${path}.${process.pid}.tmp`;
  onFile("--state", () => {
    const fd = openSync(temporary, "w");
    try {
      writeSync(fd, `${JSON.stringify(state)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  });
}
