// log-query, the command-line client, run as a user runs it (bin/log-query.js in a process of its
// own) against the service as `npm start` runs it, on the embedded engine with live exports dropped
// into LOCAL_DATA, and no CURSOR_SECRET: export runs chained while records keep arriving, export
// killed with SIGKILL at random points, tail and export across a restart of the service, tail
// across drops around late records, query,
// endpoints and the exit codes.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { buildApp } from "../src/app.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import { configFrom } from "./support/config-from.ts";
import { codeBlocks, docFiles, runShell, shellCommands } from "./support/doc-commands.ts";
import { replaceTables } from "./support/duckdb-tables.ts";
import { edgeLog, micros, SECOND, shift } from "./support/fixtures.ts";
import { freePort } from "./support/free-port.ts";
import { start } from "./support/service-process.ts";

const KEY = "cli-test-key-0123456789";
const CLI = new URL("../bin/log-query.js", import.meta.url).pathname;
// Longer than an export file takes to be loaded (two polls a second apart) plus the 1.5 s by which
// the tests' late records are late.
const LAG_SECONDS = 6;

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill("SIGKILL");
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs log-query with `args`, the key in its environment unless `env` says otherwise. */
function cli(
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
function exports() {
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
function service(folder: string, extra: Record<string, string> = {}) {
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Record ids in the order the service sends them: timestamp, then id. */
const inOrder = (records: { id: string; timestamp: string }[]) =>
  [...records]
    .sort((a, b) =>
      a.timestamp === b.timestamp ? (a.id < b.id ? -1 : 1) : a.timestamp < b.timestamp ? -1 : 1,
    )
    .map((r) => r.id);

const ids = (ndjson: string) =>
  ndjson
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { id: string }).id);

/** An export of acme's records to out.ndjson, its state in state.json, the first run from 1h back. */
const exportArgs = (url: string) => [
  ...["export", "--url", url, "--state", "state.json", "--out", "out.ndjson"],
  ...["--project", "acme", "--since", "1h"],
];

describe("log-query export", () => {
  it("chained 20 times while records arrive, late ones and ties included, writes each record once, in order", async () => {
    const data = exports();
    data.drop([Date.now() - 600_000, Date.now() - 300_000], "before");
    const { baseUrl } = await service(data.folder);
    const cwd = mkdtempSync(join(tmpdir(), "cli-export-"));
    const args = exportArgs(baseUrl);
    for (let run = 0; run < 20; run++) {
      const now = Date.now();
      // Five records on one millisecond, one a moment later, and one arriving late: its time a
      // second and a half back, inside the lag.
      data.drop([now, now, now, now, now, now + 1, now - 1_500], `run${run}`);
      const { code, stderr } = await cli(args, {}, cwd);
      expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
      await sleep(150);
    }
    // Everything settles once the lag has passed after the last arrival and the last load.
    await sleep((LAG_SECONDS + 3) * 1000);
    expect((await cli(args, {}, cwd)).code).toBe(0);
    expect(ids(readFileSync(join(cwd, "out.ndjson"), "utf8"))).toEqual(inOrder(data.all));
  }, 120_000);

  it("killed with SIGKILL at 10 random points, still writes each record once after the next runs", async () => {
    const data = exports();
    const now = Date.now();
    // A backlog of 3 000 records over the last half hour, so that a run takes long enough to be cut.
    data.drop(
      Array.from({ length: 3_000 }, (_, i) => now - 1_800_000 + i * 500),
      "backlog",
    );
    const { baseUrl } = await service(data.folder);
    await sleep(2_500);
    const cwd = mkdtempSync(join(tmpdir(), "cli-export-"));
    const args = exportArgs(baseUrl);
    const out = join(cwd, "out.ndjson");
    const size = () => (existsSync(out) ? statSync(out).size : -1);
    let killed = 0;
    for (let kill = 0; kill < 10; kill++) {
      data.drop([Date.now(), Date.now(), Date.now() - 1_000], `kill${kill}`);
      const before = size();
      const run = cli(args, {}, cwd);
      let finished = false;
      void run.then(() => {
        finished = true;
      });
      // Killed while it writes: once the file changed (cut back or grown), at a random moment after.
      while (!finished && size() === before) await sleep(2);
      await sleep(Math.random() * 30);
      run.child.kill("SIGKILL");
      if ((await run).code === null) killed++;
    }
    // Most runs were cut before they finished (a run that beat its kill is a whole run).
    expect(killed).toBeGreaterThanOrEqual(5);
    await sleep((LAG_SECONDS + 3) * 1000);
    for (let run = 0; run < 2; run++) expect((await cli(args, {}, cwd)).code).toBe(0);
    expect(ids(readFileSync(join(cwd, "out.ndjson"), "utf8"))).toEqual(inOrder(data.all));
  }, 120_000);
});

/** A `log-query tail` of acme's records, NDJSON, and what it printed so far. */
function tailing(url: string, env: Record<string, string> = {}) {
  const tail = cli(["tail", "--url", url, "--project", "acme", "--format", "ndjson"], env);
  let printed = "";
  tail.child.stdout?.on("data", (chunk) => {
    printed += chunk;
  });
  return {
    printed: () => ids(printed),
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
async function stop(server: { child: ChildProcess }) {
  server.child.kill("SIGTERM");
  await new Promise((resolve) => server.child.once("exit", resolve));
}

describe("log-query tail", () => {
  it("resumes after the service restarts without CURSOR_SECRET: nothing lost, nothing printed twice", async () => {
    const data = exports();
    const port = String(await freePort());
    let server = await service(data.folder, { PORT: port });
    const tail = tailing(server.baseUrl);
    await sleep(1_000);
    data.drop([Date.now(), Date.now(), Date.now() + 1], "first");
    await tail.waitFor(3);

    await stop(server);
    // Records arriving while the service is down are found when it is back.
    data.drop([Date.now(), Date.now() + 1], "while-down");
    server = await service(data.folder, { PORT: port });
    data.drop([Date.now() + 500, Date.now() + 500], "after");
    await tail.waitFor(7);
    await sleep(1_500);
    expect(tail.printed()).toEqual(inOrder(data.all));
  }, 90_000);
});

describe("a restart of the service without CURSOR_SECRET", () => {
  it("keeps an export's checkpoint and a page cursor good: the next run writes only the records after it", async () => {
    const data = exports();
    const first = Date.now() - 600_000;
    // A page and a half, settled long ago.
    data.drop(
      Array.from({ length: 150 }, (_, i) => first + i * 1_000),
      "before",
    );
    const port = String(await freePort());
    let server = await service(data.folder, { PORT: port });
    const cwd = mkdtempSync(join(tmpdir(), "cli-export-"));
    const args = exportArgs(server.baseUrl);
    expect(await cli(args, {}, cwd)).toMatchObject({ code: 0, stderr: "" });
    const page = `${server.baseUrl}/api/endpoints/logs.all?project=acme&project_tier=FREE`;
    const headers = { "x-api-key": KEY };
    const link = (await fetch(page, { headers })).headers.get("link") ?? "";
    const cursor = /cursor=([\w-]+)>/.exec(link)?.[1];

    await stop(server);
    data.drop([Date.now(), Date.now() + 1], "after-restart");
    server = await service(data.folder, { PORT: port });
    const next = await fetch(`${page}&cursor=${cursor}`, { headers });
    expect(next.status).toBe(200);
    const { result } = (await next.json()) as { result: { id: string }[] };
    expect(result.map((record) => record.id)).toEqual(inOrder(data.all).slice(0, 50).reverse());

    await sleep((LAG_SECONDS + 2) * 1000);
    expect(await cli(args, {}, cwd)).toMatchObject({ code: 0, stderr: "" });
    expect(ids(readFileSync(join(cwd, "out.ndjson"), "utf8"))).toEqual(inOrder(data.all));
  }, 60_000);
});

describe("log-query tail around late records", () => {
  it("prints B, then L and L2 that arrive late, each once, its connection dropped after each", async () => {
    const NOW = "2026-11-21T05:17:42.123456Z";
    const engine = await createDuckDbEngine({ now: () => micros(NOW) });
    const stored = [edgeLog(shift(NOW, -SECOND), { id: "before", project: "acme" })];
    await replaceTables(engine, { edge_logs: stored });
    const app = await buildApp(
      configFrom({ auth: { apiKeys: [KEY] }, follow: { intervalMs: 40, lagMs: 60_000 } }),
      { engine, follow: { clock: () => micros(NOW) } },
    );
    onTestFinished(async () => {
      await app.close();
      await engine.close();
    });
    const metric = (name: string) => async () => {
      const metrics = (await app.inject({ url: "/metrics", headers: { "x-api-key": KEY } })).body;
      return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(metrics)?.[1]);
    };
    const streamsOpen = metric("query_service_follow_streams_open");
    const tail = tailing(await app.listen({ host: "127.0.0.1", port: 0 }));
    const arriving = [40n, 10n, 20n].map((s, i) =>
      edgeLog(shift(NOW, s * SECOND), { id: ["B", "L", "L2"][i] as string, project: "acme" }),
    );
    for (const [i, row] of arriving.entries()) {
      await expect.poll(streamsOpen, { timeout: 10_000 }).toBe(1);
      stored.push(row);
      await replaceTables(engine, { edge_logs: stored });
      await tail.waitFor(i + 1);
      // Dropped: tail reconnects with the last event id it had, half a second later.
      app.server.closeAllConnections();
      await expect.poll(streamsOpen).toBe(0);
    }
    await expect.poll(streamsOpen, { timeout: 10_000 }).toBe(1);
    // Two polls later the last reconnect's catch-up is over: anything it sent again is printed.
    const polls = await metric("query_service_follow_polls_total")();
    await expect.poll(metric("query_service_follow_polls_total")).toBeGreaterThan(polls + 1);
    expect(tail.printed()).toEqual(["B", "L", "L2"]);
  }, 30_000);
});

describe("log-query tail before its first record", () => {
  // A key whose scope fixes since: a reconnect may give no start of its own that differs.
  const SCOPED_KEY = "cli-scoped-key-0123456789abcdef";
  const keysFile = join(mkdtempSync(join(tmpdir(), "cli-keys-")), "keys.json");
  writeFileSync(
    keysFile,
    JSON.stringify({
      keys: [
        {
          name: "since-pinned",
          sha256: createHash("sha256").update(SCOPED_KEY).digest("hex"),
          scopes: [{ endpoint: "logs.all", fixed_params: { since: "1h" } }],
        },
      ],
    }),
  );

  it.each([
    ["a full-access key", KEY],
    ["a key whose scope fixes since", SCOPED_KEY],
  ])(
    "finds what was logged while the service was away, though it had printed nothing yet: %s",
    async (_, key) => {
      const data = exports();
      const port = String(await freePort());
      let server = await service(data.folder, { PORT: port, API_KEYS_FILE: keysFile });
      const tail = tailing(server.baseUrl, { LOG_QUERY_KEY: key });
      await sleep(1_000);
      await stop(server);
      data.drop([Date.now(), Date.now() + 1], "while-down");
      server = await service(data.folder, { PORT: port, API_KEYS_FILE: keysFile });
      await tail.waitFor(2);
      expect(tail.printed()).toEqual(inOrder(data.all));
    },
    60_000,
  );
});

describe("log-query query and endpoints", () => {
  it("follows every page with --all, as one JSON document, NDJSON stream or CSV table", async () => {
    const data = exports();
    data.drop(
      Array.from({ length: 250 }, (_, i) => Date.now() - 60_000 - i * 100),
      "paged",
    );
    const { baseUrl } = await service(data.folder);
    await sleep(2_500);
    const query = ["query", "logs.all", "project=acme", "project_tier=FREE", "--url", baseUrl];
    const json = await cli([...query, "--all"]);
    expect(json.code, json.stderr).toBe(0);
    const expected = inOrder(data.all).reverse();
    expect(
      (JSON.parse(json.stdout) as { result: { id: string }[] }).result.map((r) => r.id),
    ).toEqual(expected);
    expect(ids((await cli([...query, "--all", "--format", "ndjson"])).stdout)).toEqual(expected);
    const csv = (await cli([...query, "--all", "--format", "csv"])).stdout.trimEnd().split(/\r?\n/);
    expect(csv[0]).toBe("id,timestamp,event_message,metadata");
    expect(csv.slice(1).map((line) => line.split(",")[0])).toEqual(expected);
    const one = await cli(query);
    expect((JSON.parse(one.stdout) as { result: unknown[] }).result).toHaveLength(100);
  }, 60_000);

  it("export takes a state's length only for the file it was measured on", async () => {
    const data = exports();
    data.drop([Date.now() - 60_000, Date.now() - 50_000], "kept");
    const { baseUrl } = await service(data.folder);
    await sleep(2_500);
    const cwd = mkdtempSync(join(tmpdir(), "cli-export-"));
    const args = [
      "export",
      "--url",
      baseUrl,
      "--state",
      "state.json",
      "--project",
      "acme",
      "--since",
      "1h",
    ];
    expect((await cli([...args, "--out", "first.ndjson"], {}, cwd)).code).toBe(0);
    const archive = `${"an earlier line of another file\n".repeat(200)}`;
    writeFileSync(join(cwd, "archive.ndjson"), archive);
    data.drop([Date.now() - 40_000], "later");
    await sleep((LAG_SECONDS + 3) * 1000);
    expect((await cli([...args, "--out", "archive.ndjson"], {}, cwd)).code).toBe(0);
    const written = readFileSync(join(cwd, "archive.ndjson"), "utf8");
    expect(written.startsWith(archive)).toBe(true);
    expect(ids(written.slice(archive.length))).toEqual(["later-0000"]);
  }, 60_000);

  it("lists the endpoints the key may call", async () => {
    const { baseUrl } = await service(exports().folder);
    const listed = await cli(["endpoints", "--url", baseUrl]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^logs\.all \(followable\): /m);
    expect(listed.stdout).toMatch(/^ {2}project \(required\)/m);
  });

  it("says what went wrong in one line, with an exit code per kind", async () => {
    const { baseUrl } = await service(exports().folder);
    const url = ["--url", baseUrl];
    // A proxy that sends requests elsewhere, by a redirect or by a page's next link: the key is
    // not taken there, nor is the request retried.
    const redirecting = createServer((request, response) => {
      if (!request.url?.includes("linked=1")) {
        response.writeHead(301, { location: "https://logs.example.com/" }).end();
        return;
      }
      const link = '<https://logs.example.com/api/endpoints/logs.all?page=2>; rel="next"';
      response.writeHead(200, { "content-type": "application/json", link }).end('{"result":[]}');
    });
    await new Promise<void>((resolve) => redirecting.listen(0, "127.0.0.1", resolve));
    onTestFinished(() => void redirecting.close());
    const proxy = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`;
    const redirected =
      /redirects to https:\/\/logs\.example\.com\/, which log-query does not follow/;
    const cases: [string[], Record<string, string>, number, RegExp][] = [
      [["endpoints", ...url], { LOG_QUERY_KEY: "" }, 3, /no key: set LOG_QUERY_KEY/],
      [["endpoints", ...url], { LOG_QUERY_KEY: "wrong-key-0123456789" }, 3, /unauthorized: /],
      [["query", "no.such", ...url], {}, 4, /endpoint_not_found: /],
      // Each refused parameter on a line of its own: its name and why.
      [
        ["query", "logs.all", "project=acme", "limit=x", ...url],
        {},
        2,
        /^log-query: invalid_params: [^\n]+\n {2}project_tier: \S[^\n]*\n {2}limit: \S[^\n]*\n$/,
      ],
      [["tail", "--key", KEY, ...url], {}, 2, /Unknown option '--key'/],
      [["export", "--project", "acme", ...url], {}, 2, /--state is required/],
      [["endpoints", "--url", "http://127.0.0.1:9"], {}, 6, /cannot reach http:\/\/127\.0\.0\.1:9/],
      [["endpoints", "--url", proxy], {}, 2, redirected],
      [["tail", "--project", "acme", "--url", proxy], {}, 2, redirected],
      [
        ["query", "logs.all", "linked=1", "--all", "--url", proxy],
        {},
        5,
        /linked to https:\/\/logs\.example\.com, which log-query does not send your key to/,
      ],
    ];
    for (const [args, env, code, message] of cases) {
      const ran = await cli(args, env);
      expect({ args, code: ran.code }).toEqual({ args, code });
      expect(ran.stderr).toMatch(message);
      expect(ran.stderr).not.toMatch(/\n {4}at /);
    }
  });
});

describe("the docs' log-query commands, run as written", () => {
  it("npm link puts log-query on the PATH; each line answers from npm start's service; the crontab line exports", async () => {
    const { baseUrl } = await start({ API_KEYS: KEY });
    const prefix = mkdtempSync(join(tmpdir(), "npm-prefix-"));
    const link = await runShell("npm link", { npm_config_prefix: prefix });
    expect(link.code, link.stderr).toBe(0);
    const env = {
      KEY,
      LOG_QUERY_URL: baseUrl,
      LOG_QUERY_KEY: "",
      PATH: `${join(prefix, "bin")}:${process.env.PATH}`,
    };
    const setKey = shellCommands().find(({ text }) => text.startsWith("export LOG_QUERY_KEY="));
    const lines = shellCommands().filter(({ text }) => text.startsWith("log-query "));
    expect(lines.length).toBeGreaterThan(3);
    for (const { file, line, text } of lines) {
      const cwd = mkdtempSync(join(tmpdir(), "log-query-doc-"));
      const ran = await runShell(`${setKey?.text}\n${text}`, env, { cwd, timeoutMs: 60_000 });
      expect({ where: `${file}:${line}`, code: ran.code, stderr: ran.stderr }).toEqual({
        where: `${file}:${line}`,
        code: 0,
        stderr: "",
      });
      expect(ran.stdout.length + (existsSync(join(cwd, "logs.ndjson")) ? 1 : 0)).toBeGreaterThan(0);
    }

    const [crontab] = docFiles().flatMap((file) =>
      codeBlocks(file).filter((b) => b.lang === "crontab"),
    );
    const command = crontab?.text.trim().split(/\s+/).slice(5).join(" ") as string;
    const home = mkdtempSync(join(tmpdir(), "cron-home-"));
    mkdirSync(join(home, "log-export"));
    writeFileSync(join(home, "log-export", "key"), `${KEY}\n`, { mode: 0o600 });
    for (let run = 0; run < 2; run++) {
      const ran = await runShell(command, { ...env, HOME: home });
      expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: "" });
    }
    const state = JSON.parse(readFileSync(join(home, "log-export", "state.json"), "utf8"));
    expect(state).toMatchObject({ cursor: expect.any(String), outBytes: expect.any(Number) });
    expect(
      ids(readFileSync(join(home, "log-export", "logs.ndjson"), "utf8")).length,
    ).toBeGreaterThan(0);
  }, 180_000);
});

describe("log-query installed under node_modules", () => {
  it("runs there too, where Node strips no types itself, saying nothing of it", async () => {
    // As `npx --package=<tarball>` lays it out: the package's files under node_modules, with its
    // dependencies beside them.
    const root = new URL("../", import.meta.url).pathname;
    const installed = join(
      mkdtempSync(join(tmpdir(), "npx-")),
      "node_modules",
      "log-usage-query-service",
    );
    for (const part of ["package.json", "bin", "src/cli"])
      cpSync(join(root, part), join(installed, part), { recursive: true });
    mkdirSync(join(installed, "node_modules"));
    for (const dependency of ["eventsource-parser", "csv-stringify", "zod"]) {
      symlinkSync(
        join(root, "node_modules", dependency),
        join(installed, "node_modules", dependency),
      );
    }
    const { baseUrl } = await service(exports().folder);
    const ran = await cli(["endpoints", "--url", baseUrl], {}, undefined, {
      script: join(installed, "bin", "log-query.js"),
    });
    expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: "" });
    expect(ran.stdout).toMatch(/^logs\.all /m);
  });
});
