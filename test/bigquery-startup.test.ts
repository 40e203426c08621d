// `npm start` on BigQuery checks, before it listens, that its credentials may query both source
// tables, and stops with one line saying what is wrong: the service as a process, against the
// BigQuery stand-in.
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { type BigQueryStandIn, startBigQueryStandIn } from "./support/bigquery-standin.ts";
import { freePort } from "./support/free-port.ts";
import { start, startAndExit } from "./support/service-process.ts";

const KEY = "bigquery-startup-key-0123456789";
const NOW = "2026-11-21T05:17:42.123456Z";

let standIn: BigQueryStandIn;
beforeEach(async () => {
  standIn = await startBigQueryStandIn({ googleSqlPort: inject("googleSqlPort"), now: NOW });
});
afterEach(() => standIn.close());

function bigQuery(env: Record<string, string> = {}): Record<string, string> {
  return {
    PORT: "0",
    API_KEYS: KEY,
    BIGQUERY_PROJECT_ID: "test-project",
    BIGQUERY_DATASET: "logs",
    BIGQUERY_API_ENDPOINT: standIn.url,
    ...env,
  };
}

describe("startup on BigQuery", () => {
  it("checks both source tables with one dry run, then serves queries", async () => {
    const { baseUrl } = await start(bigQuery());
    expect(standIn.queryCalls.map((call) => call.body)).toEqual([
      expect.objectContaining({
        dryRun: true,
        query: expect.stringMatching(/\bedge_logs\b.*\bfunction_edge_logs\b/),
        defaultDataset: { projectId: "test-project", datasetId: "logs" },
      }),
    ]);
    const response = await fetch(
      `${baseUrl}/api/endpoints/usage.api-counts?project=p&interval=hourly`,
      {
        headers: { "X-API-KEY": KEY },
      },
    );
    expect(response.status).toBe(200);
  });

  it.each([
    ["the dataset", "logs", "dataset test-project:logs"],
    ["edge_logs", "logs.edge_logs", "table test-project:logs.edge_logs"],
    ["function_edge_logs", "logs.function_edge_logs", "table test-project:logs.function_edge_logs"],
  ])("stops with one line naming %s when it does not exist", async (_, missing, named) => {
    standIn.missing = [missing];
    expect(await startAndExit(bigQuery())).toEqual({
      code: 1,
      stderr: `Startup error: BigQuery ${named} does not exist in location US; check BIGQUERY_PROJECT_ID, BIGQUERY_DATASET and BIGQUERY_LOCATION\n`,
    });
  });

  it("stops with one line naming the credentials BigQuery refused", async () => {
    standIn.injectFault({ kind: "unauthenticated" });
    expect(await startAndExit(bigQuery())).toEqual({
      code: 1,
      stderr:
        "Startup error: BigQuery did not accept the service's credentials (Request had invalid authentication credentials (injected)); set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, or run gcloud auth application-default login\n",
    });
  });

  it("stops with one line naming the permission the credentials lack", async () => {
    standIn.injectFault({ kind: "accessDenied" });
    const { code, stderr } = await startAndExit(bigQuery());
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^Startup error: the service's BigQuery credentials lack permission to query test-project:logs \(Access Denied: .*bigquery\.jobs\.create permission.*\); they need the BigQuery Job User role on project test-project and BigQuery Data Viewer on the dataset\n$/,
    );
  });

  it("stops with one line naming the network when nothing listens at the endpoint", async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    expect(await startAndExit(bigQuery({ BIGQUERY_API_ENDPOINT: endpoint }))).toEqual({
      code: 1,
      stderr: `Startup error: cannot reach BigQuery at ${endpoint} (ECONNREFUSED)\n`,
    });
  });

  it("stops with one line naming DNS when the endpoint's host name does not resolve", async () => {
    const endpoint = "http://bigquery.example.invalid";
    const started = startAndExit(bigQuery({ BIGQUERY_API_ENDPOINT: endpoint }), [
      "--import",
      "./test/support/unresolvable-hosts.ts",
    ]);
    expect(await started).toEqual({
      code: 1,
      stderr: `Startup error: cannot reach BigQuery at ${endpoint} (its host name does not resolve, DNS ENOTFOUND)\n`,
    });
  });
});
