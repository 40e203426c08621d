// What the embedded engine serves: LOCAL_DATA exports read with the schema types (bad files named
// with their line or missing columns), demo logs for the last 7 days, and the choice between them.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadData } from "../../src/engines/duckdb/data.ts";
import { DEMO_FUNCTIONS, DEMO_PROJECTS } from "../../src/engines/duckdb/demo-data.ts";
import { DataFileError } from "../../src/engines/duckdb/local-data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { parseIsoTimestamp } from "../../src/time.ts";

const NOW = parseIsoTimestamp("2026-11-21T05:00:00Z") as bigint;
let engine: DuckDbEngine;
let folder: string;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), "duckdb-data-"));
  engine = await createDuckDbEngine({ now: () => NOW, dataFolders: [folder] });
});
afterEach(async () => {
  await engine.close();
  await rm(folder, { recursive: true, force: true });
});

const query = async (sql: string) =>
  (await engine.run({ endpoint: "test", sql, params: {}, maxRows: 1000 })).rows;
const ndjson = (rows: unknown[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join("");

describe("LOCAL_DATA", () => {
  it("reads BigQuery exports with the schema's types; absent repeated fields are empty", async () => {
    await writeFile(
      join(folder, "edge_logs-000.ndjson"),
      ndjson([
        {
          id: "a",
          timestamp: "2026-11-21 02:40:05.075 UTC",
          project: "p",
          metadata: [
            { request: [{ path: "/rest/v1/x", extra: 1 }], response: [{ status_code: "404" }] },
          ],
        },
        { id: "b", timestamp: "2026-11-21T04:40:05.000001+02:00", project: "p", metadata: [{}] },
      ]),
    );
    await writeFile(
      join(folder, "function_edge_logs.ndjson"),
      ndjson([
        { id: "f", timestamp: "2026-11-21T02:00:00Z", metadata: [{ execution_time_ms: 12 }] },
      ]),
    );
    await writeFile(join(folder, "notes.txt"), "ignored");
    const loaded = await loadData(engine, { localData: folder, now: 7n });
    expect(loaded).toEqual({
      source: "local",
      files: [
        { table: "edge_logs", file: join(folder, "edge_logs-000.ndjson"), rows: 2 },
        { table: "function_edge_logs", file: join(folder, "function_edge_logs.ndjson"), rows: 1 },
      ],
      listing: { listedAt: 7n, complete: true },
      rows: { edge_logs: 2, function_edge_logs: 1 },
    });
    expect(await query("SELECT * FROM edge_logs ORDER BY id")).toEqual([
      {
        id: "a",
        timestamp: "2026-11-21T02:40:05.075000Z",
        event_message: null,
        project: "p",
        metadata: [
          {
            request: [{ method: null, path: "/rest/v1/x", url: null, host: null }],
            response: [{ status_code: 404 }],
          },
        ],
      },
      {
        id: "b",
        timestamp: "2026-11-21T02:40:05.000001Z",
        event_message: null,
        project: "p",
        metadata: [{ request: [], response: [] }],
      },
    ]);
    expect(await query("SELECT metadata FROM function_edge_logs")).toEqual([
      {
        metadata: [
          {
            project_ref: null,
            function_id: null,
            execution_time_ms: 12,
            request: [],
            response: [],
          },
        ],
      },
    ]);
  });

  it("reads Parquet exports", async () => {
    const writer = await engine.connect();
    await writer.run(
      `COPY (SELECT 'p1' AS id, TIMESTAMPTZ '2026-11-21 01:00:00+00' AS timestamp, 'm' AS event_message,
        'p' AS project, [{'request': [], 'response': [{'status_code': 500}]}] AS metadata)
       TO '${join(folder, "edge_logs.parquet")}' (FORMAT parquet)`,
    );
    writer.closeSync();
    const loaded = await loadData(engine, { localData: folder });
    expect(loaded.rows).toEqual({ edge_logs: 1, function_edge_logs: 0 });
    expect(await query("SELECT id, timestamp, metadata FROM edge_logs")).toEqual([
      {
        id: "p1",
        timestamp: "2026-11-21T01:00:00.000000Z",
        metadata: [{ request: [], response: [{ status_code: 500 }] }],
      },
    ]);
  });

  it("reads .json, .jsonl and gzipped exports as bq extract names them, each into its table", async () => {
    const row = (id: string) => ({ id, timestamp: "2026-11-21T02:00:00Z" });
    const files = {
      "edge_logs-000000000000.json": ndjson([row("e0")]),
      "edge_logs-000000000001.json.gz": gzipSync(ndjson([row("e1"), row("e2")])),
      "edge_logs-000000000002.ndjson.gz": gzipSync(ndjson([row("e3")])),
      "function_edge_logs-000000000000.jsonl": ndjson([row("f0")]),
      "function_edge_logs-000000000001.jsonl.gz": gzipSync(ndjson([row("f1"), row("f2")])),
      "edge_logs.csv.gz": gzipSync("id\nnot read\n"),
    };
    for (const [name, content] of Object.entries(files))
      await writeFile(join(folder, name), content);
    const loaded = await loadData(engine, { localData: folder });
    expect(loaded.files).toEqual([
      { table: "edge_logs", file: join(folder, "edge_logs-000000000000.json"), rows: 1 },
      { table: "edge_logs", file: join(folder, "edge_logs-000000000001.json.gz"), rows: 2 },
      { table: "edge_logs", file: join(folder, "edge_logs-000000000002.ndjson.gz"), rows: 1 },
      {
        table: "function_edge_logs",
        file: join(folder, "function_edge_logs-000000000000.jsonl"),
        rows: 1,
      },
      {
        table: "function_edge_logs",
        file: join(folder, "function_edge_logs-000000000001.jsonl.gz"),
        rows: 2,
      },
    ]);
    expect(await query("SELECT list(id ORDER BY id) AS ids FROM edge_logs")).toEqual([
      { ids: ["e0", "e1", "e2", "e3"] },
    ]);
    expect(await query("SELECT list(id ORDER BY id) AS ids FROM function_edge_logs")).toEqual([
      { ids: ["f0", "f1", "f2"] },
    ]);
  });

  it("stops on a bad file, naming the file and the exact line, and loads nothing", async () => {
    const lines = Array.from({ length: 30_000 }, (_, i) =>
      JSON.stringify({ id: String(i), timestamp: "2026-11-21T02:40:05Z" }),
    );
    lines[23_456] = JSON.stringify({ id: "x", timestamp: "yesterday" });
    lines.splice(10, 0, "");
    const file = join(folder, "edge_logs.ndjson");
    await writeFile(file, `${lines.join("\n")}\n`);
    const failure = await loadData(engine, { localData: folder }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(DataFileError);
    expect(failure).toMatchObject({ file, line: 23_458 });
    expect((failure as Error).message).toMatch(/edge_logs\.ndjson, line 23458: .*"yesterday"/);
    expect(await query("SELECT count(*) AS n FROM edge_logs")).toEqual([{ n: 0 }]);
  });

  it("names the line of malformed JSON", async () => {
    await writeFile(join(folder, "function_edge_logs.ndjson"), '{"id":"a"}\n{"id":\n{"id":"c"}\n');
    await expect(loadData(engine, { localData: folder })).rejects.toMatchObject({ line: 2 });
  });

  it("names the exact line of a bad line in a gzipped export", async () => {
    const lines = Array.from({ length: 100 }, (_, i) =>
      JSON.stringify({ id: String(i), timestamp: "2026-11-21T02:40:05Z" }),
    );
    lines[76] = JSON.stringify({ id: "x", timestamp: "yesterday" });
    const file = join(folder, "edge_logs-000000000000.json.gz");
    await writeFile(file, gzipSync(`${lines.join("\n")}\n`));
    const failure = await loadData(engine, { localData: folder }).catch((e: unknown) => e);
    expect(failure).toMatchObject({ file, line: 77 });
    expect((failure as Error).message).toMatch(
      /edge_logs-000000000000\.json\.gz, line 77: .*"yesterday"/,
    );
  });

  it("keeps DuckDB's message for a file that cannot be decompressed", async () => {
    const file = join(folder, "edge_logs.json.gz");
    await writeFile(file, ndjson([{ id: "a" }]));
    await expect(loadData(engine, { localData: folder })).rejects.toMatchObject({
      file,
      message: `${file}: IO Error: Input is not a GZIP stream: ${file}`,
    });
  });

  it("refuses a JSON array, asking for one JSON object per line", async () => {
    const file = join(folder, "edge_logs.json");
    await writeFile(
      file,
      '\n  [\n  {"id": "a", "timestamp": "2026-11-21T02:00:00Z"},\n  {"id": "b"}\n]\n',
    );
    await expect(loadData(engine, { localData: folder })).rejects.toThrow(
      `${file}: is a JSON array, but the file must hold one JSON object per line (newline-delimited JSON, as bq extract writes)`,
    );
    await rm(file);
    await writeFile(`${file}.gz`, gzipSync(JSON.stringify([{ id: "a" }, { id: "b" }])));
    await expect(loadData(engine, { localData: folder })).rejects.toThrow(
      `${file}.gz: is a JSON array`,
    );
  });

  it("names the columns a Parquet export lacks", async () => {
    const file = join(folder, "edge_logs.parquet");
    const writer = await engine.connect();
    await writer.run(
      `COPY (SELECT 'p1' AS ID, TIMESTAMPTZ '2026-11-21 01:00:00+00' AS timestamp, 'p' AS project)
       TO '${file}' (FORMAT parquet)`,
    );
    writer.closeSync();
    await expect(loadData(engine, { localData: folder })).rejects.toThrow(
      `${file}: missing columns "event_message", "metadata" (the table's columns are id, timestamp, event_message, project, metadata)`,
    );
  });

  it("refuses a folder without exports, naming the files it reads", async () => {
    await writeFile(join(folder, "edge_logs.csv"), "id\n");
    await expect(loadData(engine, { localData: folder })).rejects.toThrow(
      `LOCAL_DATA: folder ${folder} holds no edge_logs* or function_edge_logs* files ending in .json, .jsonl, .ndjson (each optionally .gz) or .parquet`,
    );
  });

  it("names LOCAL_DATA when the folder does not exist or is a file", async () => {
    const missing = join(folder, "exports");
    await expect(loadData(engine, { localData: missing })).rejects.toThrow(
      new Error(`LOCAL_DATA: folder ${missing} does not exist`),
    );
    const file = join(folder, "edge_logs.ndjson");
    await writeFile(file, "");
    await expect(loadData(engine, { localData: file })).rejects.toThrow(
      new Error(`LOCAL_DATA: ${file} is not a folder`),
    );
  });
});

describe("demo data", () => {
  it("fills an empty database with 7 days of logs for two projects, ending now", async () => {
    const loaded = await loadData(engine, { now: NOW });
    expect(loaded.source).toBe("demo");
    expect(loaded.rows.edge_logs).toBeGreaterThan(10_000);
    const [edge] = await query(`SELECT min(timestamp) AS first, max(timestamp) AS last,
      list_sort(list(DISTINCT project)) AS projects,
      count(*) FILTER (WHERE metadata[1].response[1].status_code >= 400) > 0 AS has_errors,
      bool_and(metadata[1].request[1].url = 'https://' || project || '.supabase.co' || metadata[1].request[1].path) AS urls,
      list_sort(list(DISTINCT split_part(metadata[1].request[1].path, '/', 2))) AS areas
      FROM edge_logs`);
    expect(edge).toMatchObject({
      projects: [...DEMO_PROJECTS].sort(),
      has_errors: true,
      urls: true,
      areas: ["auth", "realtime", "rest", "storage"],
    });
    expect(parseIsoTimestamp(edge?.first as string)).toBeGreaterThanOrEqual(
      NOW - 7n * 86_400_000_000n,
    );
    expect(parseIsoTimestamp(edge?.last as string)).toBeLessThanOrEqual(NOW);
    const [fn] = await query(`SELECT list_sort(list(DISTINCT metadata[1].function_id)) AS functions,
      quantile_disc(metadata[1].execution_time_ms, 0.99) > 3 * median(metadata[1].execution_time_ms) AS tail
      FROM function_edge_logs`);
    expect(fn).toEqual({ functions: [...DEMO_FUNCTIONS].sort(), tail: true });
  });

  it("derives the query tables of a database file written before they existed", async () => {
    await loadData(engine, { now: NOW });
    const connection = await engine.connect();
    for (const table of [
      "function_invocations",
      "function_invocation_hours",
      "edge_requests",
      "edge_request_hours",
    ]) {
      await connection.run(`DROP TABLE ${table}`);
    }
    connection.closeSync();
    expect((await loadData(engine, { demoData: false })).source).toBe("database");
    expect(
      await query(`SELECT
        (SELECT count(*) FROM function_invocations) AS invocations,
        (SELECT sum(invocations) FROM function_invocation_hours) AS summed,
        (SELECT count(*) FROM edge_requests) AS requests,
        (SELECT sum(requests) FROM edge_request_hours) AS hours`),
    ).toEqual([{ invocations: 50_000, summed: 50_000, requests: 100_000, hours: 100_000 }]);
  });

  it("derives the sorted execution times of a database file written before they were kept", async () => {
    await loadData(engine, { now: NOW });
    const connection = await engine.connect();
    await connection.run("DROP TABLE function_invocation_values");
    connection.closeSync();
    expect((await loadData(engine, { demoData: false })).source).toBe("database");
    expect(
      await query(`SELECT
        (SELECT count(*) FROM (SELECT unnest(execution_times) FROM function_invocation_values)) AS listed,
        (SELECT count(*) FROM function_invocation_values
          WHERE execution_times <> list_sort(execution_times)) AS unsorted,
        (SELECT count(execution_time_ms) FROM function_invocations) AS invocations`),
    ).toEqual([{ listed: 50_000, unsorted: 0, invocations: 50_000 }]);
  });

  it("keeps what a database file already holds unless asked, and replaces it when asked", async () => {
    await loadData(engine, { now: NOW });
    const kept = await loadData(engine, { now: NOW });
    expect(kept.source).toBe("database");
    const again = await loadData(engine, { now: NOW, demoData: true });
    expect(again.source).toBe("demo");
    expect(again.rows).toEqual(kept.rows);
    const off = await createDuckDbEngine();
    try {
      expect(await loadData(off, { demoData: false })).toEqual({
        source: "database",
        files: [],
        rows: { edge_logs: 0, function_edge_logs: 0 },
      });
    } finally {
      await off.close();
    }
  });
});
