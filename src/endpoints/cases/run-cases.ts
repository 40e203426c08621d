// Runs one endpoint folder's test cases through the service itself: for each set of fixture files,
// an embedded engine holding those rows and the app over it; each case's query string is sent as a
// GET with the case's instant as now (and, for a later page, each page's next link followed; for a
// follow catch-up, as a settled follow stream), and the answer compared with what the case expects.
import { basename, dirname, join, relative, resolve } from "node:path";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { type Config, configFrom } from "../../config.ts";
import type { QueryEngine } from "../../engines/engine.ts";
import { parseIsoTimestamp } from "../../time.ts";
import type { Catalog } from "../catalog.ts";
import { BUILT_IN_ENDPOINTS, CatalogError, loadCatalog } from "../load-catalog.ts";
import { servedOn } from "../served-catalog.ts";
import { caseEngine, fixturePath, SHARED_FIXTURES } from "./case-engine.ts";
import { type EndpointCase, readCaseFile } from "./case-file.ts";
import { rowsDiff } from "./rows-diff.ts";

/** The file of an endpoint's cases, in its folder. */
export const CASES_FILE = "cases.yaml";

export interface CaseOutcome {
  /** The cases file. */
  file: string;
  /** The case's name; absent for a problem of the whole file. */
  name?: string;
  /** What went wrong, a line each; empty when the case passed. */
  problems: string[];
}

/** The one credential of the app the cases run in; it exists only in that app. */
const KEY = "endpoint-cases-0123456789abcdef";

/**
 * Builds the app the cases are sent to: app.ts's serviceApp, handed in by the command or test that
 * runs the cases, since no module under src/ but main.ts builds the app.
 */
export type BuildCaseApp = (
  config: Config,
  deps: { engine: QueryEngine; catalog: Catalog; follow: { clock: () => bigint } },
) => Promise<FastifyInstance>;

/**
 * The outcome of each case of the folder's cases file, in the file's order; none runs when an
 * engine refuses the endpoint's SQL: the embedded one the cases run on, or one of `alsoCheckedOn`
 * (which checks its own dialect's SQL, e.g. BigQuery's dry run checking bigquery.sql).
 */
export async function runEndpointCases(
  folder: string,
  serviceApp: BuildCaseApp,
  alsoCheckedOn: readonly QueryEngine[] = [],
): Promise<CaseOutcome[]> {
  const file = join(folder, CASES_FILE);
  const read = readCaseFile(file);
  if ("problems" in read) return [{ file, problems: read.problems }];
  const name = basename(resolve(folder));
  let catalog: Catalog;
  try {
    // The built-in endpoints and the folder's neighbours, as ENDPOINTS_DIR would serve them.
    catalog = loadCatalog([...new Set([BUILT_IN_ENDPOINTS, `${dirname(resolve(folder))}/`])]);
  } catch (error) {
    if (!(error instanceof CatalogError)) throw error;
    return [{ file, problems: [...error.problems] }];
  }
  if (!catalog.find(name)) {
    return [{ file, problems: [`${file}: no endpoint is named ${name}, the name of its folder`] }];
  }
  const refused = await refusedSql(catalog, name, alsoCheckedOn);
  if (refused.length > 0) return [{ file, problems: refused }];
  const outcomes: CaseOutcome[] = [];
  // Cases over the same files share one engine: loading is the slow part of a case.
  const byFixtures = new Map<string, { fixtures: Record<string, string>; cases: number[] }>();
  read.cases.forEach((entry, index) => {
    const fixtures: Record<string, string> = {};
    const missing: string[] = [];
    for (const [table, path] of Object.entries(entry.fixtures)) {
      const found = path === undefined ? undefined : fixturePath(folder, path);
      if (found) fixtures[table] = found;
      else
        missing.push(
          `fixtures.${table}: no file ${path} in ${folder} nor in ${relative(process.cwd(), SHARED_FIXTURES)}`,
        );
    }
    outcomes[index] = { file, name: entry.name, problems: missing };
    if (missing.length > 0) return;
    const key = JSON.stringify(Object.entries(fixtures).sort());
    const group = byFixtures.get(key) ?? { fixtures, cases: [] };
    group.cases.push(index);
    byFixtures.set(key, group);
  });
  for (const { fixtures, cases } of byFixtures.values()) {
    const problems = await runOverFixtures(
      serviceApp,
      catalog,
      name,
      fixtures,
      cases.map((index) => read.cases[index] as EndpointCase),
    );
    cases.forEach((index, i) => {
      (outcomes[index] as CaseOutcome).problems = problems[i] ?? [];
    });
  }
  return outcomes;
}

/**
 * The endpoint's SQL files the engines refuse as `npm start` would (not one SELECT, not planned,
 * or not the declared row), checked before any case runs: a case never runs what the service would
 * not serve.
 */
async function refusedSql(
  catalog: Catalog,
  endpoint: string,
  alsoCheckedOn: readonly QueryEngine[],
): Promise<string[]> {
  const engine = await caseEngine({}, () => 0n);
  const problems: string[] = [];
  try {
    for (const checker of [engine, ...alsoCheckedOn]) {
      problems.push(
        ...(await servedOn(catalog, checker, (entry) => entry.name === endpoint)).problems,
      );
    }
    return problems;
  } finally {
    await engine.close();
  }
}

/** Each case's problems, the cases run in one app over an engine holding `fixtures`. */
async function runOverFixtures(
  serviceApp: BuildCaseApp,
  catalog: Catalog,
  endpoint: string,
  fixtures: Record<string, string>,
  cases: EndpointCase[],
): Promise<string[][]> {
  let now = 0n;
  const clock = () => now;
  let engine: Awaited<ReturnType<typeof caseEngine>>;
  try {
    engine = await caseEngine(fixtures, clock);
  } catch (error) {
    const problem = `fixtures: ${error instanceof Error ? error.message : String(error)}`;
    return cases.map(() => [problem]);
  }
  // The app's clock too: it resolves `since` and where streams start. No follow lag: a catch-up
  // reads every record up to the case's now, which no record of a fixture can arrive after.
  const app = await serviceApp(configFrom({ auth: { apiKeys: [KEY] }, follow: { lagMs: 0 } }), {
    engine,
    catalog,
    follow: { clock },
  });
  try {
    const problems: string[][] = [];
    for (const entry of cases) {
      now = parseIsoTimestamp(entry.now) as bigint;
      const answer = await answerOf(app, endpoint, entry);
      problems.push("problem" in answer ? [answer.problem] : compared(entry.expect, answer));
    }
    return problems;
  } finally {
    await app.close();
    await engine.close();
  }
}

interface Answer {
  status: number;
  result?: unknown;
  error?: { code?: string; message?: string; details?: { param?: string; message?: string }[] };
}

/** What the case asks: the first page of the answer, a later page, or a follow catch-up's records. */
async function answerOf(
  app: FastifyInstance,
  endpoint: string,
  entry: EndpointCase,
): Promise<Answer | { problem: string }> {
  const query = new URLSearchParams(entry.params);
  const path = `/api/endpoints/${encodeURIComponent(endpoint)}`;
  if (entry.follow === "catch-up") {
    query.set("until", "settled");
    const response = await get(app, `${path}/follow?${query}`, NDJSON);
    return response.statusCode === 200 ? caughtUp(response) : answerIn(response);
  }
  let response = await get(app, `${path}?${query}`);
  for (let page = 2; page <= (entry.page ?? 1) && response.statusCode === 200; page++) {
    const next = /^<([^>]+)>;\s*rel="next"/.exec(String(response.headers.link ?? ""))?.[1];
    if (next === undefined) {
      return { problem: `page: page ${page - 1} links to no next page (no Link rel="next")` };
    }
    response = await get(app, next);
  }
  return answerIn(response);
}

const NDJSON = "application/x-ndjson";

function get(app: FastifyInstance, url: string, accept?: string) {
  return app.inject({
    method: "GET",
    url,
    headers: { "x-api-key": KEY, ...(accept && { accept }) },
  });
}

/**
 * The records of a settled follow stream, NDJSON lines ending with one that says why it ended;
 * a problem when it ended before it caught up.
 */
function caughtUp(response: LightMyRequestResponse): Answer | { problem: string } {
  const lines = response.body
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const end = lines.at(-1)?.end as { reason?: string } | undefined;
  if (end?.reason !== "settled") {
    return {
      problem: `follow: the stream ended ${end?.reason ?? "without saying why"}, not caught up`,
    };
  }
  return { status: response.statusCode, result: lines.slice(0, -1) };
}

/** How the answer differs from what the case expects, a line each. */
function compared(expected: EndpointCase["expect"], answer: Answer): string[] {
  if (answer.status !== expected.status) {
    return [`status: expected ${expected.status}, got ${answer.status}${said(answer)}`];
  }
  const rows = Array.isArray(answer.result) ? answer.result : undefined;
  if (expected.error !== undefined && answer.error?.code !== expected.error) {
    return [`error: expected ${expected.error}, got ${answer.error?.code ?? "no error"}`];
  }
  if (expected.count !== undefined && rows?.length !== expected.count) {
    return [`count: expected ${expected.count}, got ${rows?.length ?? "no result"}`];
  }
  if (expected.rows !== undefined)
    return rows ? rowsDiff(expected.rows, rows) : ["rows: the answer holds no result"];
  return [];
}

/** What an error answer says: its code, and each parameter's problem or else its message. */
function said({ error }: Answer): string {
  if (!error) return "";
  const details = Array.isArray(error.details)
    ? error.details.map((detail) => `${detail.param}: ${detail.message}`).join("; ")
    : "";
  return ` (${error.code}: ${details || error.message})`;
}

function answerIn(response: LightMyRequestResponse): Answer {
  const status = response.statusCode;
  try {
    const body: unknown = response.json();
    return typeof body === "object" && body !== null ? { ...(body as Answer), status } : { status };
  } catch {
    return { status };
  }
}
