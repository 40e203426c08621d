// What the service adds to an uncached BigQuery query: p50 of `logs.all` through the whole service
// (HTTP, auth, validation, admission, engine, JSON) against the official client's own `query()`
// running the same SQL with the same parameters, both against the same local BigQuery stand-in,
// interleaved in one run; and the HTTP calls each makes to BigQuery per query.
// Run: node bench/bigquery-path.ts (loopback only, about 30 s). Prints markdown for docs/benchmarks.md.
import { cpus, loadavg, platform, totalmem } from "node:os";
import { BigQuery } from "@google-cloud/bigquery";
import { PassThroughClient } from "google-auth-library";
import { serviceApp } from "../src/app.ts";
import { createBigQueryEngine } from "../src/engines/bigquery.ts";
import { startBigQueryStandIn } from "../test/support/bigquery-standin.ts";
import { configFrom } from "../test/support/config-from.ts";
import { edgeLog, MINUTE, PROJECT, shift } from "../test/support/fixtures.ts";
import { GoogleSqlServer } from "../test/support/googlesql.ts";
import { bigQuerySql, windowed } from "../test/support/queries.ts";

const ROUNDS = 300;
const NOW = "2026-11-21T05:17:42.123456Z";
const API_KEY = "bench-key-0123456789abcdef";
// The window the service's engine binds at NOW, which the client called directly binds too.
const PARAMS = windowed(
  "logs.all",
  { project: PROJECT, project_tier: "PRO", iso_timestamp_start: null, iso_timestamp_end: null },
  NOW,
);

const googleSql = await GoogleSqlServer.start();
const standIn = await startBigQueryStandIn({
  googleSqlPort: googleSql.port,
  now: NOW,
  // 100 log records in the last hour: one full page of logs.all.
  tables: {
    edge_logs: Array.from({ length: 100 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i) * (MINUTE / 2n))),
    ),
  },
});
const projectId = "bench-project";
const engine = createBigQueryEngine({
  projectId,
  dataset: "logs",
  apiEndpoint: standIn.url,
  now: standIn.clock,
  jobTimeoutMs: 30_000,
});
const app = await serviceApp(configFrom({ auth: { apiKeys: [API_KEY] } }), { engine });
const base = await app.listen({ host: "127.0.0.1", port: 0 });
const raw = new BigQuery({
  projectId,
  apiEndpoint: standIn.url,
  authClient: new PassThroughClient(),
});
const sql = bigQuerySql("logs.all");
const query = new URLSearchParams({ project: PROJECT, project_tier: "PRO" });

async function throughService(): Promise<void> {
  const response = await fetch(`${base}/api/endpoints/logs.all?${query}`, {
    headers: { "x-api-key": API_KEY },
  });
  if (response.status !== 200) throw new Error(`service answered ${response.status}`);
  await response.arrayBuffer();
}

async function throughClient(): Promise<void> {
  await raw.query({
    query: sql,
    params: PARAMS,
    types: Object.fromEntries(Object.keys(PARAMS).map((name) => [name, "STRING"])),
    defaultDataset: { projectId, datasetId: "logs" },
    jobCreationMode: "JOB_CREATION_OPTIONAL",
    maxResults: 100,
  });
}

/** Milliseconds per call and BigQuery HTTP calls per call, `rounds` times, after a warm-up. */
async function measure(run: () => Promise<void>, samples: number[]): Promise<number> {
  const before = standIn.requests.length;
  const start = performance.now();
  await run();
  samples.push(performance.now() - start);
  return standIn.requests.length - before;
}

const p50 = (samples: number[]) =>
  [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)] as number;

const first = await fetch(`${base}/api/endpoints/logs.all?${query}`, {
  headers: { "x-api-key": API_KEY },
});
const { result } = (await first.json()) as { result: unknown[] };
if (result.length !== 100)
  throw new Error(`expected a full page of 100 records, got ${result.length}`);
for (let i = 0; i < 20; i++) await Promise.all([throughService(), throughClient()]);
const service: number[] = [];
const client: number[] = [];
let serviceCalls = 0;
let clientCalls = 0;
// Interleaved, so the machine's drifting load falls on both alike.
for (let i = 0; i < ROUNDS; i++) {
  serviceCalls += await measure(throughService, service);
  clientCalls += await measure(throughClient, client);
}
await app.close();
await standIn.close();
await googleSql.stop();

const row = (name: string, samples: number[], calls: number) =>
  `| ${name} | ${p50(samples).toFixed(2)} | ${(calls / ROUNDS).toFixed(1)} |`;
console.log(`Machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${platform()}, Node ${process.versions.node}; load average ${loadavg()[0]?.toFixed(1)}.
Uncached \`logs.all\` (100 rows) on the BigQuery stand-in, ${ROUNDS} interleaved calls each:

| path | p50 ms | BigQuery HTTP calls per query |
| --- | ---: | ---: |
${row("the service over HTTP (auth, validation, admission, engine, JSON)", service, serviceCalls)}
${row("the official client's `query()`, same SQL and parameters", client, clientCalls)}

The service adds ${(p50(service) - p50(client)).toFixed(2)} ms at p50.`);
