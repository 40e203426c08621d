// The endpoints' test cases (endpoints/<name>/cases.yaml) pass, run as an operator runs them:
// `npm run test:endpoints`, as docs/endpoints.md writes it. A failing case is reported with its file,
// its name and what differs, and fails the command; so does a bad cases file, one line per problem
// naming the file and the field. endpoints/cases.schema.json is the format's zod schema: this file
// writes it (`npx vitest run test/endpoints/cases.test.ts -u`), and fails in CI when it is stale.
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { caseFileSchema, readCaseFile } from "../../src/endpoints/cases/case-file.ts";
import { rowsDiff } from "../../src/endpoints/cases/rows-diff.ts";
import { MAX_ENDPOINT_FILE_BYTES } from "../../src/endpoints/load-catalog.ts";
import { codeBlocks, runShell, shellCommands } from "../support/doc-commands.ts";
import { writeEndpoint } from "../support/operator-endpoint.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BUILT_IN = join(ROOT, "endpoints");

/** Writes `files` (path → text) under a new temporary folder, and returns the folder. */
function folderOf(files: Record<string, string>): string {
  const folder = mkdtempSync(join(tmpdir(), "endpoint-cases-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(folder, path, ".."), { recursive: true });
    writeFileSync(join(folder, path), text);
  }
  return folder;
}

describe("npm run test:endpoints", () => {
  it("passes every case of the built-in endpoints, run as the docs write it", async () => {
    const [command] = shellCommands().filter(
      ({ file, text }) => file === "docs/endpoints.md" && text === "npm run test:endpoints",
    );
    expect(command?.text).toBe("npm run test:endpoints");
    const { code, stdout, stderr } = await runShell(command?.text as string, { ENDPOINTS_DIR: "" });
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    const folders = readdirSync(BUILT_IN, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && entry.name !== "fixtures")
      .map((entry) => entry.name);
    expect(folders.sort()).toEqual(["functions.invocation-stats", "logs.all", "usage.api-counts"]);
    const expected = folders.flatMap((name) => {
      const read = readCaseFile(join(BUILT_IN, name, "cases.yaml"));
      if (!("cases" in read)) throw new Error(read.problems.join("\n"));
      return read.cases.map((entry) => `ok    endpoints/${name}/cases.yaml › ${entry.name}`);
    });
    const passed = stdout.split("\n").filter((line) => line.startsWith("ok "));
    expect(passed.sort()).toEqual(expected.sort());
  }, 120_000);

  it("names the file, the case and what differs for each failure, and exits non-zero", async () => {
    const folder = folderOf({
      // The shared endpoints/fixtures/edge_logs.ndjson: beta's one request in the last hour is a
      // /rest one at 11:55, alpha's are /rest, /auth, /rest and /auth and /storage, /realtime.
      "usage.api-counts/cases.yaml": `
- name: right
  now: "2026-01-15T12:00:00Z"
  fixtures: { edge_logs: edge_logs.ndjson }
  params: { project: beta, interval: hourly }
  expect: { status: 200, rows: [{ timestamp: "2026-01-15T11:00:00", total_rest_requests: 1, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 }] }
- name: a wrong field
  now: "2026-01-15T12:00:00Z"
  fixtures: { edge_logs: edge_logs.ndjson }
  params: { project: alpha, interval: hourly }
  expect: { status: 200, rows: [{ timestamp: "2026-01-15T11:00:00", total_rest_requests: 2, total_storage_requests: 1, total_auth_requests: 3, total_realtime_requests: 1 }] }
- name: a row too many
  now: "2026-01-15T12:00:00Z"
  fixtures: { edge_logs: edge_logs.ndjson }
  params: { project: beta, interval: hourly }
  expect: { status: 200, rows: [] }
- name: a wrong count
  now: "2026-01-15T12:00:00Z"
  fixtures: { edge_logs: edge_logs.ndjson }
  params: { project: alpha, interval: minutely }
  expect: { status: 200, count: 3 }
- name: a wrong status
  now: "2026-01-15T12:00:00Z"
  params: { project: alpha, interval: weekly }
  expect: { status: 200, count: 0 }
- name: a wrong error
  now: "2026-01-15T12:00:00Z"
  params: { project: alpha, interval: weekly }
  expect: { status: 400, error: endpoint_not_found }
- name: a fixture nowhere
  now: "2026-01-15T12:00:00Z"
  fixtures: { edge_logs: nowhere.ndjson }
  params: { project: alpha, interval: hourly }
  expect: { status: 200, count: 0 }
`,
      "functions.invocation-stats/cases.yaml": `
- name: a bad fixture file
  now: "2026-01-15T12:00:00Z"
  fixtures: { function_edge_logs: rows.ndjson }
  params: { project: alpha, interval: 1hr }
  expect: { status: 200, count: 0 }
`,
      "functions.invocation-stats/rows.ndjson":
        '{"id":"f1","timestamp":"2026-01-15T11:10:00Z"}\n{"id":\n',
      "logs.all/cases.yaml": `
- name: twice
  now: yesterday
  expect: { status: 200, count: 1, rows: [] }
- name: twice
  now: "2026-01-15T12:00:00Z"
  expect: { status: two hundred }
`,
      "no.such-endpoint/cases.yaml": `
- name: any
  now: "2026-01-15T12:00:00Z"
  expect: { status: 200 }
`,
    });
    const at = (name: string) => relative(ROOT, join(folder, name, "cases.yaml"));
    const folders = [
      "usage.api-counts",
      "functions.invocation-stats",
      "logs.all",
      "no.such-endpoint",
    ];
    const { code, stdout, stderr } = await runShell(
      `npm run test:endpoints -- ${folders.map((name) => join(folder, name)).join(" ")}`,
      {},
    );
    expect(code, `${stdout}\n${stderr}`).toBe(1);
    expect(stdout).toContain(`ok    ${at("usage.api-counts")} › right\n`);
    const usage = at("usage.api-counts");
    expect(stderr).toContain(
      [
        `FAIL  ${usage} › a wrong field`,
        "        row 1: total_auth_requests: expected 3, got 2",
        `FAIL  ${usage} › a row too many`,
        "        expected 0 rows, got 1",
        `        row 1: not expected: {"timestamp":"2026-01-15T11:00:00","total_rest_requests":1,"total_storage_requests":0,"total_auth_requests":0,"total_realtime_requests":0}`,
        `FAIL  ${usage} › a wrong count`,
        "        count: expected 3, got 4",
        `FAIL  ${usage} › a wrong status`,
      ].join("\n"),
    );
    expect(stderr).toMatch(/^ {8}status: expected 200, got 400 \(invalid_params: interval: .*\)$/m);
    expect(stderr).toContain(
      `FAIL  ${usage} › a wrong error\n        error: expected endpoint_not_found, got invalid_params\n`,
    );
    expect(stderr).toMatch(
      /FAIL {2}.* › a fixture nowhere\n {8}fixtures\.edge_logs: no file nowhere\.ndjson in /,
    );
    // The operator's file and line, not the copy the loader read.
    const invocations = relative(ROOT, join(folder, "functions.invocation-stats/rows.ndjson"));
    expect(stderr).toMatch(
      new RegExp(
        `› a bad fixture file\\n {8}fixtures: .*${invocations.replaceAll(".", "\\.")}, line 2: `,
      ),
    );
    const logs = at("logs.all");
    expect(stderr).toContain(
      [
        `${logs}: case 1 "twice": now: must be an ISO 8601 instant with a zone, e.g. 2026-01-15T12:00:00Z`,
        `${logs}: case 1 "twice": expect: give at most one of rows, count and error`,
      ].join("\n"),
    );
    expect(stderr).toMatch(new RegExp(`^${logs}: case 2 "twice": expect\\.status: .*number`, "m"));
    expect(stderr).toContain(
      `${at("no.such-endpoint")}: no endpoint is named no.such-endpoint, the name of its folder`,
    );
    expect(stdout).toContain("4 endpoint folders: 1 cases passed, 7 failed, 2 other problems");
  }, 120_000);

  it("runs no SQL `npm start` would refuse: a COPY … TO is named, and writes nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "endpoint-cases-"));
    const written = join(dir, "written.csv");
    writeEndpoint(dir, "disk.copy", {
      sql: `COPY (SELECT 'x' AS text) TO '${written}'`,
      files: {
        "cases.yaml": `
- name: any
  now: "2026-01-15T12:00:00Z"
  expect: { status: 200, count: 1 }
`,
      },
    });
    const { code, stdout, stderr } = await runShell(
      `npm run test:endpoints -- ${join(dir, "disk.copy")}`,
      {},
    );
    expect(code, `${stdout}\n${stderr}`).toBe(1);
    expect(stderr).toContain(
      `${relative(ROOT, join(dir, "disk.copy", "duckdb.sql"))}: holds a statement other than SELECT, not one read-only query (SELECT)`,
    );
    expect(existsSync(written)).toBe(false);
  }, 60_000);

  it("reaches a later page and a follow catch-up, and fails where they give other rows", async () => {
    const dir = mkdtempSync(join(tmpdir(), "endpoint-cases-"));
    const folder = join(dir, "edge.errors");
    cpSync(join(ROOT, "test/fixtures/endpoints/edge.errors"), folder, { recursive: true });
    // A "5xx" follow that sends every record: its window SQL lost the status filter.
    const window = join(folder, "window.duckdb.sql");
    writeFileSync(window, readFileSync(window, "utf8").replace("r.status_code >= 500", "TRUE"));
    const record = (id: string, minute: number, status: number) =>
      JSON.stringify({
        id,
        timestamp: `2026-01-15T11:${String(minute).padStart(2, "0")}:00Z`,
        event_message: `GET | ${status}`,
        project: "delta",
        metadata: [{ request: [], response: [{ status_code: status }] }],
      });
    writeFileSync(
      join(folder, "errors.ndjson"),
      [
        record("d1", 50, 500),
        record("d2", 40, 502),
        record("d3", 30, 200),
        record("d4", 20, 503),
        record("d5", 10, 504),
      ].join("\n"),
    );
    const row = (id: string, minute: number, status: number) =>
      `{ id: ${id}, timestamp: "2026-01-15T11:${minute}:00.000000Z", event_message: "GET | ${status}" }`;
    writeFileSync(
      join(folder, "cases.yaml"),
      `
- name: page 2 as the SQL gives it
  now: "2026-01-15T12:00:00Z"
  fixtures: { edge_logs: errors.ndjson }
  params: { project: delta, plan: FREE }
  page: 2
  expect: { status: 200, rows: [${row("d5", 10, 504)}] }
- name: page 2 with a row the SQL does not give
  now: "2026-01-15T12:00:00Z"
  fixtures: { edge_logs: errors.ndjson }
  params: { project: delta, plan: FREE }
  page: 2
  expect: { status: 200, rows: [${row("d5", 10, 504)}, ${row("d3", 30, 200)}] }
- name: a page after the last
  now: "2026-01-15T12:00:00Z"
  fixtures: { edge_logs: errors.ndjson }
  params: { project: delta, plan: FREE }
  page: 3
  expect: { status: 200, count: 0 }
- name: the catch-up sends the 5xx records only
  now: "2026-01-15T12:00:00Z"
  fixtures: { edge_logs: errors.ndjson }
  params: { project: delta, plan: FREE, last: 1h }
  follow: catch-up
  expect: { status: 200, rows: [${row("d5", 10, 504)}, ${row("d4", 20, 503)}, ${row("d2", 40, 502)}, ${row("d1", 50, 500)}] }
- name: a catch-up's parameters are checked as the stream's
  now: "2026-01-15T12:00:00Z"
  params: { project: delta, plan: FREE, to: "2026-01-15T11:00:00Z" }
  follow: catch-up
  expect: { status: 400, error: invalid_params }
`,
    );
    const { code, stdout, stderr } = await runShell(`npm run test:endpoints -- ${folder}`, {});
    expect(code, `${stdout}\n${stderr}`).toBe(1);
    const file = relative(ROOT, join(folder, "cases.yaml"));
    expect(stdout).toContain(`ok    ${file} › page 2 as the SQL gives it\n`);
    expect(stderr).toContain(
      `FAIL  ${file} › page 2 with a row the SQL does not give\n        expected 2 rows, got 1\n        row 2: missing; expected {"id":"d3",`,
    );
    expect(stderr).toContain(
      `FAIL  ${file} › a page after the last\n        page: page 2 links to no next page (no Link rel="next")\n`,
    );
    expect(stderr).toContain(
      `FAIL  ${file} › the catch-up sends the 5xx records only\n        expected 4 rows, got 5\n`,
    );
    expect(stdout).toContain(
      `ok    ${file} › a catch-up's parameters are checked as the stream's\n`,
    );
    expect(stdout).toContain("1 endpoint folders: 2 cases passed, 3 failed");
  }, 60_000);

  it("checks bigquery.sql too, on BigQuery's dry run, though the cases run on DuckDB", async () => {
    const dir = mkdtempSync(join(tmpdir(), "endpoint-cases-"));
    const cases = `
- name: any
  now: "2026-01-15T12:00:00Z"
  expect: { status: 200, count: 1 }
`;
    // A typo DuckDB never reads, and a BigQuery column under another name than the declared one.
    writeEndpoint(dir, "typo.bigquery", {
      sql: "SELECT 'x' AS text",
      files: { "cases.yaml": cases, "bigquery.sql": "SELECT 'x' AS text FORM edge_logs" },
    });
    writeEndpoint(dir, "renamed.bigquery", {
      sql: "SELECT 'x' AS text",
      files: { "cases.yaml": cases, "bigquery.sql": "SELECT 'x' AS words" },
    });
    const { code, stdout, stderr } = await runShell(
      `npm run test:endpoints -- ${join(dir, "typo.bigquery")} ${join(dir, "renamed.bigquery")}`,
      {},
    );
    expect(code, `${stdout}\n${stderr}`).toBe(1);
    expect(stderr).toContain(
      `${relative(ROOT, join(dir, "typo.bigquery", "bigquery.sql"))}: BigQuery's dry run: Syntax error: Expected end of input but got identifier "FORM"`,
    );
    expect(stderr).toContain(
      `${relative(ROOT, join(dir, "renamed.bigquery", "bigquery.sql"))}: its result is not the row endpoint.yaml declares in columns: gives no text, declared STRING; gives words (STRING), which is not declared`,
    );
    expect(stdout).toContain("2 endpoint folders: 0 cases passed, 0 failed, 2 other problems");
  }, 60_000);
});

describe("a failing case's diff", () => {
  it("names the rows missing or not expected and the fields that differ, in a few lines", () => {
    expect(rowsDiff([{ a: 1, b: [2] }], [{ b: [2], a: 1 }])).toEqual([]);
    expect(rowsDiff([{ a: 1, b: 2 }, { a: 3 }], [{ a: 1, b: 5, c: 0 }])).toEqual([
      "expected 2 rows, got 1",
      "row 1: b: expected 2, got 5",
      "row 1: c: expected no such field, got 0",
      'row 2: missing; expected {"a":3}',
    ]);
    const many = rowsDiff(
      [],
      Array.from({ length: 20 }, (_, i) => ({ i, text: "x".repeat(500) })),
    );
    expect(many).toHaveLength(9);
    expect(many.at(-1)).toBe("… and 13 more lines");
    expect(many[1]?.length).toBeLessThan(200);
  });
});

describe("the cases format", () => {
  it("is published as endpoints/cases.schema.json, the JSON Schema of its zod schema", async () => {
    const schema = z.toJSONSchema(caseFileSchema, { io: "input" });
    await expect(`${JSON.stringify(schema, null, 2)}\n`).toMatchFileSnapshot(
      "../../endpoints/cases.schema.json",
    );
  });

  it("names a case that has the name of another", () => {
    const folder = folderOf({
      "cases.yaml": '- { name: a, now: "2026-01-15T12:00:00Z", expect: { status: 200 } }\n'.repeat(
        2,
      ),
    });
    const file = join(folder, "cases.yaml");
    expect(readCaseFile(file)).toEqual({
      problems: [`${file}: case 2 "a": name: another case is named "a"`],
    });
  });

  it("takes a later page or a follow catch-up, not both in one case", () => {
    const folder = folderOf({
      "cases.yaml": [
        '- { name: a, now: "2026-01-15T12:00:00Z", page: 2, expect: { status: 200 } }',
        '- { name: b, now: "2026-01-15T12:00:00Z", follow: catch-up, expect: { status: 200 } }',
        '- { name: c, now: "2026-01-15T12:00:00Z", page: 2, follow: catch-up, expect: { status: 200 } }',
        '- { name: d, now: "2026-01-15T12:00:00Z", page: 1, follow: tail, expect: { status: 200 } }',
      ].join("\n"),
    });
    const file = join(folder, "cases.yaml");
    expect(readCaseFile(file)).toEqual({
      problems: [
        `${file}: case 3 "c": follow: give page or follow, not both`,
        `${file}: case 4 "d": page: Too small: expected number to be >=2`,
        `${file}: case 4 "d": follow: Invalid input: expected "catch-up"`,
      ],
    });
  });

  it("reads a cases.yaml with the endpoint files' bounds: one line naming the file", () => {
    const folder = folderOf({});
    const file = join(folder, "cases.yaml");
    mkdirSync(file);
    expect(readCaseFile(file)).toEqual({ problems: [`${file}: is not a regular file`] });
    rmSync(file, { recursive: true });
    execFileSync("mkfifo", [file]);
    expect(readCaseFile(file)).toEqual({ problems: [`${file}: is not a regular file`] });
    rmSync(file);
    writeFileSync(file, `# ${"x".repeat(MAX_ENDPOINT_FILE_BYTES)}\n`);
    expect(readCaseFile(file)).toEqual({
      problems: [
        `${file}: holds more than ${MAX_ENDPOINT_FILE_BYTES} bytes, the most an endpoint file may`,
      ],
    });
    // Anchors of anchors: nine levels of ten would expand to a billion names.
    const levels = Array.from({ length: 9 }, (_, level) =>
      level === 0
        ? "- &a0 [x, x, x, x, x, x, x, x, x, x]"
        : `- &a${level} [${Array(10)
            .fill(`*a${level - 1}`)
            .join(", ")}]`,
    );
    writeFileSync(file, `${levels.join("\n")}\n`);
    const read = readCaseFile(file);
    expect(read).toEqual({ problems: [expect.stringMatching(/^\S+: .*alias/i)] });
    expect((read as { problems: string[] }).problems[0]?.startsWith(`${file}: `)).toBe(true);
  });

  it("reads the example docs/endpoints.md shows", () => {
    const [example] = codeBlocks("docs/endpoints.md").filter(
      (block) => block.lang === "yaml" && block.text.includes("cases.schema.json"),
    );
    const folder = folderOf({ "cases.yaml": example?.text ?? "" });
    expect(readCaseFile(join(folder, "cases.yaml"))).toHaveProperty("cases");
  });
});
