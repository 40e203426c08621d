// The embedded engine itself: wire format of every type the queries return, parameter binding,
// the pinned clock, row caps and failures.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { EngineError } from "../../src/engines/engine.ts";
import { parseIsoTimestamp } from "../../src/time.ts";

const NOW = parseIsoTimestamp("2026-11-21T05:00:00.123456Z") as bigint;
let engine: DuckDbEngine;

beforeAll(async () => {
  engine = await createDuckDbEngine({ now: () => NOW });
});
afterAll(() => engine.close());

const run = (sql: string, params: Record<string, string | null> = {}, maxRows = 1000) =>
  engine.run({ endpoint: "test", sql, params, maxRows });

describe("DuckDB engine", () => {
  it("gives rows in BigQuery's wire format, columns in order", async () => {
    const { rows } = await run(`SELECT
      TIMESTAMPTZ '2026-11-21 05:00:00.000001+00' AS ts,
      TIMESTAMP '2026-11-21 05:00:00' AS dt,
      CAST(42 AS BIGINT) AS big, CAST(7 AS HUGEINT) AS huge, 2.5::DOUBLE AS dbl,
      NULL::VARCHAR AS nothing, 'ü' AS text,
      [{'status_code': 200::BIGINT}, {'status_code': NULL}] AS list,
      {'a': [1, 2], 'b': NULL::TIMESTAMPTZ} AS record`);
    expect(JSON.stringify(rows)).toBe(
      JSON.stringify([
        {
          ts: "2026-11-21T05:00:00.000001Z",
          dt: "2026-11-21T05:00:00",
          big: 42,
          huge: 7,
          dbl: 2.5,
          nothing: null,
          text: "ü",
          list: [{ status_code: 200 }, { status_code: null }],
          record: { a: [1, 2], b: null },
        },
      ]),
    );
  });

  it("binds $now to the clock, in a UTC session", async () => {
    const { rows } = await run(
      "SELECT $now AS now, current_setting('TimeZone') AS zone, date_trunc('day', $now) AS day",
    );
    expect(rows).toEqual([
      { now: "2026-11-21T05:00:00.123456Z", zone: "UTC", day: "2026-11-21T00:00:00.000000Z" },
    ]);
  });

  it("binds parameters by name as strings, absent ones as NULL, never spliced", async () => {
    const { rows } = await run("SELECT $a AS a, $b IS NULL AS b_null, $a || $a AS twice", {
      a: "x'; DROP TABLE t; --",
      b: null,
    });
    expect(rows).toEqual([
      {
        a: "x'; DROP TABLE t; --",
        b_null: true,
        twice: "x'; DROP TABLE t; --x'; DROP TABLE t; --",
      },
    ]);
  });

  it("fetches at most maxRows and says when it cut", async () => {
    const cut = await run("SELECT i FROM range(5000) t(i) ORDER BY i", {}, 3);
    expect(cut).toEqual({ rows: [{ i: 0 }, { i: 1 }, { i: 2 }], truncated: true });
    const whole = await run("SELECT i FROM range(3) t(i) ORDER BY i", {}, 3);
    expect(whole.truncated).toBe(false);
  });

  it("reports SQL errors and undeclared parameters as engine_error, detail for the log only", async () => {
    const failure = await run("SELECT * FROM no_such_table").catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(EngineError);
    expect(failure).toMatchObject({ code: "engine_error" });
    expect((failure as EngineError).message).not.toContain("no_such_table");
    expect((failure as EngineError).detail?.cause).toContain("no_such_table");
    await expect(run("SELECT $undeclared")).rejects.toMatchObject({ code: "engine_error" });
  });

  it("interrupts a query past its timeout as engine_timeout", async () => {
    const slow = await createDuckDbEngine({ timeoutMs: 50 });
    try {
      await expect(
        slow.run({
          endpoint: "slow",
          sql: "SELECT count(*) FROM range(1000000000000) a(i) WHERE i % 7 = 3",
          params: {},
          maxRows: 10,
        }),
      ).rejects.toMatchObject({ code: "engine_timeout" });
    } finally {
      await slow.close();
    }
  });

  it("answers ping", async () => {
    await expect(engine.ping()).resolves.toBeUndefined();
  });
});
