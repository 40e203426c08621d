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
import { CliError, type Connection, EXIT, get } from "./client.ts";
import { formatOf, logsParams, type Options, required } from "./main.ts";
import { csvHeader, formatRecord, writeStdout } from "./output.ts";
import { lines } from "./streams.ts";

interface State {
  /** Where the next run resumes: the cursor the last settled stream ended with; none before one. */
  cursor?: string;
  /** With --out: the file's length after the last whole run. */
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
  const output = values.out === undefined ? stdoutOutput() : fileOutput(values.out, state);
  // Before a first run writes to the file, the state says how long it was: a first run killed
  // midway is cut off like any other.
  if (values.out !== undefined && state?.outBytes === undefined) {
    writeState(statePath, { ...state, outBytes: output.flush() });
  }
  try {
    let end: { reason?: string; cursor?: unknown } | undefined;
    for await (const line of lines(response)) {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (parsed.end) {
        end = parsed.end as typeof end;
        break;
      }
      if (format === "csv" && output.empty()) await output.write(csvHeader());
      await output.write(formatRecord(parsed, format));
    }
    if (end?.reason !== "settled" || typeof end.cursor !== "string") {
      throw new CliError(
        `the stream ended before it settled${end?.reason ? ` (${end.reason})` : ""}; the state file is as it was, run again`,
        EXIT.server,
      );
    }
    const outBytes = output.flush();
    writeState(statePath, { cursor: end.cursor, ...(outBytes !== undefined && { outBytes }) });
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

function stdoutOutput(): Output {
  let written = false;
  return {
    empty: () => !written,
    write: (text) => {
      written = true;
      return writeStdout(text);
    },
    flush: () => undefined,
    close: () => {},
  };
}

/** `path` to append to, cut back first to its length after the last whole run. */
function fileOutput(path: string, state: State | undefined): Output {
  let fd: number;
  try {
    fd = openSync(path, "a+");
  } catch (error) {
    throw new CliError(`--out: ${(error as Error).message}`, EXIT.usage);
  }
  let bytes = fstatSync(fd).size;
  if (state?.outBytes !== undefined && bytes > state.outBytes) {
    ftruncateSync(fd, state.outBytes);
    bytes = state.outBytes;
  }
  return {
    empty: () => bytes === 0,
    write: async (text) => {
      bytes += writeSync(fd, text);
    },
    flush: () => {
      fsyncSync(fd);
      return bytes;
    },
    close: () => closeSync(fd),
  };
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
  const fd = openSync(temporary, "w");
  try {
    writeSync(fd, `${JSON.stringify(state)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}
