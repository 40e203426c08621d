// Signals a running service gets from its operator, at the PID it writes to PID_FILE: SIGHUP reads
// API_KEYS_FILE again and never stops the process; SIGTERM stops it in time, whatever its streams'
// clients do.
import { existsSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../src/credentials/authenticate.ts";
import { runShell, shellCommands } from "./support/doc-commands.ts";
import { stalledClient } from "./support/follow-client.ts";
import { start } from "./support/service-process.ts";
import { temporaryFile } from "./support/temporary-file.ts";

const ACME_KEY = "acme-key-0123456789abcdef";
const AJAX_KEY = "ajax-key-0123456789abcdef";
const PATH = "/api/endpoints";

const keysOf = (name: string, key: string) =>
  JSON.stringify({ keys: [{ name, sha256: sha256Hex(key), scopes: [{ endpoint: "*" }] }] });

describe("SIGHUP", () => {
  it("reads API_KEYS_FILE again and keeps serving", async () => {
    const keysFile = temporaryFile("keys.json", keysOf("acme", ACME_KEY));
    // An old stamp, put back after the rewrite below: only the signal can show the new keys.
    const stamp = new Date("2020-01-01T00:00:00Z");
    utimesSync(keysFile, stamp, stamp);
    const service = await start({ API_KEYS_FILE: keysFile });
    const status = async (key: string) =>
      (await fetch(`${service.baseUrl}${PATH}`, { headers: { "X-API-KEY": key } })).status;
    expect(await status(ACME_KEY)).toBe(200);

    // Same size, same file, same stamp.
    const ajax = keysOf("ajax", AJAX_KEY);
    expect(ajax.length).toBe(readFileSync(keysFile, "utf8").length);
    writeFileSync(keysFile, ajax);
    utimesSync(keysFile, stamp, stamp);
    service.child.kill("SIGHUP");

    await vi.waitFor(() => expect(service.stdout()).toContain("API_KEYS_FILE reloaded"));
    expect(await status(AJAX_KEY)).toBe(200);
    expect(await status(ACME_KEY)).toBe(401);
    expect(service.child.exitCode).toBeNull();
    expect(service.stdout()).not.toContain('"closing"');
  });

  it("reaches the service by the PID it writes to PID_FILE, as docs/operations.md sends it; the file goes at exit", async () => {
    const folder = mkdtempSync(join(tmpdir(), "service-folder-"));
    const service = await start({ API_KEYS: ACME_KEY }, [], folder);
    const pidFile = join(folder, ".state", "service.pid");
    expect(Number(readFileSync(pidFile, "utf8"))).toBe(service.child.pid);

    // The docs' command as written, from the folder the service started in.
    const [command] = shellCommands().filter(({ text }) => text.startsWith("kill -HUP "));
    const { code, stderr } = await runShell(command?.text as string, {}, { cwd: folder });
    expect(code, stderr).toBe(0);
    await vi.waitFor(() => expect(service.stdout()).toMatch(/SIGHUP: serving \d+ endpoints/));
    const response = await fetch(`${service.baseUrl}${PATH}`, {
      headers: { "X-API-KEY": ACME_KEY },
    });
    expect(response.status).toBe(200);

    const exited = new Promise((resolve) => service.child.once("exit", resolve));
    service.child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(existsSync(pidFile)).toBe(false);
  });

  it("without API_KEYS_FILE, keeps serving", async () => {
    const service = await start({ API_KEYS: ACME_KEY });
    service.child.kill("SIGHUP");
    await vi.waitFor(() => expect(service.stdout()).toContain("SIGHUP"));
    const response = await fetch(`${service.baseUrl}${PATH}`, {
      headers: { "X-API-KEY": ACME_KEY },
    });
    expect(response.status).toBe(200);
    expect(service.child.exitCode).toBeNull();
  });
});

describe("SIGTERM", () => {
  it("with a follow stream whose client reads nothing, exits 0 within the grace", async () => {
    const service = await start({ API_KEYS: ACME_KEY, SHUTDOWN_GRACE_MS: "20000" });
    stalledClient(
      service.baseUrl,
      "/api/endpoints/logs.all/follow?project=default&project_tier=PRO&iso_timestamp_start=2000-01-01T00:00:00Z",
      ACME_KEY,
    );
    const sent = async () => {
      const metrics = await fetch(`${service.baseUrl}/metrics`, {
        headers: { "X-API-KEY": ACME_KEY },
      });
      return Number(
        /^query_service_follow_records_sent_total (\d+)$/m.exec(await metrics.text())?.[1],
      );
    };
    // The catch-up has filled every buffer on the way and waits for a client that never reads.
    let last = -1;
    await vi.waitFor(
      async () => {
        const now = await sent();
        const stalled = now > 0 && now === last;
        last = now;
        expect(stalled).toBe(true);
      },
      { timeout: 15_000, interval: 500 },
    );
    const exited = new Promise((resolve) => service.child.once("exit", resolve));
    service.child.kill("SIGTERM");
    // close-with-grace exits 1 when the grace runs out.
    expect(await exited).toBe(0);
  }, 30_000);
});
