// How the client writes log records: NDJSON (one record per line, for machines), CSV (a header,
// then a row per record; nested values as their JSON), or a readable line for a terminal, its
// control characters escaped.
import { once } from "node:events";
import { stringify } from "csv-stringify/sync";
import { CliError, EXIT } from "./client.ts";
import { shown } from "./terminal.ts";

export type RecordFormat = "ndjson" | "csv" | "text";

type LogRecord = Record<string, unknown>;

const COLUMNS = ["id", "timestamp", "event_message", "metadata"];

// As the service's own CSV: nested values as their JSON, and a cell starting with = + - @ TAB or CR,
// which a spreadsheet would run as a formula, with a ' before it.
const CSV_OPTIONS = {
  escape_formulas: true,
  cast: { object: (value: object) => JSON.stringify(value) },
};

/** The CSV header line, written once before the first record of an output. */
export const csvHeader = () => stringify([COLUMNS]);

/** A line or event of a stream as the object each one is; anything else is the service's failure. */
export function recordOf(json: string): LogRecord {
  const value: unknown = JSON.parse(json);
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new CliError("the service sent a record that is not a JSON object", EXIT.server);
  return value as LogRecord;
}

/** One record as a line (CSV: a row) of `format`, newline included. */
export function formatRecord(record: LogRecord, format: RecordFormat): string {
  if (format === "csv") {
    return stringify([COLUMNS.map((column) => record[column] ?? null)], CSV_OPTIONS);
  }
  if (format === "text") return `${shown(`${record.timestamp} ${record.event_message ?? ""}`)}\n`;
  return `${JSON.stringify(record)}\n`;
}

/** Writes to stdout, waiting while it is full: a slow reader slows the client, not its memory. */
export async function writeStdout(text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, "drain");
}
