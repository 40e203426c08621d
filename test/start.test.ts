// The service as a newcomer starts it (`npm start`'s command, embedded engine, demo data), asked
// every curl line of the docs as written.
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it, vi } from "vitest";
import {
  type CurlVariables,
  curlHome,
  runShell,
  shellCommands,
  statusesOf,
  streams,
} from "./support/doc-commands.ts";
import { freePort } from "./support/free-port.ts";
import { children, start, startAndExit } from "./support/service-process.ts";

const KEY = "start-test-key-0123456789";

/** Runs one of scripts/ as npm run would, and returns what it printed. */
async function runScript(
  script: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [script, ...args], {
    env: { PATH: process.env.PATH, ...env },
  });
  return stdout;
}

/** Runs the docs' `npm run key` command as written: the key it printed and its keys-file entry. */
async function keyFromDocs(): Promise<{ key: string; entry: unknown }> {
  const [command] = shellCommands().filter(({ text }) => text.startsWith("npm run key "));
  const { code, stdout, stderr } = await runShell(command?.text as string, {});
  expect(code, stderr).toBe(0);
  return {
    key: /^ {2}(\S+)$/m.exec(stdout)?.[1] as string,
    entry: JSON.parse(stdout.slice(stdout.indexOf("{"))),
  };
}

/** Runs the docs' commands that set JWT_SECRET and TOKEN, as written, in one shell: their values. */
async function tokenFromDocs(): Promise<{ JWT_SECRET: string; TOKEN: string }> {
  const commands = shellCommands().filter(({ text }) =>
    /^(export )?(JWT_SECRET|TOKEN)=/.test(text),
  );
  const script = [...commands.map(({ text }) => text), `printf '%s\\n' "$JWT_SECRET" "$TOKEN"`];
  const { code, stdout, stderr } = await runShell(script.join("\n"), {});
  expect(code, stderr).toBe(0);
  const [JWT_SECRET = "", TOKEN = ""] = stdout.trim().split("\n");
  return { JWT_SECRET, TOKEN };
}

describe("npm start", () => {
  it("answers every curl line of README.md and docs/ as written, the README's first three with rows", async () => {
    // test/docs.test.ts holds each of them to what this test can run.
    const curls = shellCommands().filter(({ text }) => text.startsWith("curl "));
    const acme = await keyFromDocs();
    const keysFile = join(mkdtempSync(join(tmpdir(), "keys-")), "keys.json");
    writeFileSync(keysFile, JSON.stringify({ keys: [acme.entry] }));
    const { JWT_SECRET, TOKEN } = await tokenFromDocs();
    const { baseUrl } = await start({
      API_KEYS: KEY,
      API_KEYS_FILE: keysFile,
      JWT_SECRET,
      // The operator's endpoint docs/endpoints.md adds.
      ENDPOINTS_DIR: "examples/endpoints",
      // New demo records every second, and followers asking for them as often.
      DEMO_DATA_INTERVAL_SECONDS: "1",
      LOGS_FOLLOW_INTERVAL_SECONDS: "1",
    });
    const env: CurlVariables & { CURL_HOME: string } = {
      KEY,
      ACME_KEY: acme.key,
      TOKEN,
      API_KEYS: KEY,
      CURL_HOME: curlHome(baseUrl, { statusOnStderr: true }),
    };

    const rowCounts: number[] = [];
    for (const { file, line, text } of curls) {
      const where = `${file}:${line}: ${text}`;
      if (streams(text)) {
        // A stream runs until stopped: its first record is enough.
        const { stdout } = await runShell(text, env, {
          until: (out) => out.includes("\n"),
          timeoutMs: 60_000,
        });
        const first = JSON.parse(stdout.split("\n")[0] as string);
        // A follow's record, or the fields of a watched value's newest row the line picks.
        const picked = /\| \{([\w, ]+)\}'$/.exec(text)?.[1];
        const fields = picked ? picked.split(", ") : ["timestamp", "event_message"];
        expect(Object.keys(first), where).toEqual(fields);
        continue;
      }
      const { code, stdout, stderr } = await runShell(text, env);
      expect({ code, statuses: statusesOf(stderr) }, where).toEqual({ code: 0, statuses: [200] });
      expect(stdout, where).not.toBe("");
      if (file === "README.md" && rowCounts.length < 3) {
        rowCounts.push((JSON.parse(stdout) as { result: unknown[] }).result.length);
      }
    }
    expect(rowCounts).toHaveLength(3);
    expect(Math.min(...rowCounts), "rows of the README's first three").toBeGreaterThan(0);
  }, 120_000);

  it("prints a generated key once, on stderr, and accepts it", async () => {
    const { baseUrl, stderr } = await start({});
    const key = /X-API-KEY: (\S+)/.exec(stderr())?.[1] as string;
    expect(key).toMatch(/^[\w-]{32}$/);
    const response = await fetch(`${baseUrl}/api/endpoints`, { headers: { "X-API-KEY": key } });
    expect(response.status).toBe(200);
  });

  it("stops at a bad setting with one line naming it", async () => {
    expect(await startAndExit({ PORT: "http" })).toEqual({
      code: 1,
      stderr: "Configuration error: PORT: expects a port number\n",
    });
  });

  it("stops at a taken port with one line naming PORT, before generating a key or data", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      expect(await startAndExit({ PORT: String(port) })).toEqual({
        code: 1,
        stderr: `Configuration error: PORT: 127.0.0.1:${port} is already in use\n`,
      });
    } finally {
      taken.close();
    }
  });

  it("says which package and command it needs when DuckDB's native build is missing", async () => {
    const { code, stderr } = await startAndExit({ API_KEYS: KEY }, [
      "--import",
      "./test/support/hide-duckdb-binding.ts",
    ]);
    const binding = `@duckdb/node-bindings-${process.platform}-${process.arch}`;
    expect(code).toBe(1);
    expect(stderr).toMatch(
      new RegExp(
        `^Startup error: DuckDB's native build for ${process.platform}-${process.arch} is not installed \\(package ${binding}\\); install it with: npm install --no-save ${binding}@\\S+\n$`,
      ),
    );
  });

  it("stops at a bad API_KEYS_FILE with one line naming it, before generating a key", async () => {
    expect(await startAndExit({ API_KEYS_FILE: "/no/such/keys.json" })).toEqual({
      code: 1,
      stderr: "Configuration error: API_KEYS_FILE /no/such/keys.json: cannot be read (ENOENT)\n",
    });
  });

  it("stops at a bad ALERT_RULES_FILE with one line naming the rule and the problem", async () => {
    const rules = join(mkdtempSync(join(tmpdir(), "rules-")), "rules.json");
    writeFileSync(
      rules,
      JSON.stringify({
        rules: [
          {
            name: "typo",
            endpoint: "functions.invocation-stats",
            params: { project: "default", interval: "1hr", functon_id: "hello" },
            condition: { newest_row: "error_count >= 10" },
            webhook: { url: "http://127.0.0.1:9/hook", secret: `whsec_${"A".repeat(32)}` },
          },
        ],
      }),
    );
    expect(await startAndExit({ API_KEYS: KEY, ALERT_RULES_FILE: rules })).toEqual({
      code: 1,
      stderr: `Configuration error: ALERT_RULES_FILE ${rules}: rule 1 ("typo"): params.functon_id: unknown parameter; this endpoint takes project, function_id, interval, from, to, bucket, max_points\n`,
    });
  });

  it("serves a key made by npm run key and a token made by npm run token, each within its scope", async () => {
    const made = await runScript("scripts/key.ts", [
      "--name",
      "acme",
      "--scope",
      "functions.invocation-stats:project=default",
    ]);
    const key = /^ {2}(\S+)$/m.exec(made)?.[1] as string;
    const entry = JSON.parse(made.slice(made.indexOf("{")));
    const keysFile = join(mkdtempSync(join(tmpdir(), "keys-")), "keys.json");
    writeFileSync(keysFile, JSON.stringify({ keys: [entry] }));
    const secret = "a-secret-of-at-least-32-bytes-0123456789";
    const token = (
      await runScript("scripts/token.ts", ["--name", "ops", "--scope", "logs.all"], {
        JWT_SECRET: secret,
      })
    ).trim();

    const { baseUrl, stderr } = await start({ API_KEYS_FILE: keysFile, JWT_SECRET: secret });
    expect(stderr()).not.toContain("X-API-KEY");
    const status = async (path: string, credential: string) =>
      (await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${credential}` } }))
        .status;
    expect(await status("/api/endpoints/functions.invocation-stats?interval=1day", key)).toBe(200);
    expect(await status("/api/endpoints/logs.all?project=default&project_tier=PRO", key)).toBe(403);
    expect(await status("/api/endpoints/logs.all?project=default&project_tier=PRO", token)).toBe(
      200,
    );
    expect(await status("/api/endpoints/usage.api-counts?project=x&interval=hourly", token)).toBe(
      403,
    );
  });

  it("makes a key and a token scoped to an operator's endpoint when ENDPOINTS_DIR names its folder", async () => {
    const ENDPOINTS_DIR = new URL("./fixtures/endpoints/", import.meta.url).pathname;
    const scope = ["--scope", "edge.errors:project=default"];
    const made = await runScript("scripts/key.ts", ["--name", "ops", ...scope], { ENDPOINTS_DIR });
    const key = /^ {2}(\S+)$/m.exec(made)?.[1] as string;
    const keysFile = join(mkdtempSync(join(tmpdir(), "keys-")), "keys.json");
    writeFileSync(keysFile, JSON.stringify({ keys: [JSON.parse(made.slice(made.indexOf("{")))] }));
    const secret = "a-secret-of-at-least-32-bytes-0123456789";
    const token = (
      await runScript("scripts/token.ts", ["--name", "ops", ...scope], {
        ENDPOINTS_DIR,
        JWT_SECRET: secret,
      })
    ).trim();

    const { baseUrl } = await start({ API_KEYS_FILE: keysFile, JWT_SECRET: secret, ENDPOINTS_DIR });
    for (const credential of [key, token]) {
      const answer = await fetch(`${baseUrl}/api/endpoints/edge.errors?plan=FREE`, {
        headers: { authorization: `Bearer ${credential}` },
      });
      expect(answer.status).toBe(200);
    }
  });

  it("answers every request in flight at SIGTERM, then exits 0", async () => {
    const [port, management] = [await freePort(), await freePort()];
    // Two listeners, so the service's own address is the one given, not the first logged.
    const baseUrl = `http://127.0.0.1:${port}`;
    const { child, stdout } = await start({
      API_KEYS: KEY,
      ENGINE_MAX_CONCURRENCY: "2",
      PORT: String(port),
      MANAGEMENT_PORT: String(management),
    });
    // start() resolves at the first listener logged, which may be the management one.
    await vi.waitFor(() => expect(stdout()).toContain(`Server listening at ${baseUrl}`));
    const exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    const answers = Array.from({ length: 50 }, async (_, i) => {
      const end = new Date(Date.now() - i * 60_000).toISOString();
      const response = await fetch(
        `${baseUrl}/api/endpoints/logs.all?project=default&project_tier=PRO&iso_timestamp_end=${end}`,
        { headers: { "X-API-KEY": KEY } },
      );
      const body = (await response.json()) as { error?: { code: string } };
      return response.status === 200 ? "200" : `${response.status} ${body.error?.code}`;
    });
    // In flight: all 50 received, as the service counts them (running, queued or answered).
    const received = async () => {
      const text = await (await fetch(`http://127.0.0.1:${management}/metrics`)).text();
      const sum = (name: string) =>
        [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, "gm"))].reduce(
          (total, [, value]) => total + Number(value),
          0,
        );
      return (
        sum("query_service_engine_running") +
        sum("query_service_engine_queued") +
        sum("query_service_requests_total")
      );
    };
    await expect.poll(received, { interval: 20 }).toBe(50);
    child.kill("SIGTERM");
    const statuses = await Promise.all(answers);
    expect(new Set(statuses)).toEqual(new Set(["200", "503 shutting_down"]));
    expect(await exited).toBe(0);
  });

  it("serves /health, /ready and /metrics on MANAGEMENT_PORT without a credential", async () => {
    const port = await freePort();
    await start({ API_KEYS: KEY, MANAGEMENT_PORT: String(port) });
    for (const path of ["/health", "/ready", "/metrics"]) {
      expect((await fetch(`http://127.0.0.1:${port}${path}`)).status, path).toBe(200);
    }
  });

  it("logs JSON lines, or readable lines with LOG_FORMAT=pretty (npm run dev)", async () => {
    const json = await start({ API_KEYS: KEY });
    expect(json.stdout().split("\n")[0]).toMatch(/^\{"level":30,/);
    const pretty = await start({ API_KEYS: KEY, LOG_FORMAT: "pretty" });
    expect(pretty.stdout()).toMatch(/^\[[\d:.]+\] INFO \(\d+\): /m);
    expect(pretty.stdout()).not.toContain('{"level"');
  });

  it("logs readable lines when its output is a terminal, as npm start in a shell", async () => {
    // util-linux's `script` gives the service a pseudo-terminal for its output and copies it here.
    const child = spawn(
      "script",
      [
        "--quiet",
        "--flush",
        "--return",
        "--command",
        `exec ${process.execPath} src/main.ts`,
        "/dev/null",
      ],
      {
        env: { PATH: process.env.PATH, PORT: "0", API_KEYS: KEY, LOG_LEVEL: "info" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.push(child);
    let screen = "";
    child.stdout?.on("data", (chunk) => {
      screen += chunk;
    });
    // The service's pid, from its log: `INFO (pid):` in readable lines, `"pid":` in JSON ones.
    const pid = await vi.waitFor(
      () => {
        expect(screen).toContain("Server listening at");
        const [, readable, json] = /INFO\S* \((\d+)\)|"pid":(\d+)/.exec(screen) ?? [];
        return Number(readable ?? json);
      },
      { timeout: 20_000, interval: 100 },
    );
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(pid, "SIGTERM");
    expect(await exited).toBe(0);
    expect(screen).not.toContain('{"level"');
    expect(screen).toMatch(/^\S*\[[\d:.]+\] \S*INFO\S* \(\d+\): /m);
  });

  it("serves LOCAL_DATA exports that appear while it runs, without a restart", async () => {
    const folder = mkdtempSync(join(tmpdir(), "start-exports-"));
    const record = (id: string) =>
      `${JSON.stringify({ id, timestamp: new Date(Date.now() - 60_000).toISOString(), project: "p" })}\n`;
    writeFileSync(join(folder, "edge_logs-0.ndjson"), record("first"));
    const { baseUrl } = await start({
      API_KEYS: KEY,
      LOCAL_DATA: folder,
      LOCAL_DATA_POLL_SECONDS: "1",
    });
    const ids = async () => {
      const response = await fetch(
        `${baseUrl}/api/endpoints/logs.all?project=p&project_tier=FREE`,
        {
          headers: { "X-API-KEY": KEY },
        },
      );
      return ((await response.json()) as { result: { id: string }[] }).result.map((r) => r.id);
    };
    expect(await ids()).toEqual(["first"]);
    writeFileSync(join(folder, "edge_logs-1.ndjson"), record("second"));
    await vi.waitFor(async () => expect((await ids()).sort()).toEqual(["first", "second"]), {
      timeout: 15_000,
      interval: 250,
    });
  });

  it("warns at start of a variable that nearly spells a setting, naming both, never its value", async () => {
    const value = "meant-as-a-key-0123456789";
    const { stdout, stderr } = await start({ API_KEYS: KEY, API_KEY: value });
    const warnings = stdout()
      .split("\n")
      .filter((line) => line.includes('"level":40'));
    expect(warnings).toEqual([
      expect.stringContaining(
        '"msg":"API_KEY is not a setting of this service and does nothing: did you mean API_KEYS?"',
      ),
    ]);
    expect(stdout() + stderr()).not.toContain(value);
  });

  it("warns at start with REDIS_URL but no CURSOR_SECRET, and never logs the secret", async () => {
    const folder = mkdtempSync(join(tmpdir(), "start-exports-"));
    writeFileSync(join(folder, "edge_logs-0.ndjson"), "");
    // Nothing listens there: the replica works alone, which is all this needs.
    const replica = { API_KEYS: KEY, LOCAL_DATA: folder, REDIS_URL: "redis://127.0.0.1:1" };
    const warning = "CURSOR_SECRET is not set";
    expect((await start(replica)).stdout()).toContain(warning);
    const secret = "cursor-secret-of-the-start-test-0123";
    const shared = await start({ ...replica, CURSOR_SECRET: secret });
    expect(shared.stdout()).not.toContain(warning);
    expect(shared.stdout() + shared.stderr()).not.toContain(secret);
  });

  it("has written every request's log line when it exits, though it writes lines in batches", async () => {
    const { child, baseUrl, stdout } = await start({ API_KEYS: KEY });
    const closed = new Promise((resolve) => child.once("close", resolve));
    for (let i = 0; i < 5; i++) {
      await (await fetch(`${baseUrl}/api/endpoints`, { headers: { "X-API-KEY": KEY } })).text();
    }
    child.kill("SIGTERM");
    await closed;
    const lines = stdout()
      .split("\n")
      .filter((line) => line.includes('"msg":"request"'));
    expect(lines).toHaveLength(5);
  });

  it("closes gracefully on SIGTERM", async () => {
    const { child } = await start({ API_KEYS: KEY });
    const exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    child.kill("SIGTERM");
    expect(await exited).toEqual({ code: 0, signal: null });
  });
});
