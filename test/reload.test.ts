// A reload as one snapshot, in the service as `npm start` runs it: on SIGHUP the endpoint folders,
// API_KEYS_FILE and ALERT_RULES_FILE are read together, each file checked against the endpoints
// read with it, and swapped at once; a removal always applies; what the swap removes or changes
// (streams, cached values and their warming) ends at it; a refused part is one line naming its
// file and a count on /metrics.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../src/credentials/authenticate.ts";
import { open } from "./support/follow-client.ts";
import { type Started, start } from "./support/service-process.ts";
import { temporaryFile } from "./support/temporary-file.ts";

const EXAMPLE = new URL("../examples/endpoints/auth.failures-per-hour/", import.meta.url).pathname;
const FIXTURE = new URL("./fixtures/endpoints/edge.errors/", import.meta.url).pathname;
const AUTH = "auth.failures-per-hour";
const EDGE = "edge.errors";

const ADMIN_KEY = "admin-key-0123456789abcdef";
const OPS_KEY = "ops-key-0123456789abcdef";
const GONE_KEY = "gone-key-0123456789abcdef";
const SECRET = `whsec_${Buffer.from("a test secret of 24 bytes!").toString("base64")}`;

const key = (name: string, secret: string, endpoint = "*") => ({
  name,
  sha256: sha256Hex(secret),
  scopes: [{ endpoint }],
});

/** A fresh ENDPOINTS_DIR holding the named endpoints (the docs' example, the followable fixture). */
function endpointsDir(...names: (typeof AUTH | typeof EDGE)[]): string {
  const dir = mkdtempSync(join(tmpdir(), "endpoints-dir-"));
  for (const name of names) {
    cpSync(name === AUTH ? EXAMPLE : FIXTURE, join(dir, name), { recursive: true });
  }
  return dir;
}

/** The service over `dir` and a keys file of `keys` (and a rules file), with a SIGHUP that waits. */
async function serviceOver(dir: string, keys: unknown[], rules: unknown[] = []) {
  const keysFile = temporaryFile("keys.json", { keys });
  const rulesFile = temporaryFile("rules.json", { rules });
  const service = await start({
    API_KEYS_FILE: keysFile,
    ALERT_RULES_FILE: rulesFile,
    ENDPOINTS_DIR: dir,
    PID_FILE: join(dir, "..", `${Math.random()}.pid`),
  });
  let reloads = 0;
  return {
    service,
    keysFile,
    rulesFile,
    /** Signals, and resolves once this reload served its endpoints (or kept them). */
    hangUp: async () => {
      reloads++;
      service.child.kill("SIGHUP");
      await vi.waitFor(() => expect(reloadLines(service).length).toBeGreaterThanOrEqual(reloads));
    },
  };
}

const reloadLines = (service: Started) =>
  service
    .stdout()
    .split("\n")
    .filter((line) =>
      /SIGHUP: (serving \d+ endpoints|the endpoint folders have problems)/.test(line),
    );

const status = async (service: Started, path: string, secret: string) =>
  (await fetch(`${service.baseUrl}${path}`, { headers: { "X-API-KEY": secret } })).status;

const metrics = async (service: Started) =>
  (await fetch(`${service.baseUrl}/metrics`, { headers: { "X-API-KEY": ADMIN_KEY } })).text();

const EDGE_PATH = `/api/endpoints/${EDGE}?project=default&plan=FREE`;

describe("a SIGHUP", () => {
  it("serves a new endpoint, the key scoped to it and a rule on it, all at once", async () => {
    const dir = endpointsDir();
    const tiered = {
      ...key("tiered", GONE_KEY),
      scopes: [{ endpoint: "*", fixed_params: { plan: "PRO" } }],
    };
    const { service, keysFile, rulesFile, hangUp } = await serviceOver(dir, [
      key("admin", ADMIN_KEY),
    ]);
    expect(await status(service, EDGE_PATH, ADMIN_KEY)).toBe(404);

    cpSync(FIXTURE, join(dir, EDGE), { recursive: true });
    writeFileSync(
      keysFile,
      JSON.stringify({ keys: [key("admin", ADMIN_KEY), key("ops", OPS_KEY, EDGE), tiered] }),
    );
    const rule = {
      name: "edge-errors",
      endpoint: EDGE,
      params: { project: "default", plan: "FREE" },
      condition: { at_least: 1000, within: "5m" },
      webhook: { url: "http://127.0.0.1:9/hook", secret: SECRET },
    };
    writeFileSync(rulesFile, JSON.stringify({ rules: [rule] }));
    await hangUp();

    await vi.waitFor(async () => expect(await status(service, EDGE_PATH, OPS_KEY)).toBe(200));
    const alerts = await fetch(`${service.baseUrl}/api/alerts`, {
      headers: { "X-API-KEY": ADMIN_KEY },
    });
    const listed = (await alerts.json()) as { result: { name: string }[] };
    expect(listed.result.map((entry) => entry.name)).toEqual(["edge-errors"]);
    expect(service.stdout()).not.toMatch(/"level":50/);
    // A * scope fixing a parameter only the new endpoint takes: said, naming the endpoints it
    // reaches unpinned.
    expect(service.stdout()).toMatch(
      /"level":40,.*key 3 \(\\"tiered\\"\) scopes\.0: \* fixes \\"plan\\", which functions\.invocation-stats, logs\.all, usage\.api-counts do not take/,
    );
  });

  it("refuses a key removed from the file, though another entry names an endpoint that went: that entry alone is refused, logged and counted", async () => {
    const dir = endpointsDir(EDGE);
    const { service, keysFile, hangUp } = await serviceOver(dir, [
      key("admin", ADMIN_KEY),
      key("ops", OPS_KEY, EDGE),
      key("gone", GONE_KEY),
    ]);
    expect(await status(service, EDGE_PATH, OPS_KEY)).toBe(200);

    rmSync(join(dir, EDGE), { recursive: true });
    await hangUp();
    expect(await status(service, EDGE_PATH, ADMIN_KEY)).toBe(404);

    // gone's entry deleted; ops's still names the endpoint that went.
    writeFileSync(
      keysFile,
      JSON.stringify({ keys: [key("admin", ADMIN_KEY), key("ops", OPS_KEY, EDGE)] }),
    );
    await hangUp();
    const listing = "/api/endpoints";
    await vi.waitFor(async () => expect(await status(service, listing, GONE_KEY)).toBe(401));
    expect(await status(service, listing, OPS_KEY)).toBe(401);
    expect(await status(service, listing, ADMIN_KEY)).toBe(200);
    expect(service.stdout()).toContain(
      `API_KEYS_FILE ${keysFile}: key 2 (\\"ops\\") scopes.0: no endpoint is named or has the id \\"${EDGE}\\"; that key is refused`,
    );
    const counted = await metrics(service);
    expect(counted).toMatch(/^query_service_reloads_total\{part="keys",outcome="refused"\} [1-9]/m);
    expect(counted).toMatch(
      /^query_service_reloads_total\{part="endpoints",outcome="applied"\} [2-9]/m,
    );
  });

  it("ends the streams of an endpoint it removes or changes, with the reason, and drops its cached values", async () => {
    const dir = endpointsDir(AUTH, EDGE);
    const { service, hangUp } = await serviceOver(dir, [key("admin", ADMIN_KEY)]);
    const headers = { "x-api-key": ADMIN_KEY };
    const follow = await open(
      `${service.baseUrl}/api/endpoints/${EDGE}/follow?project=default&plan=FREE`,
      headers,
    );
    const watch = await open(
      `${service.baseUrl}/api/endpoints/${AUTH}/watch?project=default&period=week`,
      headers,
    );
    await watch.until(() => watch.events.some((event) => event.event === "result"));
    expect(await metrics(service)).toMatch(/^query_service_cache_entries [1-9]/m);

    rmSync(join(dir, EDGE), { recursive: true });
    const sql = join(dir, AUTH, "duckdb.sql");
    writeFileSync(
      sql,
      readFileSync(sql, "utf8").replace("count(*) AS failures", "count(*) * 2 AS failures"),
    );
    await hangUp();

    const endOf = (events: { event?: string; data: string }[]) =>
      events.filter((event) => event.event === "end").map((event) => JSON.parse(event.data).reason);
    await follow.until(() => endOf(follow.events).length > 0);
    await watch.until(() => endOf(watch.events).length > 0);
    expect(endOf(follow.events)).toEqual(["endpoint_removed"]);
    expect(endOf(watch.events)).toEqual(["endpoint_changed"]);
    // The old version's value, and so its warming, went with the swap.
    const counted = await metrics(service);
    expect(counted).toMatch(/^query_service_cache_entries 0$/m);
    expect(counted).toMatch(/^query_service_stream_ends_total\{reason="endpoint_removed"\} 1$/m);
  });
});
