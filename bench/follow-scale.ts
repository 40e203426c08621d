// What a live tail costs the process that serves it, before and after issue 40 (the tree at --before,
// extracted from git, and this one), in one run: each case starts the service on DuckDB in a process
// of its own, once per tree, the trees taking turns. (a) Streams (Server-Sent Events, read as they
// come) of one parameter set are open when --records records arrive within the follow lag at once:
// /health is asked from this process 20 ms after each answer until every stream has every record,
// and its p99 and worst latency are taken (the worst is the longest the service's event loop was
// held), with the records per second delivered to all streams. A case still
// delivering after --deadline seconds is stopped and says so. (b) Four followers that never read
// (their sockets paused) open a stream from 7 days back over --history records of that week: the
// service's resident set is sampled every 100 ms for --history-seconds, its growth is the most above
// what it was before they came.
// Run: node_modules/.bin/node bench/follow-scale.ts [--before <commit>] [--records 16000,100000]
//      [--streams 1,4] [--deadline 90] [--history 200000] [--history-seconds 20] (about 10 minutes).
//      Prints markdown for docs/benchmarks.md.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { cpus, loadavg, platform, totalmem } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { root, treeAt } from "./tree-at.ts";

const API_KEY = "bench-key-0123456789abcdef";
const PROJECT = "bench-project";
const HISTORY_DAYS = 7;
/** main's last commit before issue 40. */
const LAST_BEFORE_ISSUE_40 = "1870922";

const { values: args } = parseArgs({
  options: {
    before: { type: "string", default: LAST_BEFORE_ISSUE_40 },
    records: { type: "string", default: "16000,100000" },
    streams: { type: "string", default: "1,4" },
    deadline: { type: "string", default: "90" },
    history: { type: "string", default: "200000" },
    "history-seconds": { type: "string", default: "20" },
    serve: { type: "string" },
    "history-rows": { type: "string" },
  },
});

/**
 * The service of the tree at `tree` on DuckDB, a poll every second and the default lag, on a free
 * port it prints; `history` records over the last 7 days, then on stdin `burst <n>`: n records
 * within the lag, answered `loaded` once the engine holds them.
 */
async function serve(tree: string, history: number): Promise<void> {
  const load = (path: string) => import(pathToFileURL(join(tree, path)).href);
  const { serviceApp } = await load("src/app.ts");
  const { createDuckDbEngine } = await load("src/engines/duckdb.ts");
  const { configFrom } = await load("test/support/config-from.ts");
  const { replaceTables } = await load("test/support/duckdb-tables.ts");
  const { edgeLog } = await load("test/support/fixtures.ts");
  const { dateToMicros, formatTimestamp } = await load("src/time.ts");
  const now = (): bigint => dateToMicros(new Date());
  const record = (micros: bigint, id: string) =>
    edgeLog(formatTimestamp(micros), {
      project: PROJECT,
      id,
      message: `GET | 200 | /rest/v1/todos?select=* | ${id}`,
    });
  const start = now();
  const week = BigInt(HISTORY_DAYS) * 86_400_000_000n;
  const rows = Array.from({ length: history }, (_, i) =>
    record(start - week + (BigInt(i) * week) / BigInt(history || 1), `history-${i}`),
  );
  const engine = await createDuckDbEngine();
  await replaceTables(engine, { edge_logs: rows });
  const app = await serviceApp(
    configFrom({
      auth: { apiKeys: [API_KEY] },
      rateLimitPerMinute: 1_000_000,
      follow: { intervalMs: 1_000, maxPerCredential: 100 },
    }),
    { engine },
  );
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  console.log(new URL(address).port);
  for await (const line of createInterface({ input: process.stdin })) {
    const count = Number(line.split(" ")[1]);
    // Within the last second: after the streams opened, well within the lag.
    const at = now() - 1_000_000n;
    const burst = Array.from({ length: count }, (_, i) =>
      record(at + (BigInt(i) * 1_000_000n) / BigInt(count), `burst-${i}`),
    );
    await replaceTables(engine, { edge_logs: [...rows, ...burst] });
    console.log("loaded");
  }
}

interface Service {
  child: ChildProcess;
  port: number;
  lines: AsyncIterator<string>;
}

async function start(tree: string, history = 0): Promise<Service> {
  const child = spawn(
    process.execPath,
    [join(root, "bench/follow-scale.ts"), "--serve", tree, "--history-rows", String(history)],
    { cwd: tree, stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[
    Symbol.asyncIterator
  ]();
  const port = Number((await lines.next()).value);
  return { child, port, lines };
}

async function stop(service: Service): Promise<void> {
  const exited = new Promise((resolve) => service.child.once("exit", resolve));
  service.child.kill();
  await exited;
}

const followPath = (since = "") =>
  `/api/endpoints/logs.all/follow?project=${PROJECT}&project_tier=PRO${since && `&since=${since}`}`;

/** Where a record's event starts in an event stream. */
const RECORD = "\n\nid: ";

/** An SSE stream read as it comes; `records()` counts the records' events so far. */
function openStream(port: number) {
  let records = 0;
  let tail = "";
  const opened = new Promise<void>((resolve, reject) => {
    const ask = request(
      { host: "127.0.0.1", port, path: followPath(), headers: { "x-api-key": API_KEY } },
      (response) => {
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          // Each record is an event of its own that starts with its id; the start and end events
          // start with their names.
          const text = tail + chunk;
          for (let at = text.indexOf(RECORD); at !== -1; at = text.indexOf(RECORD, at + 1)) {
            records++;
          }
          tail = text.slice(-RECORD.length + 1);
        });
        resolve();
      },
    );
    ask.on("error", reject);
    ask.end();
  });
  return { opened, records: () => records };
}

/** Milliseconds /health takes to answer; given up after `withinMs`, which it then took at least. */
function health(port: number, withinMs: number): Promise<number> {
  const started = performance.now();
  const took = () => performance.now() - started;
  return new Promise((resolve, reject) => {
    const ask = request({ host: "127.0.0.1", port, path: "/health" }, (response) => {
      response.resume();
      response.on("end", () => resolve(took()));
    });
    ask.setTimeout(withinMs, () => {
      resolve(took());
      ask.destroy();
    });
    ask.on("error", (error) => (ask.destroyed ? undefined : reject(error)));
    ask.end();
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
};

interface TailFigures {
  p99: number;
  worst: number;
  perSecond: number;
  /** Records every stream had when the deadline stopped the case; undefined when all came. */
  stoppedAt?: number;
}

async function tail(tree: string, records: number, streams: number): Promise<TailFigures> {
  const service = await start(tree);
  try {
    const opened = Array.from({ length: streams }, () => openStream(service.port));
    await Promise.all(opened.map((stream) => stream.opened));
    await sleep(1_500);
    service.child.stdin?.write(`burst ${records}\n`);
    await service.lines.next();
    const began = performance.now();
    const deadline = began + Number(args.deadline) * 1000;
    const latencies: number[] = [];
    const delivered = () => Math.min(...opened.map((stream) => stream.records()));
    while (delivered() < records && performance.now() < deadline) {
      latencies.push(await health(service.port, deadline - performance.now()));
      await sleep(20);
    }
    const seconds = (performance.now() - began) / 1000;
    const all = opened.reduce((sum, stream) => sum + stream.records(), 0);
    return {
      p99: percentile(latencies, 99),
      worst: Math.max(...latencies),
      perSecond: all / seconds,
      ...(delivered() < records && { stoppedAt: delivered() }),
    };
  } finally {
    await stop(service);
  }
}

const residentMiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;

/** A follower that sends its request and never reads: its socket paused from the start. */
function stalledFollower(port: number): Socket {
  const socket = connect(port, "127.0.0.1");
  socket.write(
    `GET ${followPath(`${HISTORY_DAYS}d`)} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: ${API_KEY}\r\nAccept: text/event-stream\r\n\r\n`,
  );
  socket.pause();
  return socket;
}

async function stalled(tree: string, history: number): Promise<number> {
  const service = await start(tree, history);
  const pid = service.child.pid as number;
  try {
    await sleep(2_000);
    const before = residentMiB(pid);
    const sockets = Array.from({ length: Number(process.env.STALLED ?? 4) }, () =>
      stalledFollower(service.port),
    );
    let most = before;
    const until = performance.now() + Number(args["history-seconds"]) * 1000;
    while (performance.now() < until) {
      most = Math.max(most, residentMiB(pid));
      await sleep(100);
    }
    for (const socket of sockets) socket.destroy();
    return most - before;
  } finally {
    await stop(service);
  }
}

async function compare(): Promise<void> {
  const trees = [
    { name: `before (${args.before})`, tree: treeAt(String(args.before), "follow-scale-before") },
    { name: "after", tree: root },
  ];
  const tails: string[] = [];
  for (const records of String(args.records).split(",").map(Number)) {
    for (const streams of String(args.streams).split(",").map(Number)) {
      for (const { name, tree } of trees) {
        const figures = await tail(tree, records, streams);
        const delivery =
          figures.stoppedAt === undefined
            ? `${figures.perSecond.toFixed(0)}`
            : `stopped after ${args.deadline} s, ${figures.stoppedAt} of ${records} per stream sent (${figures.perSecond.toFixed(0)}/s)`;
        tails.push(
          `| ${records.toLocaleString("en")} | ${streams} | ${name} | ${figures.p99.toFixed(0)} | ${figures.worst.toFixed(0)} | ${delivery} |`,
        );
        console.error(tails.at(-1));
      }
    }
  }
  const history = Number(args.history);
  const growths: string[] = [];
  for (const { name, tree } of trees) {
    growths.push(`| ${name} | ${(await stalled(tree, history)).toFixed(0)} |`);
    console.error(growths.at(-1));
  }
  console.log(`Machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${platform()}, Node ${process.versions.node}; load average at the end ${loadavg()
    .map((load) => load.toFixed(1))
    .join(" ")}.

(a) Records arriving at once within the follow lag, to streams of one parameter set (Server-Sent Events):

| records | streams | tree | /health p99 ms | /health worst ms | records/s delivered (all streams) |
| ---: | ---: | --- | ---: | ---: | --- |
${tails.join("\n")}

(b) Four followers that never read, from ${HISTORY_DAYS} days back over ${history.toLocaleString("en")} records of that week, for ${args["history-seconds"]} s:

| tree | RSS growth MiB |
| --- | ---: |
${growths.join("\n")}`);
}

if (args.serve !== undefined) await serve(args.serve, Number(args["history-rows"] ?? 0));
else await compare();
