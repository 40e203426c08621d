// An operator's endpoints (ENDPOINTS_DIR), served by the service as `npm start` runs it: checked at
// startup and on SIGHUP by the engine itself (one read-only query per SQL file), every problem one
// line naming the file, a bad change on SIGHUP keeping the endpoints served before.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it, vi } from "vitest";
import { caseEngine } from "../../src/endpoints/cases/case-engine.ts";
import { LiveCatalog } from "../../src/endpoints/catalog.ts";
import { BUILT_IN_ENDPOINTS, loadCatalog } from "../../src/endpoints/load-catalog.ts";
import { servedOn } from "../../src/endpoints/served-catalog.ts";
import { startBigQueryStandIn } from "../support/bigquery-standin.ts";
import { codeBlocks, runShell, shellCommands } from "../support/doc-commands.ts";
import { engineOn } from "../support/service.ts";
import { start, startAndExit } from "../support/service-process.ts";

const KEY = "operator-key-0123456789abcdef";
const EXAMPLE = new URL("../../examples/endpoints/auth.failures-per-hour/", import.meta.url)
  .pathname;
const NAME = "auth.failures-per-hour";

/** A fresh ENDPOINTS_DIR holding the docs' example endpoint, its files changed by `change`. */
function operatorDir(change: Record<string, string | null> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "endpoints-dir-"));
  cpSync(EXAMPLE, join(dir, NAME), { recursive: true });
  for (const [file, text] of Object.entries(change)) {
    if (text === null) rmSync(join(dir, NAME, file));
    else writeFileSync(join(dir, NAME, file), text);
  }
  return dir;
}

const get = (baseUrl: string, path: string) =>
  fetch(`${baseUrl}${path}`, { headers: { "X-API-KEY": KEY } });

describe("ENDPOINTS_DIR", () => {
  it("serves an operator's endpoint beside the built-in ones: answer, listing and OpenAPI path", async () => {
    const { baseUrl } = await start({ API_KEYS: KEY, ENDPOINTS_DIR: operatorDir() });
    const answer = await get(baseUrl, `/api/endpoints/${NAME}?project=default&period=week`);
    expect(answer.status).toBe(200);
    const { result } = (await answer.json()) as { result: { hour: string; failures: number }[] };
    // The demo data answers some sign-ins with 401.
    expect(result.length).toBeGreaterThan(0);
    expect(Object.keys(result[0] ?? {})).toEqual(["hour", "failures"]);
    const listing = (await (await get(baseUrl, "/api/endpoints")).json()) as {
      result: { name: string }[];
    };
    expect(listing.result.map((entry) => entry.name)).toContain(NAME);
    const document = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(document.paths)).toContain(`/api/endpoints/${NAME}`);
    expect((await get(baseUrl, `/api/endpoints/${NAME}?project=default&period=month`)).status).toBe(
      400,
    );
  });

  it("refuses to start with SQL that writes or holds two statements, one line per file", async () => {
    const dir = operatorDir({
      "duckdb.sql": "DELETE FROM edge_logs WHERE project = $project AND timestamp >= $window_start",
    });
    const second = join(dir, "auth.copy");
    cpSync(join(dir, NAME), second, { recursive: true });
    const definition = readFileSync(join(second, "endpoint.yaml"), "utf8")
      .replace(`name: ${NAME}`, "name: auth.copy")
      .replace(/^id: .*$/m, "id: 9d6a1b2c-3e4f-4a5b-8c7d-0e1f2a3b4c5d");
    writeFileSync(join(second, "endpoint.yaml"), definition);
    writeFileSync(
      join(second, "duckdb.sql"),
      "SELECT now() AS hour, 1 AS failures WHERE $project <> '' AND $window_start IS NOT NULL; DROP TABLE edge_logs",
    );
    const { code, stderr } = await startAndExit({ API_KEYS: KEY, ENDPOINTS_DIR: dir });
    expect(code).toBe(1);
    const lines = stderr.trimEnd().split("\n");
    expect(lines[0]).toBe("Configuration error: the endpoint catalog has 2 problem(s):");
    expect(lines.slice(1).sort()).toEqual([
      expect.stringMatching(
        /auth\.copy\/duckdb\.sql: holds a statement other than SELECT, not one read-only query \(SELECT\)$/,
      ),
      expect.stringMatching(
        /auth\.failures-per-hour\/duckdb\.sql: holds a statement other than SELECT, not one read-only query \(SELECT\)$/,
      ),
    ]);
  });

  it("refuses to start when the SQL's columns are not the declared ones, naming file, column and types", async () => {
    const sql = readFileSync(join(EXAMPLE, "duckdb.sql"), "utf8");
    const dir = operatorDir({
      "duckdb.sql": sql.replace("count(*) AS failures", "CAST(count(*) AS VARCHAR) AS failures"),
    });
    const { code, stderr } = await startAndExit({ API_KEYS: KEY, ENDPOINTS_DIR: dir });
    expect(code).toBe(1);
    expect(stderr.trimEnd().split("\n")).toEqual([
      "Configuration error: the endpoint catalog has 1 problem(s):",
      expect.stringMatching(
        /auth\.failures-per-hour\/duckdb\.sql: its result is not the row endpoint\.yaml declares in columns: failures is VARCHAR, STRING on the wire, which cannot be the declared INT64$/,
      ),
    ]);
  });

  it("says what differs from the declared columns: one missing, one not declared, the order, a type", async () => {
    const problems = async (sql: string) => {
      const dir = operatorDir({ "duckdb.sql": sql });
      const engine = await caseEngine({}, () => 0n);
      try {
        const loaded = loadCatalog([BUILT_IN_ENDPOINTS, dir]);
        return (await servedOn(loaded, engine, (endpoint) => endpoint.name === NAME)).problems;
      } finally {
        await engine.close();
      }
    };
    const from = "FROM edge_logs WHERE project = $project AND timestamp >= $window_start";
    const said = (clauses: string) => [
      expect.stringMatching(
        new RegExp(
          `auth\\.failures-per-hour/duckdb\\.sql: its result is not the row endpoint\\.yaml declares in columns: ${clauses}$`,
        ),
      ),
    ];
    expect(await problems(`SELECT now() AS hour, 1 AS failure_count ${from}`)).toEqual(
      said(
        "gives no failures, declared INT64; gives failure_count \\(INTEGER, INT64 on the wire\\), which is not declared",
      ),
    );
    expect(await problems(`SELECT 1 AS failures, now() AS hour ${from}`)).toEqual(
      said("gives the columns in the order failures, hour; declared hour, failures"),
    );
    // A local TIMESTAMP is written as a DATETIME, without the zone a TIMESTAMP has.
    expect(await problems(`SELECT now()::TIMESTAMP AS hour, 1.5 AS failures ${from}`)).toEqual(
      said(
        "hour is TIMESTAMP, DATETIME on the wire, which cannot be the declared TIMESTAMP; failures is DECIMAL\\(2,1\\), FLOAT64 on the wire, which cannot be the declared INT64",
      ),
    );
    // What the wire format makes the same: any integer width, a time written as text.
    expect(
      await problems(`SELECT strftime(now(), '%Y') AS hour, count(*)::HUGEINT AS failures ${from}`),
    ).toEqual([]);
  });

  it("says at startup which endpoint has no SQL for the engine, and does not serve it", async () => {
    const dir = operatorDir({ "duckdb.sql": null });
    const service = await start({ API_KEYS: KEY, ENDPOINTS_DIR: dir });
    expect(service.stdout()).toContain(`no duckdb.sql, so ${NAME} is not served on duckdb`);
    expect((await get(service.baseUrl, `/api/endpoints/${NAME}?project=default`)).status).toBe(404);
    expect(
      (await get(service.baseUrl, "/api/endpoints/logs.all?project=default&project_tier=FREE"))
        .status,
    ).toBe(200);
  });

  it("on SIGHUP keeps serving what it served when a change is bad, and serves a good one", async () => {
    const dir = operatorDir();
    const service = await start({ API_KEYS: KEY, ENDPOINTS_DIR: dir });
    const status = async (name: string) =>
      (await get(service.baseUrl, `/api/endpoints/${name}?project=default`)).status;
    const listed = async () => {
      const { result } = (await (await get(service.baseUrl, "/api/endpoints")).json()) as {
        result: { name: string; params: { name: string }[] }[];
      };
      return result.map((entry) => entry.name);
    };
    expect(await status(NAME)).toBe(200);
    expect(await listed()).toContain(NAME);

    const definition = join(dir, NAME, "endpoint.yaml");
    const good = readFileSync(definition, "utf8");
    writeFileSync(definition, good.replace("max_rows: 200", "max_rows: lots"));
    service.child.kill("SIGHUP");
    await vi.waitFor(() => expect(service.stdout()).toContain("served before are kept"));
    expect(service.stdout()).toMatch(/endpoint\.yaml: max_rows: [^"]+"/);
    expect(await status(NAME)).toBe(200);
    writeFileSync(definition, good);

    // SQL whose result is not the declared row is refused on SIGHUP as at startup.
    const sqlFile = join(dir, NAME, "duckdb.sql");
    const sql = readFileSync(sqlFile, "utf8");
    writeFileSync(sqlFile, sql.replace("AS failures", "AS failure_count"));
    service.child.kill("SIGHUP");
    await vi.waitFor(() =>
      expect(service.stdout()).toMatch(
        /duckdb\.sql: its result is not the row endpoint\.yaml declares in columns: gives no failures/,
      ),
    );
    expect(await status(NAME)).toBe(200);
    writeFileSync(sqlFile, sql);

    // Fixed, and renamed: the old name goes, the new one is served, with no restart.
    rmSync(join(dir, NAME), { recursive: true });
    cpSync(EXAMPLE, join(dir, "auth.failures"), { recursive: true });
    writeFileSync(
      join(dir, "auth.failures", "endpoint.yaml"),
      good.replace(`name: ${NAME}`, "name: auth.failures"),
    );
    service.child.kill("SIGHUP");
    await vi.waitFor(() => expect(service.stdout()).toMatch(/SIGHUP: serving \d+ endpoints/));
    expect(await status("auth.failures")).toBe(200);
    expect(await status(NAME)).toBe(404);
    // The listing (and so the explorer and `log-query endpoints`) reads the new catalog too.
    expect(await listed()).toContain("auth.failures");
    expect(await listed()).not.toContain(NAME);
    expect(service.child.exitCode).toBeNull();
  });
});

describe("a changed endpoint", () => {
  it("answers from its new SQL after a SIGHUP, never from an answer cached before it", async () => {
    const dir = operatorDir();
    const service = await start({ API_KEYS: KEY, ENDPOINTS_DIR: dir });
    const path = `/api/endpoints/${NAME}?project=default&period=week`;
    const ask = async () => {
      const answer = await get(service.baseUrl, path);
      const { result } = (await answer.json()) as { result: { failures: number }[] };
      return { cache: answer.headers.get("cache-status"), failures: result.map((r) => r.failures) };
    };
    const before = await ask();
    expect((await ask()).cache).toMatch(/; hit/);
    expect(before.failures.length).toBeGreaterThan(0);

    const sql = join(dir, NAME, "duckdb.sql");
    writeFileSync(
      sql,
      readFileSync(sql, "utf8").replace("count(*) AS failures", "count(*) * 1000 AS failures"),
    );
    service.child.kill("SIGHUP");
    await vi.waitFor(() => expect(service.stdout()).toMatch(/SIGHUP: serving \d+ endpoints/));
    const after = await ask();
    expect(after.cache).not.toMatch(/; hit/);
    expect(after.failures).toEqual(before.failures.map((failures) => failures * 1000));
  });
});

describe("an operator's BigQuery SQL", () => {
  it("is refused by BigQuery's dry run when it is not one query, naming the file", async () => {
    const dir = operatorDir({
      "bigquery.sql":
        "DELETE FROM edge_logs WHERE project = @project AND timestamp > @window_start",
    });
    const standIn = await startBigQueryStandIn({
      googleSqlPort: inject("googleSqlPort"),
      now: "2026-01-15T12:00:00Z",
    });
    try {
      const engine = engineOn(standIn);
      const loaded = loadCatalog([BUILT_IN_ENDPOINTS, dir]);
      const served = await servedOn(loaded, engine, (endpoint) => endpoint.name === NAME);
      expect(served.problems).toEqual([
        expect.stringMatching(
          /auth\.failures-per-hour\/bigquery\.sql: is a DELETE statement, not one read-only query \(SELECT\)$/,
        ),
      ]);
      // The dry run's schema is the result's: its columns must be the declared ones.
      const bigQuerySql = readFileSync(join(EXAMPLE, "bigquery.sql"), "utf8");
      const renamed = operatorDir({
        "bigquery.sql": bigQuerySql.replace("AS failures", "AS failure_count"),
      });
      const mismatched = await servedOn(
        loadCatalog([BUILT_IN_ENDPOINTS, renamed]),
        engine,
        (endpoint) => endpoint.name === NAME,
      );
      expect(mismatched.problems).toEqual([
        expect.stringMatching(
          /auth\.failures-per-hour\/bigquery\.sql: its result is not the row endpoint\.yaml declares in columns: gives no failures, declared INT64; gives failure_count \(INT64\), which is not declared$/,
        ),
      ]);
      // The example's own SQL passes, and the built-in endpoints are served as they are.
      const example = await servedOn(
        loadCatalog([BUILT_IN_ENDPOINTS, operatorDir()]),
        engine,
        () => true,
      );
      expect(example.problems).toEqual([]);
      expect(new LiveCatalog(example.catalog).find(NAME)?.name).toBe(NAME);
      expect(standIn.requests.some((request) => request.path.endsWith("/jobs"))).toBe(true);
    } finally {
      await standIn.close();
    }
  });
});

describe("docs/endpoints.md's walk-through", () => {
  it("shows the example's files as they are, and its cases pass run as written", async () => {
    const shown = codeBlocks("docs/endpoints.md")
      .filter((block) => block.lang === "yaml" || block.lang === "sql")
      .map((block) => block.text);
    for (const file of ["endpoint.yaml", "bigquery.sql", "duckdb.sql"]) {
      expect(shown, file).toContain(readFileSync(join(EXAMPLE, file), "utf8").trimEnd());
    }
    const [command] = shellCommands().filter(({ text }) =>
      text.startsWith("npm run test:endpoints -- "),
    );
    const { code, stdout, stderr } = await runShell(command?.text as string, {});
    expect(code, stderr).toBe(0);
    expect(stdout).toContain("4 cases passed, 0 failed");
  }, 60_000);
});
