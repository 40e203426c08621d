// The catalog is read from endpoint folders: each definition checked against its format (whose JSON
// Schema is kept in endpoints/), its SQL's parameters against the declared ones, every problem one
// line naming the file and the field; and a folder an operator adds is served with no code.
import { execFileSync } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { DEFINITION_SCHEMA_FILE, definitionJsonSchema } from "../../src/endpoints/definition.ts";
import {
  BUILT_IN_ENDPOINTS,
  CatalogError,
  loadCatalog,
  MAX_ENDPOINT_FILE_BYTES,
} from "../../src/endpoints/load-catalog.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import { configFrom } from "../support/config-from.ts";

const folders = mkdtempSync(join(tmpdir(), "endpoints-"));
afterAll(() => rmSync(folders, { recursive: true, force: true }));

let made = 0;
/** A directory of endpoint folders: name → its files (endpoint.yaml, bigquery.sql, ...). */
function endpointsDir(endpoints: Record<string, Record<string, string>>): string {
  const dir = join(folders, `dir-${made++}`);
  for (const [name, files] of Object.entries(endpoints)) {
    mkdirSync(join(dir, name), { recursive: true });
    for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, name, file), text);
  }
  return dir;
}

/** The lines CatalogError gives for `dirs`, with the temporary directory taken out. */
function problemsOf(dirs: string[]): string[] {
  try {
    loadCatalog(dirs);
  } catch (error) {
    if (!(error instanceof CatalogError)) throw error;
    return error.problems.map((line) => line.replace(/^.*?dir-\d+\//, ""));
  }
  throw new Error("the catalog loaded");
}

// An operator's endpoint: one parameter, SQL per engine, no window.
const ECHO = `# yaml-language-server: $schema=../endpoint.schema.json
name: echo.project
id: 0b5e6a43-4b1e-4c1f-9a57-6b0f2c1e2d3a
description: The project asked for, and its length.
params:
  project:
    type: string
    required: true
    description: any text
  times:
    type: integer
    minimum: 1
    maximum: 3
    default: "1"
    description: how many rows
example:
  project: acme
columns:
  - { name: project, type: STRING, mode: REQUIRED }
  - { name: length, type: INT64, mode: REQUIRED }
max_rows: 10
`;
const ECHO_SQL = {
  "bigquery.sql":
    "SELECT @project AS project, LENGTH(@project) AS length FROM UNNEST(GENERATE_ARRAY(1, CAST(@times AS INT64)))\n",
  "duckdb.sql":
    "SELECT $project AS project, length($project)::BIGINT AS length FROM range(CAST($times AS BIGINT))\n",
};

describe("the definition format", () => {
  it("keeps its JSON Schema in endpoints/endpoint.schema.json (npm run endpoint-schema writes it)", () => {
    expect(readFileSync(DEFINITION_SCHEMA_FILE, "utf8")).toBe(definitionJsonSchema());
  });

  it("holds the built-in endpoints, each with its SQL for both engines", () => {
    const { entries } = loadCatalog();
    expect(entries.map((entry) => [entry.name, Object.keys(entry.sql)])).toEqual([
      ["functions.invocation-stats", ["bigquery", "duckdb"]],
      ["logs.all", ["bigquery", "duckdb"]],
      ["usage.api-counts", ["bigquery", "duckdb"]],
    ]);
    const logs = entries[1];
    expect(Object.keys(logs?.sql.duckdb ?? {})).toEqual(["query", "window", "rest"]);
    expect(logs?.paging).toMatchObject({ pageSize: 100, follow: true });
  });
});

describe("a definition's problems", () => {
  it("are one line each, naming the file and the field", () => {
    const bad = ECHO.replace("type: integer", "type: number").replace(
      "max_rows: 10",
      "max_rows: 0",
    );
    const lines = problemsOf([
      endpointsDir({ "echo.project": { "endpoint.yaml": bad, ...ECHO_SQL } }),
    ]);
    expect(lines).toEqual([
      expect.stringMatching(/^echo\.project\/endpoint\.yaml: params\.times\.type: .*'integer'/),
      expect.stringMatching(/^echo\.project\/endpoint\.yaml: max_rows: /),
    ]);
  });

  it("name a YAML syntax error's line", () => {
    const lines = problemsOf([
      endpointsDir({
        "echo.project": {
          "endpoint.yaml": ECHO.replace("max_rows: 10", "max_rows: [10"),
          ...ECHO_SQL,
        },
      }),
    ]);
    expect(lines).toEqual([expect.stringMatching(/^echo\.project\/endpoint\.yaml: line \d+: /)]);
  });

  it("include a SQL parameter nobody declares or binds, and a declared one no SQL uses", () => {
    const sql = {
      "bigquery.sql": "SELECT @project AS project, LENGTH(@projekt) AS length\n",
      // In a comment or a string, @name is not a parameter.
      "duckdb.sql": "-- $times\nSELECT $project AS project, length('$times')::BIGINT AS length\n",
    };
    const lines = problemsOf([endpointsDir({ "echo.project": { "endpoint.yaml": ECHO, ...sql } })]);
    expect(lines).toEqual([
      expect.stringMatching(
        /^echo\.project\/bigquery\.sql: @projekt is neither a declared parameter/,
      ),
      "echo.project/endpoint.yaml: params.times: is not used by bigquery.sql",
      "echo.project/endpoint.yaml: params.times: is not used by duckdb.sql",
    ]);
  });

  it("include a folder not named as its endpoint, and a name or id another folder has", () => {
    const renamed = ECHO.replace("name: echo.project", "name: echo.other");
    const dir = endpointsDir({
      "echo.project": { "endpoint.yaml": renamed, ...ECHO_SQL },
      "logs.all": {
        "endpoint.yaml": ECHO.replace("name: echo.project", "name: logs.all"),
        ...ECHO_SQL,
      },
    });
    expect(problemsOf([BUILT_IN_ENDPOINTS, dir])).toEqual([
      "echo.project/endpoint.yaml: name: echo.other is not its folder's name, echo.project",
      expect.stringMatching(
        /^logs\.all\/endpoint\.yaml: name: logs\.all is also .*logs\.all\/endpoint\.yaml's$/,
      ),
    ]);
  });

  it("include a paging contract naming a parameter that is not declared, and missing SQL it needs", () => {
    const logs = readFileSync(join(BUILT_IN_ENDPOINTS, "logs.all/endpoint.yaml"), "utf8");
    const dir = endpointsDir({ "logs.all": {} });
    cpSync(join(BUILT_IN_ENDPOINTS, "logs.all/bigquery.sql"), join(dir, "logs.all/bigquery.sql"));
    writeFileSync(
      join(dir, "logs.all/endpoint.yaml"),
      logs.replace("param: project_tier", "param: tier"),
    );
    expect(problemsOf([dir])).toEqual([
      "logs.all/endpoint.yaml: paging.retention.param: names tier, which is not a declared parameter",
      // No longer read by the window, and not by the SQL either.
      "logs.all/endpoint.yaml: params.project_tier: is not used by bigquery.sql",
      "logs.all/rest.bigquery.sql: missing: a paged endpoint's rest of a walk",
      "logs.all/window.bigquery.sql: missing: a followable endpoint's window query",
    ]);
  });
});

describe("what the loader reads of an endpoint folder", () => {
  it("refuses a file that is not a regular one: a link to a device, a folder, a FIFO", () => {
    const dir = endpointsDir({
      "echo.zero": {},
      "echo.folder": {},
      "echo.fifo": {},
      "echo.project": { "endpoint.yaml": ECHO, "bigquery.sql": ECHO_SQL["bigquery.sql"] },
    });
    symlinkSync("/dev/zero", join(dir, "echo.zero", "endpoint.yaml"));
    mkdirSync(join(dir, "echo.folder", "endpoint.yaml"));
    execFileSync("mkfifo", [join(dir, "echo.fifo", "endpoint.yaml")]);
    symlinkSync("/dev/zero", join(dir, "echo.project", "duckdb.sql"));
    expect(problemsOf([dir]).sort()).toEqual([
      "echo.fifo/endpoint.yaml: is not a regular file",
      "echo.folder/endpoint.yaml: is not a regular file",
      "echo.project/duckdb.sql: is not a regular file",
      "echo.zero/endpoint.yaml: is not a regular file",
    ]);
  });

  it(`refuses a file of more than ${MAX_ENDPOINT_FILE_BYTES} bytes, and takes one of that size`, () => {
    const padded = (bytes: number) => `${ECHO}#${"x".repeat(bytes - ECHO.length - 2)}\n`;
    const at = endpointsDir({
      "echo.project": { "endpoint.yaml": padded(MAX_ENDPOINT_FILE_BYTES), ...ECHO_SQL },
    });
    expect(loadCatalog([at]).find("echo.project")).toBeDefined();
    const over = endpointsDir({
      "echo.project": { "endpoint.yaml": padded(MAX_ENDPOINT_FILE_BYTES + 1), ...ECHO_SQL },
    });
    expect(problemsOf([over])).toEqual([
      `echo.project/endpoint.yaml: holds more than ${MAX_ENDPOINT_FILE_BYTES} bytes, the most an endpoint file may`,
    ]);
  });

  it("names the file of a YAML alias bomb", () => {
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let level = 1; level < 9; level++) {
      bomb.push(
        `l${level}: &l${level} [${Array(10)
          .fill(level === 1 ? "*a" : `*l${level - 1}`)
          .join(", ")}]`,
      );
    }
    const dir = endpointsDir({ "echo.project": { "endpoint.yaml": bomb.join("\n"), ...ECHO_SQL } });
    expect(problemsOf([dir])).toEqual([
      expect.stringMatching(/^echo\.project\/endpoint\.yaml: Excessive alias count/),
    ]);
  });

  it("names the file of a YAML alias that holds itself, in one line", () => {
    const dir = endpointsDir({
      "echo.project": { "endpoint.yaml": `${ECHO}loop: &loop [1, *loop]\n`, ...ECHO_SQL },
    });
    expect(problemsOf([dir])).toEqual([
      expect.stringMatching(/^echo\.project\/endpoint\.yaml: [^\n]*circular structure[^\n]*$/),
    ]);
  });
});

describe("a list parameter's term pattern", () => {
  const withList = (pattern: string) =>
    // A function: a replacement string would read the pattern's `$` as a substitution.
    ECHO.replace(
      "params:\n",
      () =>
        `params:\n  codes:\n    type: list\n    description: codes\n    term: { pattern: '${pattern}', is: a code }\n`,
    );
  const sqlWithList = {
    "duckdb.sql": `${ECHO_SQL["duckdb.sql"].trimEnd()} WHERE $codes IS NULL OR $codes <> ''\n`,
  };

  it("is refused, naming the file, when RE2 refuses it (a backreference, a lookahead)", () => {
    const dir = endpointsDir({
      "echo.backreference": {
        "endpoint.yaml": withList("^(a)\\1$").replace(
          "name: echo.project",
          "name: echo.backreference",
        ),
        ...sqlWithList,
      },
      "echo.lookahead": {
        "endpoint.yaml": withList("^(?=a)a$")
          .replace("name: echo.project", "name: echo.lookahead")
          .replace("0b5e6a43", "1b5e6a43"),
        ...sqlWithList,
      },
    });
    expect(problemsOf([dir])).toEqual([
      expect.stringMatching(
        /^echo\.backreference\/endpoint\.yaml: params\.codes\.term\.pattern: not a valid RE2 regular expression: .*\\1/,
      ),
      expect.stringMatching(
        /^echo\.lookahead\/endpoint\.yaml: params\.codes\.term\.pattern: not a valid RE2 regular expression: .*\(\?=/,
      ),
    ]);
  });

  it("runs as RE2: ^(a+)+$ takes a's and refuses a long near miss (which a backtracking regex would take minutes over)", () => {
    const dir = endpointsDir({
      "echo.project": { "endpoint.yaml": withList("^(a+)+$"), ...sqlWithList },
    });
    const entry = loadCatalog([dir]).find("echo.project");
    const check = (codes: string) => entry?.params.safeParse({ project: "p", codes }).success;
    expect(check("a,aaaa")).toBe(true);
    expect(check(`${"a".repeat(34)}b`)).toBe(false);
  });
});

describe("an endpoint's name", () => {
  it("may not end in a format suffix, which would make it another endpoint's path", () => {
    const lines = ["csv", "ndjson", "json"].map((suffix) => {
      const name = `echo.project.${suffix}`;
      const dir = endpointsDir({
        [name]: {
          "endpoint.yaml": ECHO.replace("name: echo.project", `name: ${name}`),
          ...ECHO_SQL,
        },
      });
      return problemsOf([dir])[0];
    });
    expect(lines).toEqual([
      expect.stringMatching(/^echo\.project\.csv\/endpoint\.yaml: name: ends in \.csv, /),
      expect.stringMatching(/^echo\.project\.ndjson\/endpoint\.yaml: name: ends in \.ndjson, /),
      expect.stringMatching(/^echo\.project\.json\/endpoint\.yaml: name: ends in \.json, /),
    ]);
  });
});

describe("an endpoint folder an operator adds", () => {
  it("is served beside the built-in ones, validated and listed, with no code", async () => {
    const dir = endpointsDir({ "echo.project": { "endpoint.yaml": ECHO, ...ECHO_SQL } });
    const catalog = loadCatalog([BUILT_IN_ENDPOINTS, dir]);
    const engine = await createDuckDbEngine();
    const app = await serviceApp(configFrom({ auth: { apiKeys: ["k".repeat(32)] } }), {
      engine,
      catalog,
    });
    try {
      const get = (url: string) => app.inject({ url, headers: { "x-api-key": "k".repeat(32) } });
      const answer = await get("/api/endpoints/echo.project?project=acme&times=2");
      expect(answer.statusCode).toBe(200);
      expect(answer.json().result).toEqual([
        { project: "acme", length: 4 },
        { project: "acme", length: 4 },
      ]);
      // Its default stands for an absent parameter; its bounds are checked.
      expect((await get("/api/endpoints/echo.project?project=a")).json().result).toHaveLength(1);
      const refused = await get("/api/endpoints/echo.project?project=a&times=9");
      expect(refused.statusCode).toBe(400);
      expect(refused.body).toContain("must be at most 3");
      const listing = (await get("/api/endpoints")).json().result as { name: string }[];
      expect(listing.map((entry) => entry.name)).toContain("echo.project");
    } finally {
      await app.close();
      await engine.close();
    }
  });
});
