// The docs hold: every relative link and anchor resolves, every shell command is one a test runs
// (or is listed here with the reason no test can), and the paging loop of docs/scripts.md, run as
// written against the service, fetches every record through a rate limit and fails loudly on errors.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { Redis } from "ioredis";
import { describe, expect, it, vi } from "vitest";
import {
  codeBlocks,
  curlHome,
  docFiles,
  readDoc,
  runShell,
  shellCommands,
  shellScripts,
  whyCurlCannotRun,
} from "./support/doc-commands.ts";
import { redisServer } from "./support/redis-server.ts";
import { start } from "./support/service-process.ts";

const ROOT = new URL("../", import.meta.url);

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

/** Without its fenced blocks, whose `#` lines are comments, not headings. */
const unfenced = (markdown: string) => markdown.replace(/^ *```[\s\S]*?^ *```/gm, "");

/** Prose only: fenced blocks and code spans hold no links. */
const prose = (markdown: string) => unfenced(markdown).replace(/`[^`\n]*`/g, "");

function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading = ""] of unfenced(readDoc(file)).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Each relative link of `file` that does not resolve, with why. */
function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  for (const [, target = ""] of prose(readDoc(file)).matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
    if (/^[a-z][a-z+.-]*:/i.test(target)) continue;
    const [path = "", anchor] = target.split("#");
    const linked = path === "" ? file : normalize(join(dirname(file), path));
    if (!existsSync(new URL(linked, ROOT))) broken.push(`${file}: ${target}: no file ${linked}`);
    else if (anchor !== undefined && !anchorsOf(linked).has(anchor)) {
      broken.push(`${file}: ${target}: no heading ${linked}#${anchor}`);
    }
  }
  return broken;
}

/** Commands a test runs as written, and which test. */
const RUN_BY_TESTS: [RegExp, string][] = [
  [/^curl /, "test/start.test.ts, against npm start's service"],
  [/^npm run key /, "test/start.test.ts, which calls with the key it makes"],
  [/^(export )?(JWT_SECRET|TOKEN)=/, "test/start.test.ts, which calls with the token they make"],
  [
    /^npm install --dry-run /,
    "test/platforms.environment.test.ts, which checks what their comments say",
  ],
  [
    /^(npm link|log-query |export LOG_QUERY_KEY=)/,
    "test/cli-docs.environment.test.ts, against npm start's service",
  ],
  [/^npm run test:endpoints$/, "test/endpoints/cases.test.ts, which checks that every case passes"],
  [/^npm run test:endpoints -- /, "test/endpoints/operator-endpoints.test.ts, the walk-through's"],
  [/^kill -HUP /, "test/signals.test.ts, against the service it starts in a folder of its own"],
];

const NO_DOCKER = "no Docker engine where the tests run";
const NO_BIGQUERY =
  "needs a Google Cloud project; test/http/ runs the BigQuery engine against a stand-in";

/** Commands no test runs as written, and why. */
const NOT_RUN: Record<string, string> = {
  "npm install && npm start":
    "test/start.test.ts starts npm start's command (node src/main.ts) where the suite was installed",
  "npm install && npm test": "CI runs it (.ci/run); the suite cannot run itself",
  "export KEY=<the key npm start printed>":
    "a placeholder; test/start.test.ts checks the printed key, and supplies $KEY to the curl lines",
  "ALERT_RULES_FILE=./alert-rules.json npm start":
    "test/alerts/docs-example.test.ts starts npm start's command (node src/main.ts) with the rules file the page shows",
  "ENDPOINTS_DIR=examples/endpoints npm start":
    "test/start.test.ts starts npm start's command with ENDPOINTS_DIR=examples/endpoints, and runs the page's curl lines against it",
  "API_KEYS_FILE=./keys.json npm start":
    "test/start.test.ts starts npm start's command with API_KEYS_FILE holding the entry npm run key made",
  "export GOOGLE_APPLICATION_CREDENTIALS=/path/to/service-account.json   # or workload identity / gcloud ADC":
    NO_BIGQUERY,
  "BIGQUERY_PROJECT_ID=my-project BIGQUERY_DATASET=logs BIGQUERY_LOCATION=US \\\nBIGQUERY_MAX_BYTES_BILLED=10000000000 API_KEYS=$KEY npm start":
    NO_BIGQUERY,
  "export API_KEYS=<16+ characters> CURSOR_SECRET=$(openssl rand -base64 32)": `a placeholder, for Compose; ${NO_DOCKER}`,
  "docker compose up --build -d": NO_DOCKER,
  "docker compose up -d --scale log-query=5    # more replicas; nginx finds them by name":
    NO_DOCKER,
  'docker run -p 3000:3000 -e API_KEYS=$KEY \\\n  -v "$PWD/exports:/data/exports:ro" -e LOCAL_DATA=/data/exports \\\n  -v log-query-db:/data/db -e DUCKDB_PATH=/data/db/logs.duckdb \\\n  -v log-query-state:/data/state log-query':
    NO_DOCKER,
  "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \\\nOTEL_SERVICE_NAME=query-service OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1 \\\nAPI_KEYS=$KEY npm start":
    "needs an OpenTelemetry collector; test/telemetry/tracing.test.ts exports to a receiver of its own",
};

describe("the docs", () => {
  it("link only to files and headings that exist", () => {
    expect(docFiles()).toEqual(expect.arrayContaining(["README.md", "CONTRIBUTING.md"]));
    expect(docFiles().flatMap(brokenLinks)).toEqual([]);
  });

  it("hold curl only in sh blocks, each line one the curl runner runs as written", () => {
    const elsewhere = docFiles().flatMap((file) =>
      codeBlocks(file)
        .filter((block) => block.lang !== "sh" && /^\s*curl\s/m.test(block.text))
        .map((block) => `${block.file}:${block.line}: a ${block.lang || "plain"} block`),
    );
    expect(elsewhere).toEqual([]);
    const unrunnable = shellCommands()
      .filter(({ text }) => /\bcurl /.test(text))
      .flatMap(({ file, line, text }) => {
        const why = whyCurlCannotRun(text);
        return why ? [`${file}:${line}: ${why}`] : [];
      });
    expect(unrunnable).toEqual([]);
  });

  it("hold only shell commands that a test runs, or that are listed here with the reason", () => {
    const commands = shellCommands();
    const unaccounted = commands
      .filter(({ text }) => !RUN_BY_TESTS.some(([pattern]) => pattern.test(text)))
      .filter(({ text }) => NOT_RUN[text] === undefined)
      .map(({ file, line, text }) => `${file}:${line}: ${text}`);
    expect(unaccounted, "run each in a test, or add it to NOT_RUN with the reason").toEqual([]);
    const stale = Object.keys(NOT_RUN).filter((text) => !commands.some((c) => c.text === text));
    expect(stale, "NOT_RUN lists commands the docs no longer hold").toEqual([]);
    expect(shellScripts().map(({ file }) => file)).toEqual(["docs/scripts.md"]);
  });

  it("run Node through npm or the bundled node_modules/.bin/node, never the PATH's node", () => {
    // The PATH's node may be older than 24; npm scripts and npx put node_modules/.bin first.
    const bareNode = /(?:^|[;&|(]|\bexec|\btime)\s*(?:\w+=\S*\s+)*node\s+\S/m;
    const code = docFiles().flatMap((file) => [
      ...codeBlocks(file).map((block) => ({ file, text: block.text })),
      // Code spans, one that wraps a line joined back.
      ...[...unfenced(readDoc(file)).matchAll(/`([^`]+)`/g)].map(([, text = ""]) => ({
        file,
        text: text.replace(/\s*\n\s*/g, " "),
      })),
    ]);
    expect(code.length).toBeGreaterThan(100);
    const bare = code.filter(({ text }) => bareNode.test(text));
    expect(bare.map(({ file, text }) => `${file}: ${text}`)).toEqual([]);
  });
});

const KEY = "docs-test-key-0123456789";
const PAGE = 100;

/** The paging loop of docs/scripts.md, as written. */
function pagingLoop(): string {
  const [loop] = shellScripts().filter(({ file }) => file === "docs/scripts.md");
  return loop?.text as string;
}

/** An export of `count` records of project `default` within the last hour (and others'), newest first. */
function exportOf(count: number): { folder: string; ids: string[] } {
  const folder = mkdtempSync(join(tmpdir(), "paging-exports-"));
  const now = Date.now();
  const record = (project: string, i: number) => ({
    id: `${project}-${String(i).padStart(4, "0")}`,
    timestamp: new Date(now - (i + 1) * 5_000).toISOString(),
    event_message: `GET | 200 | record ${i}`,
    project,
    metadata: [],
  });
  const records = [
    ...Array.from({ length: count }, (_, i) => record("default", i)),
    ...Array.from({ length: 30 }, (_, i) => record("staging", i)),
  ];
  const lines = records.map((r) => JSON.stringify(r)).join("\n");
  writeFileSync(join(folder, "edge_logs-000000000000.json"), `${lines}\n`);
  return { folder, ids: records.filter((r) => r.project === "default").map((r) => r.id) };
}

/** The statuses the service's request log shows for `path`, in order. */
function statusesIn(log: string, path: string): number[] {
  return log
    .split("\n")
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as { path: string; status: number })
    .filter((line) => line.path === path)
    .map((line) => line.status);
}

describe("the paging loop of docs/scripts.md, run as written", () => {
  const redis = redisServer();

  it("writes every record of the window once, newest first, sleeping through a 429 as Retry-After says", async () => {
    // Five pages at five requests a minute, counted in Redis as replicas count them, where other
    // replicas have spent this minute, six seconds from its end: the first ask is refused until the
    // minute is over (a minute spent here would make the test wait most of one; a few seconds
    // leave a loaded machine time to start the script before the minute ends).
    const { folder, ids } = exportOf(4 * PAGE + 50);
    const service = await start({
      API_KEYS: KEY,
      LOCAL_DATA: folder,
      RATE_LIMIT_PER_MINUTE: "5",
      REDIS_URL: redis.url,
      REDIS_PREFIX: "docs:",
    });
    await vi.waitFor(() => expect(service.stdout()).toContain("Redis answers"));
    // The only key of API_KEYS is api-key-1; the rate limit counts it under "rate-limit:".
    const client = new Redis(redis.url);
    await client.set("docs:rate-limit:api-key-1", "5", "PX", 6_000);
    client.disconnect();
    const cwd = mkdtempSync(join(tmpdir(), "paging-"));
    const { code, stderr } = await runShell(
      pagingLoop(),
      { KEY, CURL_HOME: curlHome(service.baseUrl) },
      { cwd },
    );

    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const written = readFileSync(join(cwd, "day.ndjson"), "utf8").trimEnd().split("\n");
    expect(written.map((line) => (JSON.parse(line) as { id: string }).id)).toEqual(ids);
    await vi.waitFor(() =>
      expect(statusesIn(service.stdout(), "/api/endpoints/logs.all")).toEqual([
        429, 200, 200, 200, 200, 200,
      ]),
    );
  });

  it("exits non-zero, saying why, on an error status and when the service cannot be reached", async () => {
    const { folder } = exportOf(10);
    const service = await start({ API_KEYS: KEY, LOCAL_DATA: folder });
    const cwd = mkdtempSync(join(tmpdir(), "paging-"));

    const refused = await runShell(
      pagingLoop(),
      { KEY: "not-a-key-of-this-service", CURL_HOME: curlHome(service.baseUrl) },
      { cwd },
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^HTTP 401: \{"error":\{"code":"unauthorized",/);

    service.child.kill("SIGTERM");
    await new Promise((resolve) => service.child.once("exit", resolve));
    const unreachable = await runShell(
      pagingLoop(),
      { KEY, CURL_HOME: curlHome(service.baseUrl) },
      { cwd },
    );
    expect(unreachable.code).not.toBe(0);
    expect(unreachable.stderr).toMatch(/^curl: \(7\) /);
  });
});
