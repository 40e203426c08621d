// The reference harness's error path, which `npm run sql:check` reports as file:line:column.
import { describe, expect, it } from "vitest";
import { GoogleSqlError } from "../support/googlesql.ts";
import { referenceEngine } from "../support/reference-engine.ts";

const engine = referenceEngine();

describe("GoogleSQL errors", () => {
  it.each([
    [
      "an unknown column",
      "SELECT id,\n  FROM edge_logs\n  WHERE nope = 1",
      3,
      9,
      /Unrecognized name: nope/,
    ],
    ["a syntax error", "SELECT id\nFROM edge_logs\nWHERE WHERE", 3, 7, /Syntax error/],
    ["an unknown table", "SELECT 1\nFROM   missing_table", 2, 8, /Table not found: missing_table/],
  ])("analyze reports %s with its line and column", async (_, sql, line, column, message) => {
    const error = await engine.analyze(sql).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GoogleSqlError);
    expect(error).toMatchObject({ line, column, message: expect.stringMatching(message) });
  });

  it("query reports the same position", async () => {
    const error = await engine
      .query("SELECT id\nFROM edge_logs\nWHERE nope", { now: "2026-11-21T05:00:00Z" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "GoogleSqlError", line: 3, column: 7 });
  });
});
