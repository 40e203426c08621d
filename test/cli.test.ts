// log-query query, export and endpoints against the service (test/support/log-query.ts): every
// page with --all in each format, a state's length kept for the file it was measured on, the exit
// codes, and the client installed under node_modules.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { cli, exports, ids, inOrder, KEY, loaded, service, settled } from "./support/log-query.ts";

describe("log-query query and endpoints", () => {
  it("follows every page with --all, as one JSON document, NDJSON stream or CSV table", async () => {
    const data = exports();
    data.drop(
      Array.from({ length: 250 }, (_, i) => Date.now() - 60_000 - i * 100),
      "paged",
    );
    const { baseUrl } = await service(data.folder);
    await loaded(baseUrl);
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
    await settled(baseUrl, data.all);
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
    await settled(baseUrl, data.all);
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
    expect(listed.stdout).toMatch(/^ {2}max_points \(default 300\) {2}the most buckets/m);
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
