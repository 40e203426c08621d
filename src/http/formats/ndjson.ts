import { FORMAT_SUFFIXES } from "../../endpoints/format-suffixes.ts";
import { rowsFormat } from "./rows-format.ts";

/** NDJSON: each row as the JSON object it is in `result`, one a line, each line ending in `\n`. */
export const ndjson = rowsFormat(
  FORMAT_SUFFIXES.ndjson,
  "application/x-ndjson; charset=utf-8",
  (rows) => rows.map((row) => `${JSON.stringify(row)}\n`).join(""),
);
