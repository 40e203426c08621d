import { stringify } from "csv-stringify/sync";
import { FORMAT_SUFFIXES } from "../../endpoints/format-suffixes.ts";
import { rowsFormat } from "./rows-format.ts";

/**
 * CSV (RFC 4180: CRLF line ends, quotes doubled): a header row of the endpoint's declared columns
 * (held equal to the SQL's by test/sql/row-schemas.test.ts), then one record per row. Strings
 * (TIMESTAMP and DATETIME among them) are as in JSON, unquoted unless they need it; NULL is an empty
 * cell; arrays and objects (logs.all `metadata`) are their JSON text in one cell. A text cell a
 * spreadsheet would run as a formula (one starting with = + - @, TAB or CR, or their full-width
 * forms) is written with a `'` before it: log messages are written by whoever sends the requests. Numbers
 * are left alone, a negative one included: they are never text a spreadsheet evaluates.
 */
export const csv = rowsFormat(FORMAT_SUFFIXES.csv, "text/csv; charset=utf-8", (rows, columns) => {
  // Records as arrays: csv-stringify would read a column named `a.b` as a path into objects.
  const records = rows.map((row) => columns.map((column) => row[column]));
  return stringify([columns, ...records], {
    record_delimiter: "windows",
    escape_formulas: true,
    cast: {
      // The default writes true as "1" and false as "".
      boolean: (value) => String(value),
      object: (value) => JSON.stringify(value),
    },
  });
});
