// What differs between an endpoint's declared row and the columns an engine finds its SQL gives,
// field by field within records, by what the wire format makes of each type.
import { describe, expect, it } from "vitest";
import { columnMismatches } from "../../src/endpoints/column-check.ts";
import {
  arrayOf,
  DATETIME,
  FLOAT64,
  INT64,
  nullable,
  STRING,
  struct,
  TIMESTAMP,
} from "../../src/endpoints/columns.ts";
import type { ResultColumn } from "../../src/engines/engine.ts";

// logs.all's row.
const declared = struct({
  id: nullable(STRING),
  timestamp: TIMESTAMP,
  metadata: arrayOf(
    struct({
      request: arrayOf(struct({ path: nullable(STRING) })),
      response: arrayOf(struct({ status_code: nullable(INT64) })),
    }),
  ),
});

const column = (name: string, type: string, spelled = type): ResultColumn => ({
  name,
  type,
  spelled,
});
const records = (name: string, fields: ResultColumn[], spelled: string): ResultColumn => ({
  name,
  type: "RECORD",
  mode: "REPEATED",
  fields,
  spelled,
});

const given = (statusCode: ResultColumn, path = column("path", "STRING", "VARCHAR")) => [
  column("id", "STRING", "VARCHAR"),
  column("timestamp", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE"),
  records(
    "metadata",
    [records("request", [path], "STRUCT(path VARCHAR)[]"), records("response", [statusCode], "…")],
    "…",
  ),
];

describe("a declared row compared with the columns an SQL gives", () => {
  it("takes the same columns, whatever the engine calls their types", () => {
    expect(columnMismatches(declared, given(column("status_code", "INT64", "HUGEINT")))).toEqual(
      [],
    );
  });

  it("names a field within records by its path, with both types", () => {
    expect(columnMismatches(declared, given(column("status_code", "STRING", "VARCHAR")))).toEqual([
      "metadata[].response[].status_code is VARCHAR, STRING on the wire, which cannot be the declared INT64",
    ]);
    expect(columnMismatches(declared, given(column("code", "INT64")))).toEqual([
      "gives no metadata[].response[].status_code, declared INT64",
      "gives metadata[].response[].code (INT64), which is not declared",
    ]);
  });

  it("refuses one value where a list is declared, and a list where one value is", () => {
    const listed = { ...column("path", "STRING", "VARCHAR[]"), mode: "REPEATED" as const };
    expect(columnMismatches(declared, given(column("status_code", "INT64"), listed))).toEqual([
      "metadata[].request[].path is VARCHAR[], ARRAY<STRING> on the wire, which cannot be the declared STRING",
    ]);
    const row = struct({ tags: arrayOf(STRING) });
    expect(columnMismatches(row, [column("tags", "STRING")])).toEqual([
      "tags is STRING, which cannot be the declared ARRAY<STRING>",
    ]);
  });

  it("takes an integer for a FLOAT64, text for a time, and a JSON value for anything", () => {
    const row = struct({ n: FLOAT64, at: TIMESTAMP, day: DATETIME, any: INT64 });
    const text = (name: string) => column(name, "STRING", "VARCHAR");
    expect(
      columnMismatches(row, [column("n", "INT64"), text("at"), text("day"), column("any", "JSON")]),
    ).toEqual([]);
    expect(
      columnMismatches(row, [
        column("n", "STRING"),
        column("at", "DATETIME", "TIMESTAMP"),
        column("day", "TIMESTAMP"),
        column("any", "FLOAT64"),
      ]),
    ).toEqual([
      "n is STRING, which cannot be the declared FLOAT64",
      "at is TIMESTAMP, DATETIME on the wire, which cannot be the declared TIMESTAMP",
      "day is TIMESTAMP, which cannot be the declared DATETIME",
      "any is FLOAT64, which cannot be the declared INT64",
    ]);
  });
});
