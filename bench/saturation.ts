// 2 000 concurrent clients of a cached endpoint for 30 s (issue 19): the main listener's throughput
// and p99, and meanwhile a liveness probe on a new connection every 250 ms, sent to the main port
// and to the management port. The service and the load generator (autocannon's CLI) run as
// processes of their own, so the probes here measure the service, not this process.
// Run: node bench/saturation.ts (about 70 s). Prints markdown for docs/benchmarks.md.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { get } from "node:http";
import { cpus, loadavg, platform, totalmem } from "node:os";
import { promisify } from "node:util";

const KEY = "bench-key-0123456789abcdef";
const PORT = 3301;
const MANAGEMENT_PORT = 3302;
const SECONDS = 30;
const CONNECTIONS = 2_000;
const PROBE_TIMEOUT_MS = 15_000;
const PATH = "/api/endpoints/functions.invocation-stats?project=default&interval=1day";

function startService(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["src/main.ts"], {
    env: {
      ...process.env,
      API_KEYS: KEY,
      PORT: String(PORT),
      MANAGEMENT_PORT: String(MANAGEMENT_PORT),
      RATE_LIMIT_PER_MINUTE: String(Number.MAX_SAFE_INTEGER),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  return new Promise((resolve) => {
    const poll = setInterval(async () => {
      const ok = await probe(PORT).then((ms) => ms !== undefined);
      if (ok) {
        clearInterval(poll);
        resolve(child);
      }
    }, 200);
  });
}

/** GET /health on a new connection: milliseconds to the answer, or undefined on failure. */
function probe(port: number): Promise<number | undefined> {
  const started = performance.now();
  return new Promise((resolve) => {
    const request = get({ port, host: "127.0.0.1", path: "/health", agent: false }, (response) => {
      response.resume();
      response.on("end", () =>
        resolve(response.statusCode === 200 ? performance.now() - started : undefined),
      );
    });
    request.setTimeout(PROBE_TIMEOUT_MS, () => request.destroy());
    request.on("error", () => resolve(undefined));
  });
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
};

const service = await startService();
// Warm the cache so that every loaded request is a hit.
await fetch(`http://127.0.0.1:${PORT}${PATH}`, { headers: { "x-api-key": KEY } });

const probes: Record<"main" | "management", (number | undefined)[]> = { main: [], management: [] };
const probing = setInterval(() => {
  void probe(PORT).then((ms) => probes.main.push(ms));
  void probe(MANAGEMENT_PORT).then((ms) => probes.management.push(ms));
}, 250);
const { stdout } = await promisify(execFile)(
  "node_modules/.bin/autocannon",
  [
    "-c",
    String(CONNECTIONS),
    "-d",
    String(SECONDS),
    "-H",
    `x-api-key=${KEY}`,
    "--json",
    `http://127.0.0.1:${PORT}${PATH}`,
  ],
  { maxBuffer: 64 * 1024 * 1024 },
);
clearInterval(probing);
await new Promise((resolve) => setTimeout(resolve, PROBE_TIMEOUT_MS));
service.kill("SIGTERM");

const load = JSON.parse(stdout) as {
  "2xx": number;
  requests: { average: number };
  latency: { p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
};
const describe = (times: (number | undefined)[]) => {
  const answered = times.filter((ms): ms is number => ms !== undefined);
  return `${percentile(answered, 0.5).toFixed(0)} | ${percentile(answered, 0.99).toFixed(0)} | ${Math.max(...answered).toFixed(0)} | ${times.length - answered.length} of ${times.length}`;
};
console.log(
  `${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.versions.node}, ${platform()}, load average ${loadavg()[0]?.toFixed(1)}\n`,
);
console.log(
  `Main listener under ${CONNECTIONS} connections for ${SECONDS} s: ${load.requests.average.toFixed(0)} answers/s, of which ${(load["2xx"] / SECONDS).toFixed(0)}/s 200 (the rest shed: ${load.non2xx} non-2xx); p99 ${load.latency.p99} ms; ${load.errors} errors, ${load.timeouts} timeouts\n`,
);
console.log("| /health probe on a new connection | p50 ms | p99 ms | max ms | failed |");
console.log("| --- | ---: | ---: | ---: | ---: |");
console.log(`| main port | ${describe(probes.main)} |`);
console.log(`| management port | ${describe(probes.management)} |`);
