// Data that stays live on the real DuckDB: LOCAL_DATA's new export files are loaded by the watch,
// each exactly once and only once stable; a bad file is logged and skipped; a DUCKDB_PATH database
// remembers what it loaded across restarts. Demo rows keep arriving and expire after 7 days, the
// derived tables following every change.
import { appendFile, mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { keepLive, loadData } from "../../src/engines/duckdb/data.ts";
import { feedDemoData } from "../../src/engines/duckdb/demo-feed.ts";
import { type ExportWatchOptions, watchExports } from "../../src/engines/duckdb/export-watch.ts";
import { DataFileError } from "../../src/engines/duckdb/local-data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { parseIsoTimestamp } from "../../src/time.ts";
import { configFrom } from "../support/config-from.ts";
import { API_KEY } from "../support/service.ts";

const NOW = parseIsoTimestamp("2026-11-21T05:00:00Z") as bigint;
const HOUR = 3_600_000_000n;
const DAY = 24n * HOUR;
// The watch's own timer never fires in these tests: they poll.
const NEVER = 3_600_000;

let folder: string;
let engine: DuckDbEngine;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), "duckdb-live-"));
  engine = await createDuckDbEngine({ now: () => NOW, dataFolders: [folder] });
  closers.push(() => engine.close());
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await rm(folder, { recursive: true, force: true });
});

const query = async (sql: string, on: DuckDbEngine = engine) =>
  (await on.run({ endpoint: "test", sql, params: {}, maxRows: 1000 })).rows;
const count = async (table: string, on: DuckDbEngine = engine) =>
  (await query(`SELECT count(*) AS n FROM ${table}`, on))[0]?.n;

/** NDJSON lines of function_edge_logs records `from`..`to - 1`, an hour before NOW. */
const records = (from: number, to: number) =>
  Array.from(
    { length: to - from },
    (_, i) =>
      `${JSON.stringify({
        id: `r${from + i}`,
        timestamp: "2026-11-21T04:00:00Z",
        metadata: [{ project_ref: "p", execution_time_ms: from + i, response: [] }],
      })}\n`,
  ).join("");

function logger() {
  return { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
}

function watch(options: Partial<ExportWatchOptions> = {}) {
  const log = logger();
  const watcher = watchExports(engine, { source: folder, pollMs: NEVER, log, ...options });
  closers.push(() => watcher.stop());
  return { ...watcher, log };
}

describe("LOCAL_DATA's watch", () => {
  it("loads a new file once it is stable across two polls, exactly once, derived tables included", async () => {
    await writeFile(join(folder, "function_edge_logs-0.ndjson"), records(0, 3));
    await loadData(engine, { localData: folder });
    const { poll } = watch();
    await writeFile(join(folder, "function_edge_logs-1.ndjson"), records(3, 5));
    await poll();
    expect(await count("function_edge_logs")).toBe(3);
    await poll();
    expect(await count("function_edge_logs")).toBe(5);
    await poll();
    await poll();
    expect(await count("function_edge_logs")).toBe(5);
    expect(await count("function_invocations")).toBe(5);
    expect(await query("SELECT sum(invocations) AS n FROM function_invocation_hours")).toEqual([
      { n: 5 },
    ]);
    expect(await query("SELECT file, size, rows, error FROM loaded_files ORDER BY file")).toEqual([
      {
        file: join(folder, "function_edge_logs-0.ndjson"),
        size: records(0, 3).length,
        rows: 3,
        error: null,
      },
      {
        file: join(folder, "function_edge_logs-1.ndjson"),
        size: records(3, 5).length,
        rows: 2,
        error: null,
      },
    ]);
  });

  it("waits for a half-written file to stop changing, then loads all of it", async () => {
    await writeFile(join(folder, "function_edge_logs-0.ndjson"), records(0, 1));
    await loadData(engine, { localData: folder });
    const { poll, log } = watch();
    const file = join(folder, "function_edge_logs-1.ndjson");
    const whole = records(1, 11);
    await writeFile(file, whole.slice(0, whole.length / 2));
    await poll();
    await appendFile(file, whole.slice(whole.length / 2, -10));
    await poll();
    await appendFile(file, whole.slice(-10));
    await poll();
    expect(await count("function_edge_logs")).toBe(1);
    await poll();
    expect(await count("function_edge_logs")).toBe(11);
    expect(log.error).not.toHaveBeenCalled();
  });

  it("rolls back a file that grows while it is read, and loads it whole later", async () => {
    await writeFile(join(folder, "function_edge_logs-0.ndjson"), records(0, 1));
    await loadData(engine, { localData: folder });
    const file = join(folder, "function_edge_logs-1.ndjson");
    let grown = false;
    const { poll, log } = watch({
      afterRead: async () => {
        if (grown) return;
        grown = true;
        await appendFile(file, records(3, 6));
      },
    });
    await writeFile(file, records(1, 3));
    await poll();
    await poll();
    expect(grown).toBe(true);
    expect(await count("function_edge_logs")).toBe(1);
    expect(log.info).toHaveBeenCalledWith(
      { file },
      "LOCAL_DATA: an export is still being written; trying again later",
    );
    await poll();
    await poll();
    expect(await count("function_edge_logs")).toBe(6);
    expect(await count("function_invocations")).toBe(6);
  });

  it("logs a bad file by name and line, skips it, keeps loading others, and retries it once changed", async () => {
    await writeFile(join(folder, "function_edge_logs-0.ndjson"), records(0, 1));
    await loadData(engine, { localData: folder });
    const { poll, log } = watch();
    const bad = join(folder, "function_edge_logs-1.ndjson");
    await writeFile(bad, `${records(1, 2)}{"id": "x", "timestamp": "yesterday"}\n`);
    await poll();
    await poll();
    expect(log.error).toHaveBeenCalledTimes(1);
    expect(log.error).toHaveBeenCalledWith(
      { file: bad, line: 2 },
      expect.stringMatching(
        /skipped a bad export: .*function_edge_logs-1\.ndjson, line 2: .*yesterday/,
      ),
    );
    await writeFile(join(folder, "function_edge_logs-2.ndjson"), records(2, 4));
    await poll();
    await poll();
    expect(log.error).toHaveBeenCalledTimes(1);
    expect(await count("function_edge_logs")).toBe(3);
    const recorded = await engine.run({
      endpoint: "test",
      sql: "SELECT error FROM loaded_files WHERE file = $bad",
      params: { bad },
      maxRows: 1,
    });
    expect(recorded.rows).toEqual([{ error: expect.stringContaining("line 2") }]);
    await writeFile(bad, records(4, 6));
    await poll();
    await poll();
    expect(await count("function_edge_logs")).toBe(5);
  });

  it("reads a glob of files", async () => {
    await writeFile(join(folder, "function_edge_logs-0.ndjson"), records(0, 2));
    await writeFile(join(folder, "function_edge_logs-1.json"), records(2, 3));
    const loaded = await loadData(engine, { localData: join(folder, "*.ndjson") });
    expect(loaded.rows.function_edge_logs).toBe(2);
  });

  it("does not load again after a restart what a DUCKDB_PATH database already holds", async () => {
    const path = join(folder, "logs.duckdb");
    const exports = join(folder, "exports");
    await mkdir(exports);
    await writeFile(join(exports, "function_edge_logs-0.ndjson"), records(0, 3));
    const first = await createDuckDbEngine({ path, dataFolders: [exports] });
    expect((await loadData(first, { localData: exports })).files).toHaveLength(1);
    await first.close();
    await writeFile(join(exports, "function_edge_logs-1.ndjson"), records(3, 4));
    const second = await createDuckDbEngine({ path, dataFolders: [exports] });
    closers.push(() => second.close());
    const again = await loadData(second, { localData: exports });
    expect(again.files).toEqual([
      { table: "function_edge_logs", file: join(exports, "function_edge_logs-1.ndjson"), rows: 1 },
    ]);
    expect(again.rows.function_edge_logs).toBe(4);
    expect(await count("function_invocations", second)).toBe(4);
  });

  it("checkpoints a DUCKDB_PATH database after each file and leaves DuckDB's threads as they were", async () => {
    const path = join(folder, "logs.duckdb");
    const exports = join(folder, "exports");
    await mkdir(exports);
    await writeFile(join(exports, "function_edge_logs-0.ndjson"), records(0, 3));
    const open = await createDuckDbEngine({ path, dataFolders: [exports] });
    closers.push(() => open.close());
    const threads = async () => (await query("SELECT current_setting('threads') AS n", open))[0]?.n;
    const before = await threads();
    await loadData(open, { localData: exports });
    expect((await stat(`${path}.wal`).catch(() => undefined))?.size ?? 0).toBe(0);
    expect(await count("function_invocations", open)).toBe(3);
    // The settings are locked (the sandbox): a load leaves the threads as they were.
    expect(await threads()).toBe(before);
  });

  it("keeps its watermark at the look before a new file was first listed until that file is loaded", async () => {
    await writeFile(join(folder, "function_edge_logs-0.ndjson"), records(0, 3));
    const { listing } = await loadData(engine, { localData: folder, now: 1_000n });
    expect(listing).toEqual({ listedAt: 1_000n, complete: true });
    const clock = { now: 1_000n };
    const { poll, watermark } = watch({ loadedThrough: 1_000n, clock: () => clock.now });
    expect(watermark()).toBe(1_000n);
    clock.now = 2_000n;
    await poll();
    expect(watermark()).toBe(2_000n);
    await writeFile(join(folder, "function_edge_logs-1.ndjson"), records(3, 5));
    clock.now = 3_000n;
    // First listed: it arrived after the look at 2 000, and is not loaded yet.
    await poll();
    expect(watermark()).toBe(2_000n);
    clock.now = 4_000n;
    await poll();
    expect(await count("function_edge_logs")).toBe(5);
    expect(watermark()).toBe(4_000n);
  });

  it("holds its watermark at 0 while a file startup listed is not loaded", async () => {
    await writeFile(join(folder, "function_edge_logs-0.ndjson"), records(0, 3));
    await loadData(engine, { localData: folder });
    // As if startup had found it still being written.
    await writeFile(join(folder, "function_edge_logs-1.ndjson"), records(3, 5));
    const { poll, watermark } = watch({ loadedThrough: 0n, clock: () => 5_000n });
    await poll();
    expect(watermark()).toBe(0n);
    await poll();
    expect(watermark()).toBe(5_000n);
  });

  it("answers /ready with 503 not_ready until a file startup found still being written is loaded", async () => {
    await writeFile(join(folder, "function_edge_logs-0.ndjson"), records(0, 3));
    const data = await loadData(engine, { localData: folder });
    await writeFile(join(folder, "function_edge_logs-1.ndjson"), records(3, 5));
    // As startup leaves a file that changed while it was read: to the watch.
    const listing = { listedAt: data.listing?.listedAt ?? 0n, complete: false };
    const live = keepLive(
      engine,
      { ...data, listing },
      { localData: folder, localDataPollSeconds: 1, log: logger() },
    );
    closers.push(async () => live?.stop());
    const app = await serviceApp(configFrom({ auth: { apiKeys: [API_KEY] } }), {
      engine: { ...engine, ...(live?.loadedThrough && { loadedThrough: live.loadedThrough }) },
    });
    closers.push(() => app.close());
    const ready = await app.inject("/ready");
    expect(ready.statusCode).toBe(503);
    expect(ready.json().error.code).toBe("not_ready");
    // /metrics shows the watermark: nothing is known loaded while startup's file waits.
    const watermark = async () => {
      const { body } = await app.inject({ url: "/metrics", headers: { "x-api-key": API_KEY } });
      return Number(/^query_service_data_watermark_seconds (\S+)$/m.exec(body)?.[1]);
    };
    expect(await watermark()).toBe(0);
    const loadedAfter = Date.now() / 1000;
    // Loaded at the watch's second look, the file unchanged since its first.
    await vi.waitFor(async () => expect((await app.inject("/ready")).statusCode).toBe(200), {
      timeout: 10_000,
    });
    expect(await count("function_edge_logs")).toBe(5);
    // The instant of the look that found every file loaded, in Unix seconds.
    const loadedThrough = await watermark();
    expect(loadedThrough).toBeGreaterThan(loadedAfter);
    expect(loadedThrough).toBeLessThanOrEqual(Date.now() / 1000);
  });

  it("still stops startup on a bad file, as before the watch", async () => {
    await writeFile(join(folder, "function_edge_logs.ndjson"), '{"id":\n');
    const threads = (await query("SELECT current_setting('threads') AS n"))[0]?.n;
    await expect(loadData(engine, { localData: folder })).rejects.toBeInstanceOf(DataFileError);
    expect((await query("SELECT current_setting('threads') AS n"))[0]?.n).toBe(threads);
  });
});

describe("live demo data", () => {
  /** Whether every derived table holds exactly what its source rows give. */
  async function derivedConsistent(): Promise<boolean> {
    const [row] = await query(`SELECT
      (SELECT count(*) FROM (SELECT unnest(metadata) FROM function_edge_logs WHERE timestamp IS NOT NULL))
        = (SELECT count(*) FROM function_invocations)
      AND (SELECT count(*) FROM (SELECT unnest(m.request) FROM (SELECT unnest(metadata) AS m FROM edge_logs WHERE timestamp IS NOT NULL)))
        = (SELECT count(*) FROM edge_requests)
      AND NOT EXISTS (
        SELECT date_trunc('hour', timestamp) AS hour, count(*) FILTER (WHERE counted) AS n
        FROM function_invocations GROUP BY 1
        EXCEPT SELECT hour, sum(invocations) FROM function_invocation_hours GROUP BY 1)
      AND NOT EXISTS (
        SELECT hour, sum(invocations) FROM function_invocation_hours GROUP BY 1
        EXCEPT SELECT date_trunc('hour', timestamp), count(*) FILTER (WHERE counted)
        FROM function_invocations GROUP BY 1)
      AND NOT EXISTS (
        SELECT date_trunc('hour', timestamp) AS hour, count(execution_time_ms) AS n
        FROM function_invocations GROUP BY 1 HAVING n > 0
        EXCEPT SELECT hour, sum(len(execution_times)) FROM function_invocation_values GROUP BY 1)
      AND NOT EXISTS (
        SELECT hour, sum(len(execution_times)) FROM function_invocation_values GROUP BY 1
        EXCEPT SELECT date_trunc('hour', timestamp), count(execution_time_ms)
        FROM function_invocations GROUP BY 1 HAVING count(execution_time_ms) > 0)
      AND NOT EXISTS (
        SELECT date_trunc('hour', timestamp) AS hour, count(*) AS n FROM edge_requests GROUP BY 1
        EXCEPT SELECT hour, sum(requests) FROM edge_request_hours GROUP BY 1)
      AND NOT EXISTS (
        SELECT hour, sum(requests) FROM edge_request_hours GROUP BY 1
        EXCEPT SELECT date_trunc('hour', timestamp), count(*) FROM edge_requests GROUP BY 1)
      AS consistent`);
    return row?.consistent === true;
  }

  const span = async () =>
    (
      await query(
        "SELECT epoch_us(min(timestamp)) AS first, epoch_us(max(timestamp)) AS last, count(*) AS n FROM edge_logs",
      )
    )[0] as { first: number; last: number; n: number };

  it("adds the rows of the time since the last tick and drops those older than 7 days", async () => {
    const data = await loadData(engine, { now: NOW });
    let clock = NOW;
    const feed = feedDemoData(engine, {
      since: data.anchor ?? NOW,
      intervalMs: NEVER,
      now: () => clock,
      log: logger(),
    });
    closers.push(() => feed.stop());
    const before = await span();
    clock = NOW + 2n * DAY + 1234n;
    await feed.tick();
    const after = await span();
    expect(BigInt(after.first)).toBeGreaterThanOrEqual(clock - 7n * DAY);
    expect(BigInt(after.last)).toBeGreaterThan(NOW);
    expect(BigInt(after.last)).toBeLessThanOrEqual(clock);
    // Two days in, two days out, at the same rate: about as many rows (2 days ≈ 28 600 rows).
    expect(Math.abs(after.n - before.n)).toBeLessThan(before.n * 0.05);
    expect(await derivedConsistent()).toBe(true);
  });

  it("ticks on its own every interval", async () => {
    const data = await loadData(engine, { now: NOW });
    let clock = NOW;
    const feed = feedDemoData(engine, {
      since: data.anchor ?? NOW,
      intervalMs: 20,
      // An hour of demo time per tick.
      now: () => {
        clock += HOUR;
        return clock;
      },
      log: logger(),
    });
    closers.push(() => feed.stop());
    const before = await span();
    await vi.waitFor(async () => expect(BigInt((await span()).last)).toBeGreaterThan(NOW + HOUR), {
      timeout: 10_000,
    });
    await feed.stop();
    expect((await span()).first).toBeGreaterThan(before.first);
    expect(await derivedConsistent()).toBe(true);
  });
});
