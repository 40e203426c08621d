// Signals a running service gets from its operator: SIGHUP reads API_KEYS_FILE again and never
// stops the process.
import { readFileSync, utimesSync, writeFileSync } from "node:fs";
import { describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../src/credentials/authenticate.ts";
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
