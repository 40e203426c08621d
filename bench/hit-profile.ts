// Where a cached hit's time goes (issue 12): the service as `npm start` runs it (DuckDB demo data,
// an API key, the rate limit at 10⁹ a minute, request log lines at info to /dev/null, load shedding
// on) under `node --cpu-prof`; one warm-up request, then 20 connections for 15 s from this process.
// Each sample in the load window is charged to the deepest frame of its stack that belongs to a
// stage (library internals go to the stage that called them); µs of server CPU per request.
// Run: node bench/hit-profile.ts [--runs N]. Prints markdown for docs/benchmarks.md.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { freePort } from "../test/support/free-port.ts";

const API_KEY = "bench-key-0123456789abcdef";
const KEY_PATH = "/api/endpoints/functions.invocation-stats?project=default&interval=1day";
const LOAD = { connections: 20, seconds: 15 };

/** Stages by the frame's script (first match wins); frames of no stage pass to their caller. */
const STAGES: [string, RegExp][] = [
  [
    "request log line (pino's stream)",
    /\/src\/(logger|http\/(request-log|deferred-child-logger))\.ts$|\/node_modules\/(pino|sonic-boom)\b/,
  ],
  [
    "metrics (counter and histogram)",
    /\/src\/http\/(metrics|duration-histogram)\.ts$|\/node_modules\/prom-client\//,
  ],
  [
    "authentication (SHA-256 of the key, one map lookup)",
    /\/src\/(credentials\/authenticate|http\/auth)\.ts$|^node:internal\/crypto\/hash$/,
  ],
  [
    "per-credential rate limit",
    /\/src\/http\/rate-limit\.ts$|\/node_modules\/(@fastify\/rate-limit|toad-cache)\//,
  ],
  ["CORS headers", /\/src\/http\/cors\.ts$|\/node_modules\/@fastify\/cors\//],
  [
    "cache lookup (cache key, runner, LRU get)",
    /\/src\/(cache\/[\w-]+|endpoints\/runner)\.ts$|\/node_modules\/lru-cache\//,
  ],
  [
    "scope check and validation",
    /\/src\/(credentials\/scope-rule|endpoints\/params)\.ts$|\/node_modules\/zod\//,
  ],
  [
    "route handler (endpoint lookup, format, cache headers)",
    /\/src\/(http\/(endpoint-routes|reply|formats\/[\w-]+)|endpoints\/catalog)\.ts$/,
  ],
  ["request id, request shape, shutdown and other hooks", /\/src\/(app|http\/[\w-]+)\.ts$/],
  [
    "routing and query-string parse",
    /\/node_modules\/(find-my-way|fast-querystring)\/|\/src\/http\/query-string\.ts$/,
  ],
  [
    "socket write and header serialisation",
    /^node:(_http_outgoing|net|internal\/stream_base_commons|internal\/streams\/writable)$/,
  ],
  ["Node's HTTP parser and server", /^node:(_http_server|_http_common|_http_incoming)$/],
  ["Fastify core (hook runner, `reply.header`, `send`)", /\/node_modules\/fastify\//],
  ["promise and tick queues", /^node:internal\/process\/task_queues$/],
];
const NATIVE: Record<string, string> = {
  writev: "socket write and header serialisation",
  writeUtf8String: "socket write and header serialisation",
  writeBuffer: "socket write and header serialisation",
  "(garbage collector)": "garbage collection",
  "(program)": "V8 (program)",
  runMicrotasks: "promise and tick queues",
};

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

function stageOf(frame: ProfileNode["callFrame"]): string | undefined {
  const native = NATIVE[frame.functionName];
  if (native) return native;
  const url = frame.url.replace(/^file:\/\//, "");
  return STAGES.find(([, pattern]) => pattern.test(url))?.[0];
}

/** µs per stage over the samples taken in [fromUs, toUs] (the profile's own monotonic clock). */
function chargeStages(profile: Profile, fromUs: number, toUs: number): Map<string, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);
  const charged = new Map<string, number>();
  let at = profile.startTime;
  for (const [i, sample] of profile.samples.entries()) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < fromUs || at > toUs) continue;
    const leaf = byId.get(sample)?.callFrame;
    if (leaf?.functionName === "(idle)") continue;
    let stage: string | undefined;
    for (let id: number | undefined = sample; id !== undefined && !stage; id = parent.get(id)) {
      stage = stageOf(byId.get(id)?.callFrame ?? { functionName: "", url: "" });
    }
    const name = stage ?? "other";
    charged.set(name, (charged.get(name) ?? 0) + delta);
  }
  return charged;
}

async function profileOnce(): Promise<{ stages: Map<string, number>; requests: number }> {
  const dir = mkdtempSync(join(tmpdir(), "hit-profile-"));
  const port = await freePort();
  const child = spawn(process.execPath, ["--cpu-prof", `--cpu-prof-dir=${dir}`, "src/main.ts"], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      API_KEYS: API_KEY,
      RATE_LIMIT_PER_MINUTE: "1000000000",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  try {
    const url = `http://127.0.0.1:${port}${KEY_PATH}`;
    for (;;) {
      const ready = await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined);
      if (ready?.ok) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await (await fetch(url, { headers: { "x-api-key": API_KEY } })).arrayBuffer();
    const from = Number(process.hrtime.bigint() / 1000n);
    const result = await autocannon({
      url,
      headers: { "x-api-key": API_KEY },
      connections: LOAD.connections,
      duration: LOAD.seconds,
    });
    const to = Number(process.hrtime.bigint() / 1000n);
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile")) as string;
    const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as Profile;
    return { stages: chargeStages(profile, from, to), requests: result.requests.total };
  } finally {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

const { values } = parseArgs({ options: { runs: { type: "string", default: "1" } } });
const runs: Awaited<ReturnType<typeof profileOnce>>[] = [];
for (let run = 0; run < Number(values.runs); run++) runs.push(await profileOnce());
const names = [...STAGES.map(([name]) => name), ...new Set(Object.values(NATIVE)), "other"];
const perRequest = (name: string) =>
  runs.map(({ stages, requests }) => (stages.get(name) ?? 0) / requests);
const cells = (values: number[]) => values.map((value) => value.toFixed(1)).join(" / ");
console.log(`| stage | µs per request (run${runs.length > 1 ? "s" : ""}) |`);
console.log("| --- | ---: |");
for (const name of [...new Set(names)]) {
  if (perRequest(name).some((value) => value >= 0.05))
    console.log(`| ${name} | ${cells(perRequest(name))} |`);
}
const totals = runs.map(
  ({ stages, requests }) => [...stages.values()].reduce((a, b) => a + b, 0) / requests,
);
console.log(`| **total busy CPU per request** | **${cells(totals)}** |`);
console.log(
  `| requests served in the ${LOAD.seconds} s | ${runs.map((run) => run.requests).join(" / ")} |`,
);
