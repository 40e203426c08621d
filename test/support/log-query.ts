// log-query, the command-line client, run as a user runs it (bin/log-query.js in a process of its
// own), and the service it talks to as `npm start` runs it, on the embedded engine with live exports
// dropped into LOCAL_DATA and no CURSOR_SECRET; the processes are killed after each test.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect } from "vitest";
import { start } from "./service-process.ts";

export const KEY = "cli-test-key-0123456789";
export const CLI = new URL("../../bin/log-query.js", import.meta.url).pathname;
// Longer than an export file takes to be loaded (two polls a second apart) plus the 1.5 s by which
// the tests' late records are late.
export const LAG_SECONDS = 6;

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill("SIGKILL");
});

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs log-query with `args`, the key in its environment unless `env` says otherwise. */
export function cli(
  args: string[],
  env: Record<string, string> = {},
  cwd?: string,
  { script = CLI } = {},
): Promise<Ran> & { child: ChildProcess } {
  const child = spawn(process.execPath, [script, ...args], {
    env: { PATH: process.env.PATH, LOG_QUERY_KEY: KEY, ...env },
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const done = new Promise<Ran>((resolve) =>
    child.once("close", (code) => resolve({ code, stdout, stderr })),
  ) as Promise<Ran> & { child: ChildProcess };
  done.child = child;
  return done;
}

/** A LOCAL_DATA folder that records are dropped into, one export file per batch. */
export function exports() {
  const folder = mkdtempSync(join(tmpdir(), "cli-exports-"));
  const all: { id: string; timestamp: string }[] = [];
  let files = 0;
  // The service starts only on a folder with an export in it: one of another project's.
  writeFileSync(
    join(folder, "edge_logs-start.ndjson"),
    `${JSON.stringify({ id: "theirs", timestamp: new Date().toISOString(), event_message: "x", project: "other", metadata: [] })}\n`,
  );
  return {
    folder,
    all,
    /** Writes one export file of records at the given instants (epoch ms), ids made unique. */
    drop(instants: number[], label: string) {
      const records = instants.map((ms, i) => ({
        id: `${label}-${String(i).padStart(4, "0")}`,
        timestamp: new Date(ms).toISOString().replace("Z", "000Z"),
        event_message: `GET | 200 | ${label} ${i}`,
        project: "acme",
        metadata: [{ request: [], response: [{ status_code: 200 }] }],
      }));
      all.push(...records.map(({ id, timestamp }) => ({ id, timestamp })));
      writeFileSync(
        join(folder, `edge_logs-${String(files++).padStart(6, "0")}.ndjson`),
        `${records.map((r) => JSON.stringify(r)).join("\n")}\n`,
      );
    },
  };
}

/**
 * The service over `folder`, its exports polled every second, records settled after LAG_SECONDS;
 * no CURSOR_SECRET, as `npm start` has none: it keeps the secret it makes in the folder it starts
 * in, one beside each folder of exports, where a restart over the same exports finds it again.
 */
export function service(folder: string, extra: Record<string, string> = {}) {
  const checkout = `${folder}-checkout`;
  mkdirSync(checkout, { recursive: true });
  return start(
    {
      API_KEYS: KEY,
      LOCAL_DATA: folder,
      LOCAL_DATA_POLL_SECONDS: "1",
      LOGS_FOLLOW_LAG_SECONDS: String(LAG_SECONDS),
      LOGS_FOLLOW_INTERVAL_SECONDS: "1",
      ...extra,
    },
    [],
    checkout,
  );
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Until the service has loaded the exports its folder held at startup (/ready). */
export async function loaded(baseUrl: string): Promise<void> {
  await expect
    .poll(async () => (await fetch(`${baseUrl}/ready`)).status, { interval: 100 })
    .toBe(200);
}

/**
 * Until a settled run reaches past `records` and past now: every export file dropped so far is
 * loaded, and the service's watermark (/metrics) is LAG_SECONDS beyond the newest of them.
 */
export async function settled(baseUrl: string, records: { timestamp: string }[]): Promise<void> {
  const instants = records.map((record) => Date.parse(record.timestamp));
  const past = Math.max(Date.now(), ...instants.map((ms) => ms + LAG_SECONDS * 1000));
  const watermarkMs = async () =>
    (await metricOf(baseUrl, "query_service_data_watermark_seconds")) * 1000;
  await expect.poll(watermarkMs, { interval: 200, timeout: 30_000 }).toBeGreaterThan(past);
}

/** A metric of the service's /metrics (the tests' key); NaN when absent. */
async function metricOf(baseUrl: string, name: string): Promise<number> {
  const response = await fetch(`${baseUrl}/metrics`, { headers: { "x-api-key": KEY } });
  const [, value] = new RegExp(`^${name} (\\S+)$`, "m").exec(await response.text()) ?? [];
  return Number(value);
}

/** Record ids in the order the service sends them: timestamp, then id. */
export const inOrder = (records: { id: string; timestamp: string }[]) =>
  [...records]
    .sort((a, b) =>
      a.timestamp === b.timestamp ? (a.id < b.id ? -1 : 1) : a.timestamp < b.timestamp ? -1 : 1,
    )
    .map((r) => r.id);

export const ids = (ndjson: string) =>
  ndjson
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { id: string }).id);

/** An export of acme's records to out.ndjson, its state in state.json, the first run from 1h back. */
export const exportArgs = (url: string) => [
  ...["export", "--url", url, "--state", "state.json", "--out", "out.ndjson"],
  ...["--project", "acme", "--since", "1h"],
];

/** A `log-query tail` of acme's records, NDJSON, and what it printed so far. */
export function tailing(url: string, env: Record<string, string> = {}) {
  const tail = cli(["tail", "--url", url, "--project", "acme", "--format", "ndjson"], env);
  let printed = "";
  tail.child.stdout?.on("data", (chunk) => {
    printed += chunk;
  });
  return {
    printed: () => ids(printed),
    /** Resolves once the service holds the tail's follow stream open. */
    async connected() {
      await expect.poll(() => metricOf(url, "query_service_follow_streams_open")).toBe(1);
    },
    /** Resolves once `count` records were printed. */
    async waitFor(count: number) {
      for (let waited = 0; ids(printed).length < count; waited += 100) {
        expect(waited, printed).toBeLessThan(30_000);
        await sleep(100);
      }
    },
  };
}

/** Stops the service with SIGTERM and waits for it to exit. */
export async function stop(server: { child: ChildProcess }) {
  server.child.kill("SIGTERM");
  await new Promise((resolve) => server.child.once("exit", resolve));
}
