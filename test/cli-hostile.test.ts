// log-query against a hostile server: one written here, since the real service cannot be made to
// send terminal escape sequences in its own text, an endless line or an endless answer. Text output
// shows control characters as escapes, JSON and NDJSON stay as sent, and more than the client holds
// ends the command with exit 5 and one line. Also what the command says about itself (--version,
// each command's --help) and how it runs on the machine's older Node.
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import { createServer, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { retryDelayMs } from "../src/cli/client.ts";
import { newcomerPath, olderNode, ROOT, runToEnd } from "./support/newcomer.ts";

const CLI = join(ROOT, "bin", "log-query.js");
const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  version: string;
};

/**
 * Runs log-query (on this Node unless `command` says otherwise) to its end, with a key (which names
 * the listing the hostile server answers).
 */
function run(
  args: string[],
  { command = process.execPath, script = [CLI], path = process.env.PATH, key = "hostile" } = {},
) {
  return runToEnd(command, [...script, ...args], ROOT, { PATH: path, LOG_QUERY_KEY: key });
}

// Everything a terminal would act on: clear screen, window title, a hidden link, a request for the
// cursor position (which the terminal answers as if typed), a CR overwriting what came before, a
// forged line, a right-to-left override, a C1 CSI and DEL.
const HOSTILE =
  "\x1b[2J\x1b]0;owned\x07\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\\x1b[6n" +
  "safe\roverwritten\nlog-query: error: forged\u202etxt.exe\u2066\x9b31m\x7f";
const HOSTILE_SHOWN =
  "\\x1b[2J\\x1b]0;owned\\x07\\x1b]8;;https://evil.example/\\x1b\\click\\x1b]8;;\\x1b\\\\x1b[6n" +
  "safe\\x0doverwritten\\x0alog-query: error: forged\\u202etxt.exe\\u2066\\x9b31m\\x7f";

const LISTING = JSON.stringify({
  result: [
    {
      name: "logs.all",
      description: HOSTILE,
      params: [
        { name: "project", required: true, description: HOSTILE },
        { name: "tier", required: false, description: "tier", default: HOSTILE },
      ],
      paths: ["/api/endpoints/logs.all", "/api/endpoints/logs.all/follow"],
    },
  ],
});
const RECORD = JSON.stringify({
  id: "r1",
  timestamp: "2026-01-01T00:00:00Z",
  event_message: HOSTILE,
});
/** Listings that are JSON but not one: an entry that is null, an entry without its parameters. */
const LISTINGS: Record<string, string> = {
  "null-entry": '{"result":[null]}',
  "no-params": '{"result":[{"name":"x","description":"y","paths":[]}]}',
  garbage: HOSTILE,
};
// What `query --format csv` is answered: a header and a row (CRLF, as the service writes CSV).
const CSV = `id,event_message\r\nr1,"${HOSTILE}"\r\n`;
// An object whose toString is no function, which `${}` and String() throw on.
const NO_STRING = '{"toString":1}';
// A row deeper than JSON.stringify's stack goes.
const DEEP = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
// Retry-After beyond Node's longest timer (about 24.8 days), which fires after 1 ms instead.
const YEARS = "999999999";

interface Answer {
  status?: number;
  headers?: OutgoingHttpHeaders;
  body?: string;
  /** Sent again and again, never ending. */
  endless?: string;
}

const JSON_TYPE = { "content-type": "application/json" };
const SSE_TYPE = { "content-type": "text/event-stream" };
const NDJSON_TYPE = { "content-type": "application/x-ndjson" };

/** What the hostile server answers: per project on the follow route (tail, export), else per path. */
function hostile(url: URL, key: string): Answer {
  const follow = url.pathname === "/api/endpoints/logs.all/follow";
  const settled = url.searchParams.has("until");
  switch (follow ? url.searchParams.get("project") : url.pathname) {
    case "/api/endpoints":
      return { headers: JSON_TYPE, body: LISTINGS[key] ?? LISTING };
    case "bad-timestamp":
      return { headers: SSE_TYPE, body: `id: 1\ndata: {"timestamp":${NO_STRING}}\n\n` };
    case "bad-end":
      return settled
        ? { headers: NDJSON_TYPE, body: `{"end":{"reason":${NO_STRING}}}\n` }
        : { headers: SSE_TYPE, body: `event: end\ndata: {"reason":${NO_STRING}}\n\n` };
    case "csv":
      return {
        headers: NDJSON_TYPE,
        body: `${RECORD}\n{"end":{"reason":"settled","cursor":"c1"}}\n`,
      };
    case "/api/endpoints/csv":
      return { headers: { "content-type": "text/csv" }, body: CSV };
    case "/api/endpoints/empty-object":
      return { headers: JSON_TYPE, body: "{}" };
    case "escapes":
      return {
        headers: SSE_TYPE,
        body: `id: 1\ndata: ${RECORD}\n\nevent: end\ndata: {"reason":"revoked"}\n\n`,
      };
    case "endless-line":
      return {
        headers: settled ? NDJSON_TYPE : SSE_TYPE,
        endless: "x".repeat(65_536),
      };
    case "not-json":
      return { headers: SSE_TYPE, body: `id: 1\ndata: ${HOSTILE}\n\n` };
    case "deep-record":
      return { headers: SSE_TYPE, body: `id: 1\ndata: {"deep":${DEEP}}\n\n` };
    case "/api/endpoints/deep":
      return { headers: JSON_TYPE, body: `{"result":[${DEEP}]}` };
    case "busy-now":
      return { status: 503, headers: { "retry-after": "0" } };
    case "busy-for-years":
      return { status: 503, headers: { "retry-after": YEARS } };
    case "null-record":
      return { headers: SSE_TYPE, body: "id: 1\ndata: null\n\n" };
    case "endless-event":
      return { headers: SSE_TYPE, endless: "data: x\n".repeat(8_192) };
    case "/api/endpoints/huge":
      return { headers: NDJSON_TYPE, endless: `${RECORD}\n`.repeat(256) };
    case "/api/endpoints/refused": {
      const details = [
        { param: "project", message: "Required" },
        { param: `limit${HOSTILE}`, message: HOSTILE },
      ];
      const error = { code: "invalid_params", message: HOSTILE, details };
      return { status: 400, headers: JSON_TYPE, body: JSON.stringify({ error }) };
    }
    case "/api/endpoints/moved":
      // A header's value cannot hold C0 controls; a C1 control is a byte it may hold.
      return { status: 302, headers: { location: "https://elsewhere.example/\x9b2J" } };
    case "/api/endpoints/garbage":
      return { headers: JSON_TYPE, body: HOSTILE };
    default:
      return { status: 404 };
  }
}

/** Writes `chunk` until the client goes away. */
function endlessly(response: ServerResponse, chunk: string): void {
  const more = () => {
    while (!response.destroyed && response.write(chunk));
  };
  response.on("drain", more);
  more();
}

let url: string;
/** Requests by what the server answered them (the follow route's project, else the path). */
const asked = new Map<string, number>();
const server = createServer((request, response) => {
  const requested = new URL(request.url ?? "/", "http://x");
  const topic = requested.searchParams.get("project") ?? requested.pathname;
  asked.set(topic, (asked.get(topic) ?? 0) + 1);
  const {
    status = 200,
    headers = {},
    body = "",
    endless,
  } = hostile(new URL(request.url ?? "/", "http://x"), String(request.headers["x-api-key"]));
  response.writeHead(status, headers);
  if (endless === undefined) response.end(body);
  else endlessly(response, endless);
});
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const logs = (command: string, project: string, ...more: string[]) =>
  run([command, "--url", url, "--project", project, ...more]);

describe("log-query's text from a hostile server", () => {
  it("tail --format text shows a record's control characters as escapes, a line per record", async () => {
    const ran = await logs("tail", "escapes", "--format", "text");
    expect(ran.stdout).toBe(`2026-01-01T00:00:00Z ${HOSTILE_SHOWN}\n`);
    expect(ran).toMatchObject({ code: 3, stderr: "log-query: the stream ended: revoked\n" });
  });

  it("tail --format ndjson and endpoints --format json stay as the server sent them", async () => {
    expect((await logs("tail", "escapes", "--format", "ndjson")).stdout).toBe(`${RECORD}\n`);
    expect((await run(["endpoints", "--url", url, "--format", "json"])).stdout).toBe(
      `${LISTING}\n`,
    );
  });

  it("endpoints shows descriptions and defaults with their control characters escaped", async () => {
    const ran = await run(["endpoints", "--url", url]);
    expect(ran).toEqual({
      code: 0,
      stdout: `logs.all (followable): ${HOSTILE_SHOWN}\n  project (required)  ${HOSTILE_SHOWN}\n  tier (default ${HOSTILE_SHOWN})  tier\n`,
      stderr: "",
    });
  });

  it("CSV goes into a pipe as sent, and to a terminal with its cells' control characters escaped", async () => {
    const query = ["query", "csv", "--url", url, "--format", "csv"];
    const state = () => join(mkdtempSync(join(tmpdir(), "hostile-")), "s");
    const exported = () => [
      "export",
      "--url",
      url,
      "--project",
      "csv",
      "--format",
      "csv",
      "--state",
      state(),
    ];
    // A terminal of its own (util-linux's script), whose line discipline writes each LF as CRLF.
    const onTerminal = async (args: string[]) => {
      const line = [process.execPath, CLI, ...args].join(" ");
      const ran = await runToEnd("script", ["-qec", line, "/dev/null"], ROOT, {
        PATH: process.env.PATH,
        LOG_QUERY_KEY: "hostile",
      });
      return { ...ran, stdout: ran.stdout.replaceAll("\r\n", "\n") };
    };
    expect(await run(query)).toEqual({ code: 0, stdout: CSV, stderr: "" });
    expect((await run(exported())).stdout).toContain(`,"${HOSTILE}",`);
    expect(await onTerminal(query)).toMatchObject({
      code: 0,
      stdout: `id,event_message\nr1,"${HOSTILE_SHOWN}"\n`,
    });
    const shownExport = await onTerminal(exported());
    expect(shownExport.code).toBe(0);
    expect(shownExport.stdout).toContain(`,"${HOSTILE_SHOWN}",`);
    expect(shownExport.stdout).not.toContain("\x1b");
  });

  it("an error's code, message, refused parameters and a Location header are escaped", async () => {
    const refused = await run(["query", "refused", "--url", url]);
    expect(refused).toMatchObject({ code: 2, stdout: "" });
    expect(refused.stderr).toBe(
      `log-query: invalid_params: ${HOSTILE_SHOWN}\n  project: Required\n  limit${HOSTILE_SHOWN}: ${HOSTILE_SHOWN}\n`,
    );
    const moved = await run(["query", "moved", "--url", url]);
    expect(moved.code).toBe(2);
    expect(moved.stderr).toMatch(
      /^log-query: [^\n]* redirects to https:\/\/elsewhere\.example\/\\x9b2J, /,
    );
  });
});

describe("log-query against a server that sends more than it holds, or what is not JSON", () => {
  // Each ends the command with exit 5 and one line: no stack, no RangeError, no memory exhausted.
  it.each([
    ["tail: an endless line", () => logs("tail", "endless-line"), "a line longer than 16 MiB"],
    ["tail: an endless event", () => logs("tail", "endless-event"), "an event longer than 16 MiB"],
    [
      "export: an endless line",
      () =>
        logs(
          "export",
          "endless-line",
          "--state",
          join(mkdtempSync(join(tmpdir(), "hostile-")), "s"),
        ),
      "a line longer than 16 MiB",
    ],
    [
      "query: an endless answer",
      () => run(["query", "huge", "--url", url]),
      "an answer longer than 64 MiB",
    ],
    ["tail: a record that is not JSON", () => logs("tail", "not-json"), "that is not JSON: "],
    [
      "tail: a record that is JSON but no object",
      () => logs("tail", "null-record"),
      "a record log-query cannot read",
    ],
    [
      "tail --format text: a timestamp that is no string",
      () => logs("tail", "bad-timestamp", "--format", "text"),
      "a record log-query cannot read: timestamp: ",
    ],
    [
      "tail: an end whose reason is no string",
      () => logs("tail", "bad-end"),
      "a stream's end log-query cannot read: reason: ",
    ],
    [
      "export: an end whose reason is no string",
      () =>
        logs("export", "bad-end", "--state", join(mkdtempSync(join(tmpdir(), "hostile-")), "s")),
      "a stream's end log-query cannot read: reason: ",
    ],
    [
      "query: an answer that is not JSON",
      () => run(["query", "garbage", "--url", url]),
      "that is not JSON: ",
    ],
    [
      "query: a page nested 200 000 deep",
      () => run(["query", "deep", "--url", url]),
      "a page log-query cannot print: nested too deeply",
    ],
    [
      "tail: a record nested 200 000 deep",
      () => logs("tail", "deep-record", "--format", "ndjson"),
      "a record log-query cannot print: nested too deeply",
    ],
    [
      "query: a JSON answer without its result",
      () => run(["query", "empty-object", "--url", url]),
      "a page log-query cannot read: result: ",
    ],
    [
      "query --format ndjson: a line that is not JSON",
      () => run(["query", "garbage", "--url", url, "--format", "ndjson"]),
      "a row that is not JSON: ",
    ],
    [
      "endpoints: an entry that is null",
      () => run(["endpoints", "--url", url], { key: "null-entry" }),
      "a listing of endpoints log-query cannot read: result.0: ",
    ],
    [
      "endpoints: an entry without its parameters",
      () => run(["endpoints", "--url", url], { key: "no-params" }),
      "a listing of endpoints log-query cannot read: result.0.params: ",
    ],
    [
      "endpoints --format json: a listing that is not JSON",
      () => run(["endpoints", "--url", url, "--format", "json"], { key: "garbage" }),
      "that is not JSON: ",
    ],
  ])(
    "%s",
    async (_, command, said) => {
      const ran = await command();
      expect(ran).toMatchObject({ code: 5, stdout: "" });
      expect(ran.stderr).toMatch(/^log-query: the service sent [^\n]*\n$/);
      expect(ran.stderr).toContain(said);
      expect(ran.stderr).not.toContain("\x1b");
    },
    30_000,
  );
});

describe("log-query's waits before asking again", () => {
  /** How often `tail --project <project>` asks within two seconds of its first request. */
  async function requestsWithinTwoSeconds(project: string): Promise<number> {
    asked.delete(project);
    const child = spawn(process.execPath, [CLI, "tail", "--url", url, "--project", project], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, LOG_QUERY_KEY: "hostile" },
      stdio: "ignore",
    });
    try {
      await vi.waitFor(() => expect(asked.get(project)).toBeGreaterThan(0), { timeout: 20_000 });
      const first = asked.get(project) ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      return (asked.get(project) ?? 0) - first;
    } finally {
      child.kill();
    }
  }

  it("Retry-After: 0 waits the shortest wait, 250 ms, not no time", async () => {
    // At most one try per 250 ms: 8 in two seconds, one more for the timers' slack.
    expect(await requestsWithinTwoSeconds("busy-now")).toBeLessThanOrEqual(9);
  }, 30_000);

  it("a Retry-After beyond Node's timers waits the longest wait, 30 s, not 1 ms", async () => {
    expect(await requestsWithinTwoSeconds("busy-for-years")).toBe(0);
  }, 30_000);

  it("reads Retry-After as seconds or an HTTP date, held between 250 ms and 30 s", () => {
    const answer = (retryAfter?: string) =>
      new Response(null, { status: 503, headers: retryAfter ? { "retry-after": retryAfter } : {} });
    const now = Date.parse("2026-11-21T05:00:00Z");
    expect(retryDelayMs(answer("2"), 1000, now)).toBe(2000);
    expect(retryDelayMs(answer("0"), 1000, now)).toBe(250);
    expect(retryDelayMs(answer(YEARS), 1000, now)).toBe(30_000);
    expect(retryDelayMs(answer("Sat, 21 Nov 2026 05:00:10 GMT"), 1000, now)).toBe(10_000);
    expect(retryDelayMs(answer("Sat, 21 Nov 2026 04:00:00 GMT"), 1000, now)).toBe(250);
    expect(retryDelayMs(answer("-1"), 1000, now)).toBe(1000);
    expect(retryDelayMs(answer(), 4000, now)).toBe(4000);
    expect(retryDelayMs(undefined, 60_000, now)).toBe(30_000);
  });
});

describe("log-query about itself", () => {
  it("--version prints the package's version", async () => {
    expect(await run(["--version"])).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it.each(["tail", "export", "query", "endpoints"])(
    "`log-query %s --help` gives its usage, options and exit codes",
    async (command) => {
      const ran = await run([command, "--help"]);
      expect(ran).toMatchObject({ code: 0, stderr: "" });
      expect(ran.stdout).toMatch(new RegExp(`^Usage: log-query ${command} `));
      expect(ran.stdout).toContain("--url <url>");
      expect(ran.stdout).toMatch(/^Exit codes:\n( {2}\d {2}.+\n)+$/m);
      expect((await run(["help", command])).stdout).toBe(ran.stdout);
    },
  );
});

describe("log-query on the machine's older Node", () => {
  const node = olderNode();
  const olderFirst = `${dirname(node)}${delimiter}${newcomerPath()}`;

  it("runs on the Node 24 installed with it", async () => {
    expect(await run(["--version"], { command: node })).toEqual({
      code: 0,
      stdout: `${version}\n`,
      stderr: "",
    });
  });

  it("runs through a link elsewhere, as `npm link` makes, the older Node first on the PATH", async () => {
    const bin = mkdtempSync(join(tmpdir(), "npm-link-"));
    symlinkSync(CLI, join(bin, "log-query"));
    const ran = await run(["--version"], {
      command: join(bin, "log-query"),
      script: [],
      path: `${bin}${delimiter}${olderFirst}`,
    });
    expect(ran).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("runs through npx from the clone's folder, the older Node first on the PATH", async () => {
    const npx = await run(["--yes", `--package=${ROOT}`, "log-query", "--version"], {
      command: "npx",
      script: [],
      path: olderFirst,
    });
    expect({ code: npx.code, stdout: npx.stdout }).toEqual({ code: 0, stdout: `${version}\n` });
  }, 60_000);

  it("without a Node 24 installed with it, says in one line what to do, and exits 2", async () => {
    const copy = mkdtempSync(join(tmpdir(), "no-node-"));
    for (const part of ["package.json", "bin", "src/cli"])
      cpSync(join(ROOT, part), join(copy, part), { recursive: true });
    const ran = await run(["--version"], {
      command: node,
      script: [join(copy, "bin", "log-query.js")],
    });
    expect(ran.code).toBe(2);
    expect(ran.stderr).toMatch(
      /^log-query needs Node 24 or newer, not \d+\.[\d.]+, and found no Node 24 installed with it [^\n]*: run `npm install` in [^\n]*, or install Node 24 [^\n]*\n$/,
    );
  });
});
