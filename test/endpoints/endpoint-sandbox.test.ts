// What an operator's endpoint SQL can reach on the embedded engine, tried from outside as an
// attacker or a careless operator would (`npm start`, ENDPOINTS_DIR): no file outside the data
// folders (refused at startup when the SQL names it, failing at run time without the file's
// content when the caller names it), no setting it could change, and no statement but one SELECT
// by DuckDB's own parser, at startup and on SIGHUP.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { runShell } from "../support/doc-commands.ts";
import { writeEndpoint } from "../support/operator-endpoint.ts";
import { start, startAndExit } from "../support/service-process.ts";

const KEY = "sandbox-key-0123456789abcdef";
const HOSTNAME = readFileSync("/etc/hostname", "utf8").trim();

const get = (baseUrl: string, path: string) =>
  fetch(`${baseUrl}${path}`, { headers: { "X-API-KEY": KEY } });

describe("an endpoint's SQL naming a file outside the data folders", () => {
  it("is refused at startup, one line naming its file and DuckDB's permission error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-endpoints-"));
    writeEndpoint(dir, "host.hostname", {
      sql: "SELECT content AS text FROM read_text('/etc/hostname')",
    });
    writeEndpoint(dir, "host.passwd", {
      sql: "SELECT column0 AS text FROM read_csv('/etc/passwd', header = false)",
    });
    writeEndpoint(dir, "host.files", { sql: "SELECT file AS text FROM glob('/etc/*')" });
    const { code, stderr } = await startAndExit({ API_KEYS: KEY, ENDPOINTS_DIR: dir });
    expect(code).toBe(1);
    const lines = stderr.trimEnd().split("\n");
    expect(lines[0]).toBe("Configuration error: the endpoint catalog has 3 problem(s):");
    expect(lines.slice(1).sort()).toEqual([
      expect.stringMatching(
        /host\.files\/duckdb\.sql: DuckDB: Permission Error: Cannot access file "\/etc\/\*"/,
      ),
      expect.stringMatching(
        /host\.hostname\/duckdb\.sql: DuckDB: Permission Error: .*\/etc\/hostname/,
      ),
      expect.stringMatching(/host\.passwd\/duckdb\.sql: DuckDB: Permission Error: .*\/etc\/passwd/),
    ]);
    expect(stderr).not.toContain("root:x:0:0");
  });
});

describe("the engine an endpoint's SQL runs on", () => {
  it("reads no file the caller names (502 without its content) and shows its settings locked", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-endpoints-"));
    writeEndpoint(dir, "host.file", {
      sql: "SELECT content AS text FROM read_text($file)",
      params: { file: { type: "string", required: true, description: "a path" } },
    });
    writeEndpoint(dir, "engine.settings", {
      sql: `SELECT name, value FROM duckdb_settings()
        WHERE name IN ('enable_external_access', 'autoinstall_known_extensions',
          'autoload_known_extensions', 'lock_configuration')
        ORDER BY name`,
      columns: [
        { name: "name", type: "STRING" },
        { name: "value", type: "STRING" },
      ],
    });
    // A file beside the endpoint folders, as a keys file or the cursor secret is beside the service.
    const secretFile = join(dir, "secret.json");
    const SECRET = "a-secret-only-the-service-reads";
    writeFileSync(secretFile, JSON.stringify({ secret: SECRET }));
    const { baseUrl } = await start({ API_KEYS: KEY, ENDPOINTS_DIR: dir });
    for (const file of ["/etc/hostname", "/etc/passwd", secretFile]) {
      const answer = await get(
        baseUrl,
        `/api/endpoints/host.file?file=${encodeURIComponent(file)}`,
      );
      const body = await answer.text();
      expect({ file, status: answer.status }).toEqual({ file, status: 502 });
      expect(JSON.parse(body).error.code).toBe("engine_error");
      expect(body).not.toContain(HOSTNAME);
      expect(body).not.toContain(SECRET);
    }
    const settings = await get(baseUrl, "/api/endpoints/engine.settings");
    expect(settings.status).toBe(200);
    expect(await settings.json()).toEqual({
      result: [
        { name: "autoinstall_known_extensions", value: "false" },
        { name: "autoload_known_extensions", value: "false" },
        { name: "enable_external_access", value: "false" },
        { name: "lock_configuration", value: "true" },
      ],
    });
  });
});

describe("the data folders", () => {
  it("are LOCAL_DATA's (a glob's folder before its pattern): read there, and nowhere beside it", async () => {
    const root = mkdtempSync(join(tmpdir(), "sandbox-data-"));
    const exports = join(root, "exports");
    mkdirSync(exports);
    const record = {
      id: "r1",
      timestamp: new Date(Date.now() - 60_000).toISOString(),
      project: "p",
    };
    writeFileSync(join(exports, "edge_logs-0.ndjson"), `${JSON.stringify(record)}\n`);
    writeFileSync(join(exports, "notes.txt"), "beside the exports");
    writeFileSync(join(root, "secret.txt"), "above the exports");
    const dir = mkdtempSync(join(tmpdir(), "sandbox-endpoints-"));
    writeEndpoint(dir, "host.file", {
      sql: "SELECT content AS text FROM read_text($file)",
      params: { file: { type: "string", required: true, description: "a path" } },
    });
    const { baseUrl } = await start({
      API_KEYS: KEY,
      ENDPOINTS_DIR: dir,
      LOCAL_DATA: join(exports, "edge_logs-*.ndjson"),
    });
    const logs = await get(baseUrl, "/api/endpoints/logs.all?project=p&project_tier=FREE");
    expect(((await logs.json()) as { result: { id: string }[] }).result.map((r) => r.id)).toEqual([
      "r1",
    ]);
    const read = (file: string) =>
      get(baseUrl, `/api/endpoints/host.file?file=${encodeURIComponent(file)}`);
    expect(await (await read(join(exports, "notes.txt"))).json()).toEqual({
      result: [{ text: "beside the exports" }],
    });
    for (const file of [join(root, "secret.txt"), join(exports, "..", "secret.txt")]) {
      const answer = await read(file);
      expect({ file, status: answer.status }).toEqual({ file, status: 502 });
      expect(await answer.text()).not.toContain("above the exports");
    }
  });
});

describe("IMPORT DATABASE as an endpoint's SQL", () => {
  /** A folder IMPORT DATABASE reads: its schema.sql holds `statement`. */
  function importable(statement: string): string {
    const folder = mkdtempSync(join(tmpdir(), "sandbox-import-"));
    writeFileSync(join(folder, "schema.sql"), statement);
    writeFileSync(join(folder, "load.sql"), "");
    return folder;
  }

  it("is refused at startup, though the file it imports holds a SELECT", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-endpoints-"));
    const folder = importable("SELECT 'imported' AS text;");
    writeEndpoint(dir, "db.import", { sql: `IMPORT DATABASE '${folder}'` });
    const { code, stderr } = await startAndExit({ API_KEYS: KEY, ENDPOINTS_DIR: dir });
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /db\.import\/duckdb\.sql: holds a statement other than SELECT, not one read-only query \(SELECT\)\n/,
    );
  });

  it("is refused on SIGHUP, the endpoint kept as it was, and the file it names never runs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-endpoints-"));
    const folder = writeEndpoint(dir, "db.import", { sql: "SELECT 'before' AS text" });
    const service = await start({ API_KEYS: KEY, ENDPOINTS_DIR: dir });
    const answer = async () => (await get(service.baseUrl, "/api/endpoints/db.import")).json();
    expect(await answer()).toEqual({ result: [{ text: "before" }] });

    const imported = importable("SELECT 'imported' AS text;");
    writeFileSync(join(folder, "duckdb.sql"), `IMPORT DATABASE '${imported}'`);
    service.child.kill("SIGHUP");
    await vi.waitFor(() => expect(service.stdout()).toContain("served before are kept"));
    expect(service.stdout()).toMatch(
      /db\.import\/duckdb\.sql: holds a statement other than SELECT/,
    );

    // What the folder holds next is a write: the endpoint never runs it.
    const marker = join(imported, "written.csv");
    writeFileSync(join(imported, "schema.sql"), `COPY (SELECT 1 AS n) TO '${marker}';`);
    expect(await answer()).toEqual({ result: [{ text: "before" }] });
    expect(existsSync(marker)).toBe(false);
  });
});

describe("npm run sql:check on DuckDB files", () => {
  it("checks them as startup does: one SELECT by DuckDB's parser, nothing run", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-sql-check-"));
    const written = join(dir, "written.csv");
    const importable = join(dir, "importable");
    mkdirSync(importable);
    writeFileSync(join(importable, "schema.sql"), "SELECT 1 AS n;");
    writeFileSync(join(importable, "load.sql"), "");
    const files = {
      "copy.duckdb.sql": `COPY (SELECT 1 AS n) TO '${written}'`,
      "import.duckdb.sql": `IMPORT DATABASE '${importable}'`,
      "query.duckdb.sql": "SELECT count(*) AS n FROM edge_logs WHERE project = $project",
    };
    for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
    const paths = Object.keys(files).map((file) => join(dir, file));
    const { code, stdout, stderr } = await runShell(`npm run sql:check -- ${paths.join(" ")}`, {});
    expect(code, `${stdout}\n${stderr}`).toBe(1);
    expect(stderr).toMatch(/copy\.duckdb\.sql: holds a statement other than SELECT, not one/);
    expect(stderr).toMatch(/import\.duckdb\.sql: holds a statement other than SELECT, not one/);
    expect(stdout).toMatch(/query\.duckdb\.sql: ok\n/);
    expect(existsSync(written)).toBe(false);
  });
});
