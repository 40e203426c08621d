// An export across a restart on LOCAL_DATA: export files keep arriving while the service stops and
// starts again (its startup slowed by a large file it loads), and a settled run every second, each
// resumed after the last one's cursor, sends every record exactly once. The lag is shorter than the
// watch takes to load a new file: only the data's watermark keeps a run from settling past records
// the service has not loaded yet.
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { edgeLog, OTHER_PROJECT, PROJECT } from "./support/fixtures.ts";
import { type Started, start } from "./support/service-process.ts";

const KEY = "export-key-0123456789abcdef";
// Records the exports skip, of another project: they make each startup's load take seconds.
const SLOW_LOAD_RECORDS = 100_000;

let folder: string;
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

/** Writes `rows` as one export file, whole: written aside, then renamed into LOCAL_DATA. */
async function exportFile(name: string, rows: object[]): Promise<void> {
  const aside = join(folder, `.${name}.partial`);
  await writeFile(aside, rows.map((row) => `${JSON.stringify(row)}\n`).join(""));
  await rename(aside, join(folder, name));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("an export across a restart on LOCAL_DATA", () => {
  it("sends every record written before, during and after the restart exactly once", async () => {
    folder = await mkdtemp(join(tmpdir(), "export-restart-"));
    const old = Date.now() - 3_600_000;
    await exportFile(
      "edge_logs-0-old.ndjson",
      Array.from({ length: SLOW_LOAD_RECORDS }, (_, i) =>
        edgeLog(new Date(old + i).toISOString(), { id: `old-${i}`, project: OTHER_PROJECT }),
      ),
    );
    const env = {
      API_KEYS: KEY,
      LOCAL_DATA: folder,
      LOCAL_DATA_POLL_SECONDS: "2",
      LOGS_FOLLOW_LAG_SECONDS: "1",
      CURSOR_SECRET: "a-secret-both-processes-share-0123456789",
    };

    // A file of two records, timestamped as written, every 300 ms.
    const written: string[] = [];
    let writing = true;
    const writer = (async () => {
      for (let n = 1; writing; n++) {
        const ids = [`r${n}a`, `r${n}b`];
        const at = new Date().toISOString();
        await exportFile(
          `edge_logs-${String(n).padStart(5, "0")}.ndjson`,
          ids.map((id) => edgeLog(at, { id })),
        );
        written.push(...ids);
        await sleep(300);
      }
    })();

    // A settled run every second, each after the last one's cursor; none while the service is down.
    let service: Started | undefined = await start(env);
    const exported: string[] = [];
    let cursor: string | undefined;
    const exportOnce = async () => {
      if (!service) return;
      const query = new URLSearchParams({ project: PROJECT, project_tier: "FREE" });
      query.set("until", "settled");
      if (cursor) query.set("after", cursor);
      else query.set("since", "1h");
      const response = await fetch(`${service.baseUrl}/api/endpoints/logs.all/follow?${query}`, {
        headers: { "x-api-key": KEY, accept: "application/x-ndjson" },
      }).catch(() => undefined);
      if (response?.status !== 200) return;
      const lines = (await response.text()).trimEnd().split("\n").filter(Boolean);
      const last = JSON.parse(lines.at(-1) ?? "{}");
      // A run cut short keeps the old cursor, and its records are sent again by the next.
      if (last.end?.reason !== "settled") return;
      exported.push(...lines.slice(0, -1).map((line) => JSON.parse(line).id));
      cursor = last.end.cursor;
    };
    let exporting = true;
    const exporter = (async () => {
      while (exporting) {
        await Promise.all([exportOnce(), sleep(1000)]);
      }
    })();

    await sleep(4000);
    const stopped = new Promise((resolve) => service?.child.once("exit", resolve));
    service.child.kill("SIGTERM");
    service = undefined;
    await stopped;
    service = await start(env);
    await sleep(4000);
    writing = false;
    await writer;

    // Exports go on until every record written was sent, or long enough that one never will be.
    const deadline = Date.now() + 30_000;
    while (exported.length < written.length && Date.now() < deadline) await sleep(500);
    exporting = false;
    await exporter;

    expect(written.length).toBeGreaterThan(40);
    const counts = new Map<string, number>();
    for (const id of exported) counts.set(id, (counts.get(id) ?? 0) + 1);
    expect(written.filter((id) => !counts.has(id))).toEqual([]);
    expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
    expect(exported.length).toBe(written.length);
  }, 90_000);
});
