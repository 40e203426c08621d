// A light query's answer time while another credential floods the engine with the costliest
// patterns the validator accepts (issue 15), on the embedded DuckDB engine over demo data:
// with the engine gate wide open (what the service did before it) and with its defaults.
// Run: node bench/flood.ts (about a minute). Prints markdown for docs/benchmarks.md.
import { availableParallelism, cpus, loadavg, platform, totalmem } from "node:os";
import { serviceApp } from "../src/app.ts";
import type { AdmissionOptions } from "../src/engines/admission.ts";
import { loadData } from "../src/engines/duckdb/data.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import { configFrom } from "../test/support/config-from.ts";
import { floodPatterns } from "../test/support/flood.ts";

const FLOOD_KEY = "flood-key-0123456789abcdef";
const LIGHT_KEY = "light-key-0123456789abcdef";
const FLOOD = 60;
const LIGHT_RUNS = 20;
const SETUPS: [string, Partial<AdmissionOptions>][] = [
  ["gate wide open (before)", { maxConcurrency: 64, maxQueue: 10_000, maxPerCredential: 10_000 }],
  ["gate at its defaults", { maxConcurrency: Math.min(availableParallelism(), 4), maxQueue: 100 }],
];

const engine = await createDuckDbEngine();
await loadData(engine, { demoData: true });

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;

async function measure(admission: Partial<AdmissionOptions>) {
  const app = await serviceApp(
    configFrom({
      auth: { apiKeys: [FLOOD_KEY, LIGHT_KEY] },
      rateLimitPerMinute: Number.MAX_SAFE_INTEGER,
      admission: { ...admission, timeoutMs: 120_000 },
    }),
    { engine },
  );
  const get = (url: string, key: string) => app.inject({ url, headers: { "x-api-key": key } });
  const light = async () => {
    const times: number[] = [];
    for (let i = 0; i < LIGHT_RUNS; i++) {
      const started = performance.now();
      // A distinct end each time: logs.all is never cached, but the point is a fresh query.
      const end = new Date(Date.UTC(2999, 0, 1, 0, 0, i)).toISOString();
      await get(
        `/api/endpoints/logs.all?project=default&project_tier=PRO&iso_timestamp_end=${end}`,
        LIGHT_KEY,
      );
      times.push(performance.now() - started);
    }
    return times.sort((a, b) => a - b);
  };
  const quiet = await light();
  const started = performance.now();
  const flood = Promise.all(
    floodPatterns(FLOOD).map((pattern) =>
      get(
        `/api/endpoints/usage.api-counts?interval=daily&project=${encodeURIComponent(pattern)}`,
        FLOOD_KEY,
      ),
    ),
  );
  const loaded = await light();
  const statuses = (await flood).map((response) => response.statusCode);
  const floodSeconds = (performance.now() - started) / 1000;
  await app.close();
  return { quiet, loaded, statuses, floodSeconds };
}

const rows: string[] = [];
for (const [label, admission] of SETUPS) {
  const { quiet, loaded, statuses, floodSeconds } = await measure(admission);
  const tally = Object.entries(
    statuses.reduce<Record<number, number>>((counts, status) => {
      counts[status] = (counts[status] ?? 0) + 1;
      return counts;
    }, {}),
  )
    .map(([status, count]) => `${count}× ${status}`)
    .join(", ");
  rows.push(
    `| ${label} | ${percentile(quiet, 0.5).toFixed(0)} | ${percentile(loaded, 0.5).toFixed(0)} | ${percentile(loaded, 0.99).toFixed(0)} | ${tally} | ${floodSeconds.toFixed(1)} |`,
  );
}
await engine.close();

console.log(
  `${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.versions.node}, ${platform()}, load average ${loadavg()[0]?.toFixed(1)}\n`,
);
console.log(
  `| setup | light p50 ms, quiet | light p50 ms, under flood | light p99 ms, under flood | flood of ${FLOOD} answered | flood s |`,
);
console.log("| --- | ---: | ---: | ---: | --- | ---: |");
console.log(rows.join("\n"));
