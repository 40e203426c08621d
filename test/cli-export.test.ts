// log-query export against the service as `npm start` runs it (test/support/log-query.ts): runs
// chained while records keep arriving, killed with SIGKILL at random points, across a restart of the
// service without CURSOR_SECRET.
import { existsSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { freePort } from "./support/free-port.ts";
import {
  cli,
  exportArgs,
  exports,
  ids,
  inOrder,
  KEY,
  loaded,
  service,
  settled,
  sleep,
  stop,
} from "./support/log-query.ts";

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
    await settled(baseUrl, data.all);
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
    await loaded(baseUrl);
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
    await settled(baseUrl, data.all);
    for (let run = 0; run < 2; run++) expect((await cli(args, {}, cwd)).code).toBe(0);
    expect(ids(readFileSync(join(cwd, "out.ndjson"), "utf8"))).toEqual(inOrder(data.all));
  }, 120_000);
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

    await settled(server.baseUrl, data.all);
    expect(await cli(args, {}, cwd)).toMatchObject({ code: 0, stderr: "" });
    expect(ids(readFileSync(join(cwd, "out.ndjson"), "utf8"))).toEqual(inOrder(data.all));
  }, 60_000);
});
