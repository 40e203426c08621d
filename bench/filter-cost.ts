// What logs.all's list filters cost and who pays, on the embedded engine over the demo data (7 days,
// 100 000 edge records), in one run:
// (a) a status list of 255 terms (past the 20 the service takes, so run on the engine directly)
//     over the last 60 s and over 7 days, and the longest list the service takes against one term;
// (b) another tenant's live tail while one key holds every follow stream it may (4), each with the
//     costliest filters the service takes and reopened from 7 days back every 2 s: the delay from
//     a record's arrival to the tenant receiving it, without the attack and then with it, and the
//     engine seconds of the attack by the credential they were charged to.
// Run: node_modules/.bin/node bench/filter-cost.ts [--phase-seconds 20] (about a minute).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, platform, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { serviceApp } from "../src/app.ts";
import { sha256Hex } from "../src/credentials/authenticate.ts";
import { KeysFile } from "../src/credentials/keys-file.ts";
import { MAX_LIST_TERMS } from "../src/endpoints/params.ts";
import { loadData } from "../src/engines/duckdb/data.ts";
import { DEMO_PROJECTS } from "../src/engines/duckdb/demo-data.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import { endpointRequest } from "../test/support/catalog.ts";
import { configFrom } from "../test/support/config-from.ts";

const RUNS = 5;
const ATTACKER_KEY = "bench-attacker-0123456789abcdef";
const TENANT_KEY = "bench-tenant-0123456789abcdef";
const INTERVAL_MS = 1_000;
const ARRIVAL_MS = 500;
const [PROJECT, TENANT_PROJECT] = DEMO_PROJECTS;

const { values: args } = parseArgs({
  options: { "phase-seconds": { type: "string", default: "20" } },
});
const phaseMs = Number(args["phase-seconds"]) * 1000;

const engine = await createDuckDbEngine();
await loadData(engine, { demoData: true });
const iso = (ms: number) => new Date(ms).toISOString();
const codes = (count: number) => Array.from({ length: count }, (_, i) => String(100 + i));

// (a) The engine's time for a first page, median of RUNS after one warm-up.
async function pageMs(params: Record<string, string | null>): Promise<number> {
  const bound = {
    project: PROJECT,
    project_tier: "PRO",
    iso_timestamp_start: null,
    iso_timestamp_end: null,
    cursor_timestamp: null,
    cursor_id: null,
    status: null,
    method: null,
    path: null,
    search: null,
    search_regex: null,
    ...params,
  };
  const times: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const started = performance.now();
    await engine.run(endpointRequest("logs.all", "duckdb", bound));
    if (i > 0) times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[Math.floor(RUNS / 2)] ?? 0;
}
const LONG = [...codes(250), "1xx", "2xx", "3xx", "4xx", "5xx"].join(",");
const LAST_MINUTE = iso(Date.now() - 60_000);
const priced: [string, number][] = [
  [
    "255 status terms, the last 60 s",
    await pageMs({ status: LONG, iso_timestamp_start: LAST_MINUTE }),
  ],
  ["255 status terms, 7 days", await pageMs({ status: LONG })],
  [
    `${MAX_LIST_TERMS} status terms (the most taken) no record has, 7 days`,
    await pageMs({ status: codes(MAX_LIST_TERMS).join(",") }),
  ],
  ["1 status term no record has (418), 7 days", await pageMs({ status: "418" })],
  ["status=5xx, 7 days", await pageMs({ status: "5xx" })],
];

// (b) Two tenants of one service, each a key of its own.
const folder = mkdtempSync(join(tmpdir(), "filter-cost-"));
const keysPath = join(folder, "keys.json");
writeFileSync(
  keysPath,
  JSON.stringify({
    keys: [
      { name: "attacker", sha256: sha256Hex(ATTACKER_KEY), scopes: [{ endpoint: "logs.all" }] },
      { name: "tenant", sha256: sha256Hex(TENANT_KEY), scopes: [{ endpoint: "logs.all" }] },
    ],
  }),
);
// Engine seconds by the credential each query was charged to ("(none)": charged to nobody).
const charged = new Map<string, number>();
const app = await serviceApp(
  configFrom({ rateLimitPerMinute: 1_000_000, follow: { intervalMs: INTERVAL_MS } }),
  {
    engine: {
      ...engine,
      async run(request) {
        const started = performance.now();
        try {
          return await engine.run(request);
        } finally {
          const who = request.credential ?? "(none)";
          charged.set(who, (charged.get(who) ?? 0) + (performance.now() - started) / 1000);
        }
      },
    },
    keysFile: new KeysFile(keysPath),
  },
);
const base = await app.listen({ host: "127.0.0.1", port: 0 });
const followUrl = (query: string) =>
  `${base}/api/endpoints/logs.all/follow?project_tier=PRO&${query}`;

/** An NDJSON follow stream; `onLine` gets each line until `abort`. */
async function follow(query: string, key: string, onLine: (line: string) => void) {
  const controller = new AbortController();
  const response = await fetch(followUrl(query), {
    headers: { "x-api-key": key, accept: "application/x-ndjson" },
    signal: controller.signal,
  });
  if (!response.ok) throw new Error(`follow ${query}: HTTP ${response.status}`);
  void (async () => {
    let buffered = "";
    try {
      for await (const chunk of (response.body as ReadableStream<Uint8Array>).pipeThrough(
        new TextDecoderStream(),
      )) {
        buffered += chunk;
        for (let at = buffered.indexOf("\n"); at !== -1; at = buffered.indexOf("\n")) {
          onLine(buffered.slice(0, at));
          buffered = buffered.slice(at + 1);
        }
      }
    } catch {
      // Aborted.
    }
  })();
  return controller;
}

// The tenant's tail: a record of its project arrives every ARRIVAL_MS; its delay is measured.
const arrivedAt = new Map<string, number>();
let phase: number[] = [];
const tenant = await follow(`project=${TENANT_PROJECT}`, TENANT_KEY, (line) => {
  const { id } = JSON.parse(line) as { id?: string };
  const at = id === undefined ? undefined : arrivedAt.get(id);
  if (at !== undefined) phase.push(performance.now() - at);
});
const writer = await engine.connect();
let arrivals = 0;
let arriving: NodeJS.Timeout | undefined;
// At random moments (ARRIVAL_MS apart on average), so that arrivals keep no phase with the polls.
const arrive = () => {
  const id = `tenant-${arrivals++}`;
  arrivedAt.set(id, performance.now());
  void writer.run(
    `INSERT INTO edge_logs (id, "timestamp", event_message, project, metadata)
     SELECT '${id}', now(), 'GET | 200 | tenant', '${TENANT_PROJECT}', metadata FROM edge_logs LIMIT 1`,
  );
  arriving = setTimeout(arrive, Math.random() * 2 * ARRIVAL_MS);
};
arrive();

async function measure(): Promise<number[]> {
  phase = [];
  await new Promise((resolve) => setTimeout(resolve, phaseMs));
  return phase;
}
const quiet = await measure();

// The attack: 4 streams with the longest lists and a pattern at its cost limit, from 7 days back.
const costliest = new URLSearchParams({
  project: PROJECT,
  status: codes(MAX_LIST_TERMS).join(","),
  method: Array.from({ length: MAX_LIST_TERMS }, (_, i) => `M${"X".repeat(i)}`).join(","),
  search_regex: "(?:\\w?\\W?){200}",
  iso_timestamp_start: iso(Date.now() - 7 * 86_400_000),
}).toString();
let attacking = true;
let reopened = 0;
const attackers = Array.from({ length: 4 }, async (_, i) => {
  while (attacking) {
    // A stream just closed holds its place until the service sees it go: 429 meanwhile.
    const stream = await follow(`${costliest}&search=${i}`, ATTACKER_KEY, () => {}).catch(
      () => undefined,
    );
    if (stream) reopened++;
    await new Promise((resolve) => setTimeout(resolve, stream ? 2_000 : 100));
    stream?.abort();
  }
});
const chargedBefore = new Map(charged);
const attacked = await measure();
const attackSeconds = (who: string) => (charged.get(who) ?? 0) - (chargedBefore.get(who) ?? 0);
attacking = false;
await Promise.all(attackers);
clearTimeout(arriving);
tenant.abort();
writer.closeSync();
await app.close();
await engine.close();
rmSync(folder, { recursive: true, force: true });

const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];
const row = (label: string, delays: number[]) =>
  `| ${label} | ${delays.length} | ${[0.5, 0.95, 1]
    .map((q) => ((quantile(delays, q) ?? Number.NaN) / 1000).toFixed(2))
    .join(" | ")} |`;
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${platform()}, Node ${process.version}; load average ${loadavg()[0]?.toFixed(1)}`,
);
console.log("\n| logs.all first page on the engine, demo data | p50 ms |\n|---|---:|");
for (const [label, ms] of priced) console.log(`| ${label} | ${ms.toFixed(1)} |`);
console.log(
  `\nThe tenant's live tail (a poll every ${INTERVAL_MS / 1000} s, a record every ${ARRIVAL_MS} ms), ${phaseMs / 1000} s each:\n`,
);
console.log(
  "| phase | records received | delay p50 s | p95 s | max s |\n|---|---:|---:|---:|---:|",
);
console.log(row("no attack", quiet));
console.log(row(`4 costliest follows of another key, reopened ${reopened} times`, attacked));
console.log(
  `\nEngine seconds during the attack, by the credential charged: ${["attacker", "tenant", "(none)"]
    .map((who) => `${who} ${attackSeconds(who).toFixed(1)}`)
    .join(", ")}.`,
);
