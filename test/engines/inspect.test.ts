// What each engine's own parser makes of an endpoint's SQL, without running it: the kind of
// statement (a read-only query or not, one statement or several) and the parameters it names.
// BigQuery's answer comes from a jobs.insert dry run through the official client to the stand-in.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { EngineError, type QueryEngine } from "../../src/engines/engine.ts";
import { referencedParams } from "../../src/engines/sql-text.ts";
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

  it("names a query SELECT, whatever the case of the parameters it refers to", async () => {
    const sql = `SELECT id FROM edge_logs WHERE id = ${param("Project")} OR id = ${param("project")} OR id > ${param("window_start")}`;
    expect((await inspect(sql)).kind).toBe("SELECT");
  });

  it("names a query's result columns by what the wire format makes of them, as the engine spells them", async () => {
    const sql =
      dialect === "bigquery"
        ? `SELECT id, timestamp, COUNT(*) AS n, [STRUCT(1.5 AS x)] AS xs FROM edge_logs WHERE id = ${param("project")} GROUP BY id, timestamp`
        : `SELECT id, timestamp, count(*) AS n, [{'x': 1.5}] AS xs FROM edge_logs WHERE id = ${param("project")} GROUP BY id, timestamp`;
    const spelled = (bigQuery: string, duckDb: string) =>
      dialect === "bigquery" ? bigQuery : duckDb;
    expect((await inspect(sql)).columns).toEqual([
      { name: "id", type: "STRING", spelled: spelled("STRING", "VARCHAR") },
      {
        name: "timestamp",
        type: "TIMESTAMP",
        spelled: spelled("TIMESTAMP", "TIMESTAMP WITH TIME ZONE"),
      },
      { name: "n", type: "INT64", spelled: spelled("INT64", "BIGINT") },
      {
        name: "xs",
        type: "RECORD",
        mode: "REPEATED",
        fields: [{ name: "x", type: "FLOAT64", spelled: spelled("FLOAT64", "DECIMAL(2,1)") }],
        spelled: spelled("ARRAY<STRUCT<x FLOAT64>>", 'STRUCT("x" DECIMAL(2,1))[]'),
      },
    ]);
  });

  it("names a statement that writes by what it does (DuckDB's parser: other than SELECT)", async () => {
    const named = (kind: string) => (dialect === "bigquery" ? kind : "OTHER");
    expect((await inspect("DELETE FROM edge_logs WHERE TRUE")).kind).toBe(named("DELETE"));
    expect((await inspect("DROP TABLE edge_logs")).kind).not.toBe("SELECT");
    expect((await inspect("INSERT INTO edge_logs (id) VALUES ('x')")).kind).toBe(named("INSERT"));
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

describe("inspecting SQL on duckdb, inside a folder its SQL may write", () => {
  let folder: string;
  let engine: DuckDbEngine;
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), "inspect-"));
    engine = await createDuckDbEngine({ dataFolders: [folder] });
  });
  afterAll(async () => {
    await engine.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("finds EXPORT DATABASE no query, and creates no folder for it", async () => {
    const target = join(folder, "exported");
    expect((await engine.inspect(`EXPORT DATABASE '${target}'`)).kind).not.toBe("SELECT");
    expect(existsSync(target)).toBe(false);
  });

  it("finds IMPORT DATABASE no query, whatever the schema.sql it would run holds", async () => {
    writeFileSync(join(folder, "schema.sql"), "SELECT 1 AS n;");
    writeFileSync(join(folder, "load.sql"), "");
    expect((await engine.inspect(`IMPORT DATABASE '${folder}'`)).kind).not.toBe("SELECT");
  });

  it("finds COPY … TO and a SELECT followed by a write no query, and writes nothing", async () => {
    const target = join(folder, "copied.csv");
    expect((await engine.inspect(`COPY (SELECT 1) TO '${target}'`)).kind).not.toBe("SELECT");
    expect((await engine.inspect(`SELECT 1; COPY (SELECT 1) TO '${target}'`)).kind).not.toBe(
      "SELECT",
    );
    expect(existsSync(target)).toBe(false);
  });

  it("names the columns of a query whose parameters' types only binding tells", async () => {
    const sql = `-- a comment, and a semicolon after the query
      SELECT $now - INTERVAL 1 HOUR AS since, coalesce($project, 'none') AS project,
        (SELECT count(*) FROM glob('${folder}/*')) AS files;`;
    expect((await engine.inspect(sql)).columns).toEqual([
      { name: "since", type: "TIMESTAMP", spelled: "TIMESTAMP WITH TIME ZONE" },
      { name: "project", type: "STRING", spelled: "VARCHAR" },
      { name: "files", type: "INT64", spelled: "BIGINT" },
    ]);
    // Where planning needs a parameter's value, the columns are left unknown, not refused.
    const file = await engine.inspect("SELECT content AS text FROM read_text($file)");
    expect(file.kind).toBe("SELECT");
    expect(file.columns).toBeUndefined();
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
