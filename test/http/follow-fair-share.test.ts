// Issue 34's starvation, replayed: one key holds every follow stream its limits allow, each with the
// costliest filters they allow, and its feeds' polls never finish (the engine holds them: the fault
// a real engine gives only with seconds-long queries). Another tenant's feed must still poll every
// interval and deliver what arrives. Feed polls were nobody's work and waited in one line with the
// attacker's; now each is charged to the credential that opened its feed, and fair share picks it.
import { describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import { MAX_LIST_TERMS } from "../../src/endpoints/params.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { configFrom } from "../support/config-from.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import { edgeLog, micros, SECOND, shift } from "../support/fixtures.ts";
import {
  closers,
  FOLLOW,
  FOLLOW_CLOCK,
  NOW,
  open,
  QUERY,
  records,
} from "../support/follow-client.ts";
import { API_KEY } from "../support/service.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const ATTACKER_KEY = "attacker-key-0123456789abcdef";
const TENANT_KEY = "tenant-key-0123456789abcdef";

// The longest lists and a pattern at its cost limit (re2-pattern.ts): all the validator takes.
const COSTLIEST = new URLSearchParams({
  status: Array.from({ length: MAX_LIST_TERMS }, (_, i) => String(500 + i)).join(","),
  method: Array.from({ length: MAX_LIST_TERMS }, (_, i) => `M${"X".repeat(i)}`).join(","),
  search_regex: "(?:\\w?\\W?){200}",
}).toString();

/**
 * A service on DuckDB for two keys, each with a share of that many queries. Queries with a status filter
 * (the attacker's) are held in the engine until the test ends; the others run and are counted.
 */
async function twoTenants(maxPerCredential = 4) {
  const duck = await createDuckDbEngine({ now: () => micros(NOW) });
  await replaceTables(duck, { edge_logs: [] });
  const held: (() => void)[] = [];
  const polls = { unfiltered: 0, held: 0 };
  const charged: (string | undefined)[] = [];
  const engine: QueryEngine = {
    dialect: duck.dialect,
    ping: () => duck.ping(),
    close: async () => {},
    async run(query) {
      charged.push(query.credential);
      if (!query.params.status) {
        const result = await duck.run(query);
        polls.unfiltered++;
        return result;
      }
      polls.held++;
      await new Promise<void>((release) => held.push(release));
      return duck.run(query);
    },
  };
  const keys = [
    { name: "attacker", sha256: sha256Hex(ATTACKER_KEY), scopes: [{ endpoint: "logs.all" }] },
    { name: "tenant", sha256: sha256Hex(TENANT_KEY), scopes: [{ endpoint: "logs.all" }] },
  ];
  const keysFile = new KeysFile(temporaryFile("keys.json", { keys }));
  const admission = { maxConcurrency: 4, maxQueue: 100, maxPerCredential };
  // API_KEY: the operator's, which reads /metrics.
  const app = await serviceApp(
    configFrom({
      auth: { apiKeys: [API_KEY] },
      follow: FOLLOW,
      admission: { ...admission, timeoutMs: undefined },
    }),
    { engine, keysFile, follow: FOLLOW_CLOCK },
  );
  closers.push(async () => {
    for (const release of held.splice(0)) release();
    await app.close();
    await duck.close();
  });
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  const follow = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
  const metric = async (name: string) => {
    const text = (await app.inject({ url: "/metrics", headers: { "x-api-key": API_KEY } })).body;
    return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
  };
  const attack = async (streams: number) => {
    for (let i = 0; i < streams; i++) {
      await open(`${follow}&${COSTLIEST}&search=${i}`, { "x-api-key": ATTACKER_KEY });
    }
    // Every attacking feed has polled and its poll is held, running (at most half the slots: 2)
    // or waiting: the attacker's share is that full.
    await expect.poll(() => polls.held).toBe(2);
    await expect.poll(() => metric("query_service_engine_queued")).toBe(streams - 2);
  };
  /** Unfiltered polls answered from now on: at least `count`, or the test fails by timeout. */
  const expectPolls = async (count: number) => {
    const from = polls.unfiltered;
    await expect
      .poll(() => polls.unfiltered - from, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(count);
  };
  const arrive = (id: string) =>
    replaceTables(duck, { edge_logs: [edgeLog(shift(NOW, SECOND), { id })] });
  return { app, follow, attack, expectPolls, arrive, charged };
}

describe("a feed's polls under another key's costliest follows", () => {
  it("go on every interval, charged to the key whose follower opened the feed and within its share", async () => {
    const { app, follow, attack, expectPolls, arrive, charged } = await twoTenants();
    // Four streams (the per-credential cap), each its own feed: one more is refused.
    await attack(4);
    const fifth = await fetch(`${follow}&${COSTLIEST}`, { headers: { "x-api-key": ATTACKER_KEY } });
    expect(fifth.status).toBe(429);
    await fifth.body?.cancel();

    const tenant = await open(follow, { "x-api-key": TENANT_KEY });
    await expectPolls(10);
    await arrive("arrived");
    await tenant.until(() => records(tenant).length === 1);
    expect(records(tenant)[0]?.id).toBe("arrived");
    // The attacker's four polls fill its share, so its own request is refused; the tenant's is not.
    const page = (key: string) =>
      app.inject({ url: `/api/endpoints/logs.all?${QUERY}`, headers: { "x-api-key": key } });
    const refused = await page(ATTACKER_KEY);
    expect(refused.statusCode).toBe(429);
    expect(refused.body).toContain("queries running or waiting");
    expect((await page(TENANT_KEY)).statusCode).toBe(200);
    // No poll is nobody's: each went to the key that opened its feed.
    expect([...new Set(charged)].sort()).toEqual(["attacker", "tenant"]);
  });

  it("of a feed the attacker opened and shares with the tenant go on, charged to the tenant while the attacker's share is full", async () => {
    const { follow, attack, expectPolls, arrive, charged } = await twoTenants(3);
    // The attacker opens the tenant's feed first, then fills its share of 3 with held polls.
    await open(follow, { "x-api-key": ATTACKER_KEY });
    const tenant = await open(follow, { "x-api-key": TENANT_KEY });
    await attack(3);
    await expectPolls(1);
    const from = charged.length;
    await expectPolls(10);
    expect(new Set(charged.slice(from).filter((who) => who !== "attacker"))).toEqual(
      new Set(["tenant"]),
    );
    await arrive("arrived");
    await tenant.until(() => records(tenant).length === 1);
  });
});
