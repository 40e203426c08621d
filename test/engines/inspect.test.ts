// What each engine's own parser makes of an endpoint's SQL, without running it: the kind of
// statement (a read-only query or not, one statement or several) and the parameters it names.
// BigQuery's answer comes from a jobs.insert dry run through the official client to the stand-in.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { referencedParams } from "../../src/endpoints/sql-text.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import { EngineError, type QueryEngine } from "../../src/engines/engine.ts";
import { standInEngine } from "../support/service.ts";

const cases: {
  dialect: string;
  open: () => Promise<{ engine: QueryEngine; close(): Promise<void> }>;
}[] = [
  {
    dialect: "bigquery",
    async open() {
      const { standIn, engine } = await standInEngine({ now: "2026-11-28T00:00:00Z" });
      return { engine, close: () => standIn.close() };
    },
  },
  {
    dialect: "duckdb",
    async open() {
      const engine = await createDuckDbEngine();
      const connection = await engine.connect();
      await connection.run("CREATE TABLE edge_logs (id VARCHAR, timestamp TIMESTAMPTZ)");
      connection.closeSync();
      return { engine, close: () => engine.close() };
    },
  },
];

describe.each(cases)("inspecting SQL on $dialect", ({ dialect, open }) => {
  let engine: QueryEngine;
  let close: () => Promise<void>;
  const param = (name: string) => (dialect === "bigquery" ? `@${name}` : `$${name}`);
  beforeAll(async () => {
    ({ engine, close } = await open());
  });
  afterAll(() => close());

  const inspect = (sql: string) => {
    if (!engine.inspect) throw new Error(`${dialect} cannot inspect SQL`);
    return engine.inspect(sql);
  };

  it("names a query SELECT, with the parameters it refers to, lower case and once each", async () => {
    const sql = `SELECT id FROM edge_logs WHERE id = ${param("Project")} OR id = ${param("project")} OR id > ${param("window_start")}`;
    expect(await inspect(sql)).toEqual({ kind: "SELECT", params: ["project", "window_start"] });
  });

  it("names a statement that writes by what it does", async () => {
    expect((await inspect("DELETE FROM edge_logs WHERE TRUE")).kind).toBe("DELETE");
    expect((await inspect("DROP TABLE edge_logs")).kind).not.toBe("SELECT");
    expect((await inspect("INSERT INTO edge_logs (id) VALUES ('x')")).kind).toBe("INSERT");
  });

  it("names two statements a script, though each alone is a query", async () => {
    expect((await inspect("SELECT 1 AS x; SELECT 2 AS y")).kind).toBe("SCRIPT");
  });

  it("throws the engine's own words for SQL it cannot plan", async () => {
    const failure = await inspect("SELEC id FROM edge_logs").catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EngineError);
    expect((failure as EngineError).detail?.cause).toMatch(/syntax error/i);
  });
});

describe("the @names of a GoogleSQL text", () => {
  it("skips comments, strings, quoted names and system variables", () => {
    const sql = [
      "SELECT @a, '@b', \"@c\", `@d`, '''@e''', @@session.x -- @f",
      "# @g",
      "/* @h */ FROM t WHERE x = @I AND y=@a",
    ].join("\n");
    expect(referencedParams(sql)).toEqual(["a", "i"]);
  });
});
