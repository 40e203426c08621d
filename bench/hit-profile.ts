// Where a cached hit's time goes (issue 12), and what it costs against a bare route: the service as
// `npm start` runs it (DuckDB demo data, an API key, the rate limit at 10⁹ a minute, request log
// lines at info to /dev/null, load shedding on) under `node --cpu-prof`, for this tree and for the
// tree at --before (extracted from git, see tree-at.ts), beside a bare Fastify route replaying the
// same answer in a process of its own (bare-route.ts). One warm-up request each, then rounds of 20
// connections from this process, the three taking turns, so that both trees meet the same machine.
// Each runs in --processes processes (default 3), loaded in turn and counted together: two
// processes of one tree differ by up to 13 % here (what V8 made of the same code), which one
// process each would read as a difference between the trees.
// Besides req/s, each process's own CPU time in its rounds (Linux's /proc): on a shared machine a
// process that loses the scheduler for a round loses req/s, not CPU per request, so the CPU ratio
// reads the code where the req/s ratio reads the code and the machine's load.
// Each sample in a service's load windows is charged to the deepest frame of its stack that belongs
// to a stage (library internals go to the stage that called them); µs of server CPU per request.
// The profiler costs the services CPU the bare route does not pay (1–3 µs of a hit's 19–22 here):
// --without-profiler runs them without it, for the ratios alone.
// On Linux with two cores or more, the servers are pinned to the last core and this process (the
// load) to the others (taskset), so that a server and the load never take turns on one core; a
// shared machine still moves a round's req/s by up to 20 % here, pinned or not. --no-pin: unpinned.
// Run: node bench/hit-profile.ts [--before <commit>] [--rounds N] [--round-seconds S]
// [--processes N] [--without-profiler] [--no-pin]. Prints markdown for docs/benchmarks.md.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, platform, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { freePort } from "../test/support/free-port.ts";
import { root, treeAt } from "./tree-at.ts";

const API_KEY = "bench-key-0123456789abcdef";
const KEY_PATH = "/api/endpoints/functions.invocation-stats?project=default&interval=1day";
const CONNECTIONS = 20;
/** The last commit of main before issue 36's split of the cache and one place for defaults. */
const LAST_BEFORE_ISSUE_36 = "e0c891a07ae8ed900544c5382c40b5a28e4eb7e3";

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
    /\/src\/(http\/(answer-route|endpoint-routes?|endpoint-request|route-kinds?|reply|formats\/[\w-]+)|endpoints\/catalog)\.ts$/,
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

/** µs per stage over the samples taken in `windows` ([from, to] on the profile's own monotonic clock). */
function chargeStages(profile: Profile, windows: [number, number][]): Map<string, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);
  const charged = new Map<string, number>();
  let at = profile.startTime;
  for (const [i, sample] of profile.samples.entries()) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (!windows.some(([from, to]) => at >= from && at <= to)) continue;
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

const { values } = parseArgs({
  options: {
    before: { type: "string", default: LAST_BEFORE_ISSUE_36 },
    rounds: { type: "string", default: "5" },
    processes: { type: "string", default: "3" },
    "round-seconds": { type: "string", default: "3" },
    "without-profiler": { type: "boolean", default: false },
    pin: { type: "boolean", default: true },
  },
  allowNegative: true,
});
const ROUNDS = Number(values.rounds);
const ROUND_SECONDS = Number(values["round-seconds"]);
const PROCESSES = Number(values.processes);
const PROFILED = !values["without-profiler"];
const PIN_TO = values.pin && cpus().length >= 2 && hasTaskset() ? cpus().length - 1 : undefined;

function hasTaskset(): boolean {
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A server's command, on the servers' core when pinning. */
function serverCommand(args: string[]): [string, string[]] {
  return PIN_TO === undefined
    ? [process.execPath, args]
    : ["taskset", ["-c", String(PIN_TO), process.execPath, ...args]];
}

/** One process of a target: its URL, its load windows, where its CPU profile is written. */
interface Instance {
  url: string;
  process: ChildProcess;
  windows: [number, number][];
  profileDir?: string;
}

/** What is loaded in turns: its processes, its requests and req/s per process and round. */
interface Target {
  name: string;
  instances: Instance[];
  requests: number;
  perRound: number[];
  /** CPU seconds its processes spent in their rounds (user and system), when /proc tells. */
  cpuSeconds: number;
}

/** `count` processes of one target, started one after another. */
async function started(
  name: string,
  count: number,
  start: () => Promise<Instance>,
): Promise<Target> {
  const instances: Instance[] = [];
  for (let i = 0; i < count; i++) instances.push(await start());
  return { name, instances, requests: 0, perRound: [], cpuSeconds: 0 };
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

async function untilAnswered(url: string, headers: Record<string, string> = {}): Promise<void> {
  for (;;) {
    const answer = await fetch(url, { headers }).catch(() => undefined);
    if (answer?.ok) return void (await answer.arrayBuffer());
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The service of `tree` as `npm start` runs it, under the CPU profiler unless told, warmed with one request. */
async function startService(tree: string): Promise<Instance> {
  const profileDir = PROFILED ? mkdtempSync(join(tmpdir(), "hit-profile-")) : undefined;
  const port = await freePort();
  const child = spawn(
    ...serverCommand([
      ...(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []),
      "src/main.ts",
    ]),
    {
      cwd: tree,
      env: {
        PATH: process.env.PATH,
        PORT: String(port),
        API_KEYS: API_KEY,
        RATE_LIMIT_PER_MINUTE: "1000000000",
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  await untilAnswered(`http://127.0.0.1:${port}/ready`);
  const url = `http://127.0.0.1:${port}${KEY_PATH}`;
  await untilAnswered(url, { "x-api-key": API_KEY });
  return { url, process: child, windows: [], ...(profileDir && { profileDir }) };
}

/** The file of the cached hit `service` answers (its body and headers), for the bare route to replay. */
async function answerFileOf(service: Instance): Promise<string> {
  const hit = await fetch(service.url, { headers: { "x-api-key": API_KEY } });
  const headers = Object.fromEntries(
    [...hit.headers].filter(
      ([name]) => !["date", "connection", "keep-alive", "content-length"].includes(name),
    ),
  );
  const dir = mkdtempSync(join(tmpdir(), "hit-profile-bare-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const answerFile = join(dir, "answer.json");
  writeFileSync(answerFile, JSON.stringify({ body: await hit.text(), headers }));
  return answerFile;
}

/** The bare route, replaying the answer in `answerFile`. */
async function startBareRoute(answerFile: string): Promise<Instance> {
  const port = await freePort();
  const path = KEY_PATH.split("?")[0] as string;
  const child = spawn(
    ...serverCommand([join(root, "bench/bare-route.ts"), String(port), path, answerFile]),
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  const url = `http://127.0.0.1:${port}${KEY_PATH}`;
  await untilAnswered(url);
  return { url, process: child, windows: [] };
}

const TICKS_PER_SECOND = existsSync("/proc/self/stat")
  ? Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }))
  : undefined;

/** A process's CPU seconds so far (utime + stime, /proc/<pid>/stat fields 14 and 15); 0 without /proc. */
function cpuSecondsOf(instance: Instance): number {
  if (TICKS_PER_SECOND === undefined) return 0;
  const stat = readFileSync(`/proc/${instance.process.pid}/stat`, "utf8");
  // Fields after the command's closing parenthesis, the first of them the state (field 3).
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** A round of each of the target's processes, one after another. */
async function loadRound(target: Target): Promise<void> {
  for (const instance of target.instances) {
    const cpuFrom = cpuSecondsOf(instance);
    const from = nowUs();
    const result = await autocannon({
      url: instance.url,
      headers: { "x-api-key": API_KEY },
      connections: CONNECTIONS,
      duration: ROUND_SECONDS,
    });
    instance.windows.push([from, nowUs()]);
    target.cpuSeconds += cpuSecondsOf(instance) - cpuFrom;
    target.requests += result.requests.total;
    target.perRound.push(result.requests.total / ROUND_SECONDS);
  }
}

/** Stops a service and reads the profile it wrote on its way out. */
async function profileOf(instance: Instance): Promise<Profile> {
  const exited = new Promise((resolve) => instance.process.once("exit", resolve));
  instance.process.kill("SIGTERM");
  await exited;
  const dir = instance.profileDir as string;
  const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile")) as string;
  const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as Profile;
  rmSync(dir, { recursive: true, force: true });
  return profile;
}

// The load on the other cores: every thread of this process, autocannon's included.
if (PIN_TO !== undefined) {
  execFileSync("taskset", ["-a", "-c", "-p", `0-${PIN_TO - 1}`, String(process.pid)], {
    stdio: "ignore",
  });
}
const loadBefore = loadavg()[0] as number;
const beforeTree = treeAt(values.before, "hit-profile-before");
const before = await started(`before (${values.before.slice(0, 7)})`, PROCESSES, () =>
  startService(beforeTree),
);
const after = await started("after (this tree)", PROCESSES, () => startService(root));
const answerFile = await answerFileOf(after.instances[0] as Instance);
const bare = await started("bare Fastify route, same bytes and headers", PROCESSES, () =>
  startBareRoute(answerFile),
);
const targets = [before, after, bare];
try {
  // One unmeasured round each, then the measured ones, taking turns.
  for (const { url } of targets.flatMap((target) => target.instances))
    await autocannon({
      url,
      headers: { "x-api-key": API_KEY },
      connections: CONNECTIONS,
      duration: 1,
    });
  // The two trees swap places each round, so that neither always follows the other's load.
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? targets : [after, before, bare];
    for (const target of order) await loadRound(target);
  }
} finally {
  for (const instance of bare.instances) instance.process.kill("SIGKILL");
}
const services = [before, after];
const charged: { stages: Map<string, number>; requests: number }[] = [];
for (const service of services) {
  if (!PROFILED) {
    for (const instance of service.instances) instance.process.kill("SIGTERM");
    continue;
  }
  const stages = new Map<string, number>();
  for (const instance of service.instances) {
    for (const [name, us] of chargeStages(await profileOf(instance), instance.windows))
      stages.set(name, (stages.get(name) ?? 0) + us);
  }
  charged.push({ stages, requests: service.requests });
}
const loadAfter = loadavg()[0] as number;

const names = [...STAGES.map(([name]) => name), ...new Set(Object.values(NATIVE)), "other"];
const perRequest = (name: string) =>
  charged.map(({ stages, requests }) => (stages.get(name) ?? 0) / requests);
console.log(
  `${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${platform()}, Node ${process.versions.node}, load average ${loadBefore.toFixed(1)} → ${loadAfter.toFixed(1)}; ${PIN_TO === undefined ? "not pinned" : `servers on core ${PIN_TO}, load on the others`}; ${PROCESSES} processes each, ${ROUNDS} rounds of ${ROUND_SECONDS} s each, ${CONNECTIONS} connections\n`,
);
if (PROFILED) {
  console.log(`| stage | µs per request, ${services.map((s) => s.name).join(" | ")} |`);
  console.log(`| --- |${services.map(() => " ---: |").join("")}`);
  const cells = (values: number[]) => values.map((value) => value.toFixed(1)).join(" | ");
  for (const name of [...new Set(names)]) {
    if (perRequest(name).some((value) => value >= 0.05))
      console.log(`| ${name} | ${cells(perRequest(name))} |`);
  }
  const totals = charged.map(
    ({ stages, requests }) => [...stages.values()].reduce((a, b) => a + b, 0) / requests,
  );
  console.log(
    `| **total busy CPU per request** | **${cells(totals).replaceAll(" | ", "** | **")}** |`,
  );
}
const rate = (target: Target) => target.requests / (ROUNDS * ROUND_SECONDS * PROCESSES);
const cpuPerRequest = (target: Target) => (target.cpuSeconds * 1e6) / target.requests;
console.log(
  "\n| route | req/s | req/s per process and round | ÷ bare route | CPU µs per request | ÷ bare route, by CPU |\n| --- | ---: | ---: | ---: | ---: | ---: |",
);
for (const target of targets) {
  const rounds = `${Math.min(...target.perRound).toFixed(0)}–${Math.max(...target.perRound).toFixed(0)}`;
  const byCpu =
    TICKS_PER_SECOND === undefined
      ? "– | –"
      : `${cpuPerRequest(target).toFixed(1)} | ${(cpuPerRequest(bare) / cpuPerRequest(target)).toFixed(3)}`;
  console.log(
    `| ${target.name} | ${rate(target).toFixed(0)} | ${rounds} | ${(rate(target) / rate(bare)).toFixed(3)} | ${byCpu} |`,
  );
}
