// How the client writes log records: NDJSON (one record per line, for machines), CSV (a header,
// then a row per record; nested values as their JSON), or a readable line for a terminal, its
// control characters escaped.
import { once } from "node:events";
import { stringify } from "csv-stringify/sync";
import { answerOf, jsonText, recordSchema, shapeOf, shownRecordSchema } from "./answers.ts";
import { shown, shownCsv } from "./terminal.ts";

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
export const recordOf = (json: string): LogRecord => answerOf(recordSchema, json, "a record");

/** One record as a line (CSV: a row) of `format`, newline included. */
export function formatRecord(record: LogRecord, format: RecordFormat): string {
  if (format === "csv") {
    return stringify([COLUMNS.map((column) => record[column] ?? null)], CSV_OPTIONS);
  }
  if (format === "text") {
    const { timestamp, event_message } = shapeOf(shownRecordSchema, record, "a record");
    return `${shown(`${timestamp} ${event_message ?? ""}`)}\n`;
  }
  return `${jsonText(record, "a record")}\n`;
}

/** Writes to stdout, waiting while it is full: a slow reader slows the client, not its memory. */
export async function writeStdout(text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, "drain");
}

/**
 * CSV as it goes to stdout: as sent into a pipe or a file, which a program reads; on a terminal,
 * which a person reads, its cells' control characters escaped as in text output.
 */
export const csvForStdout = (csv: string): string => (process.stdout.isTTY ? shownCsv(csv) : csv);
