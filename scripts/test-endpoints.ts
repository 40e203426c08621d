// `npm run test:endpoints`: runs the test cases (cases.yaml) of every endpoint folder, the built-in
// ones in endpoints/ and those in the folders ENDPOINTS_DIR lists, on the embedded engine through
// the service's own routes. Before its cases, each endpoint's SQL is checked as the service checks
// it at startup, on both engines: its DuckDB SQL by DuckDB, its BigQuery SQL by BigQuery's dry run
// against a local stand-in over GoogleSQL's reference engine (no BigQuery needed), each one SELECT
// giving the declared columns. Prints each case, and for a failure its file, its name and what
// differs; exits non-zero when any fails. Arguments, when given, are the endpoint folders to run
// instead.
import { existsSync, readdirSync, statSync } from "node:fs";
import { delimiter, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { serviceApp } from "../src/app.ts";
import { CASES_FILE, runEndpointCases } from "../src/endpoints/cases/run-cases.ts";
import { createBigQueryEngine } from "../src/engines/bigquery.ts";
import type { QueryEngine } from "../src/engines/engine.ts";

const BUILT_IN = fileURLToPath(new URL("../endpoints/", import.meta.url));

/** Problems that fail the run besides failing cases: a folder to read that is not one, a bad file. */
let otherProblems = 0;

/** The folders under `parent` that hold a cases file, sorted by name. */
function foldersWithCases(parent: string): string[] {
  if (!statSync(parent, { throwIfNoEntry: false })?.isDirectory()) {
    console.error(`ENDPOINTS_DIR: ${parent} is not a folder`);
    otherProblems++;
    return [];
  }
  return readdirSync(parent, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(parent, entry.name, CASES_FILE)))
    .map((entry) => join(parent, entry.name))
    .sort();
}

const operators = (process.env.ENDPOINTS_DIR ?? "").split(delimiter).filter((dir) => dir !== "");
const args = process.argv.slice(2);
// Relative to where the command runs, so that every file it names reads as the operator wrote it.
const folders = (args.length > 0 ? args : [BUILT_IN, ...operators].flatMap(foldersWithCases)).map(
  (folder) => relative(process.cwd(), resolve(folder)) || ".",
);
if (folders.length === 0) {
  console.error(`No endpoint folder holds a ${CASES_FILE}.`);
  otherProblems++;
}

/**
 * BigQuery's dry run as the service makes it, answered by the stand-in from GoogleSQL's reference
 * engine; undefined, said in one line, where that engine is not installed (a production install,
 * without development dependencies) or cannot run on this platform.
 */
async function bigQueryDryRun(): Promise<
  { engine: QueryEngine; close(): Promise<void> } | undefined
> {
  try {
    const { GoogleSqlServer } = await import("../test/support/googlesql.ts");
    const { startBigQueryStandIn } = await import("../test/support/bigquery-standin.ts");
    const googleSql = await GoogleSqlServer.start();
    const standIn = await startBigQueryStandIn({
      googleSqlPort: googleSql.port,
      now: new Date().toISOString(),
    });
    const engine = createBigQueryEngine({
      projectId: "test-endpoints",
      dataset: "logs",
      apiEndpoint: standIn.url,
      jobTimeoutMs: 30_000,
    });
    return {
      engine,
      async close() {
        await standIn.close();
        await googleSql.stop();
      },
    };
  } catch (error) {
    const why = error instanceof Error ? error.message.split("\n")[0] : String(error);
    console.error(
      `bigquery.sql files are not checked: GoogleSQL's reference engine cannot start (${why})`,
    );
    return undefined;
  }
}

const bigQuery = await bigQueryDryRun();
let passed = 0;
let failed = 0;
for (const folder of folders) {
  for (const { file, name, problems } of await runEndpointCases(
    folder,
    serviceApp,
    bigQuery ? [bigQuery.engine] : [],
  )) {
    if (name === undefined) {
      otherProblems++;
      for (const problem of problems) console.error(problem);
    } else if (problems.length === 0) {
      passed++;
      console.log(`ok    ${file} › ${name}`);
    } else {
      failed++;
      console.error(`FAIL  ${file} › ${name}`);
      for (const problem of problems) console.error(`        ${problem}`);
    }
  }
}
await bigQuery?.close();
console.log(
  `${folders.length} endpoint folders: ${passed} cases passed, ${failed} failed${otherProblems > 0 ? `, ${otherProblems} other problems` : ""}`,
);
process.exitCode = failed === 0 && otherProblems === 0 ? 0 : 1;
