// Issue 34's starvation, replayed: one key holds every follow stream its limits allow, each with the
// costliest filters they allow, and its feeds' polls never finish (the engine holds them: the fault
// a real engine gives only with seconds-long queries). Another tenant's feed must still poll every
// interval and deliver what arrives. Feed polls were nobody's work and waited in one line with the
// attacker's; now each is charged to the credential that opened its feed, and fair share picks it.
import { describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.ts";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import { MAX_LIST_TERMS } from "../../src/endpoints/params.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import { edgeLog, micros, SECOND, shift } from "../support/fixtures.ts";
import { closers, FOLLOW, NOW, open, QUERY, records } from "../support/follow-client.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const ATTACKER_KEY = "attacker-key-0123456789abcdef";
const TENANT_KEY = "tenant-key-0123456789abcdef";

// The longest lists and a pattern at its cost limit (re2-pattern.ts): all the validator takes.
const COSTLIEST = new URLSearchParams({
  status: Array.from({ length: MAX_LIST_TERMS }, (_, i) => String(500 + i)).join(","),
  method: Array.from({ length: MAX_LIST_TERMS }, (_, i) => `M${"X".repeat(i)}`).join(","),
  search_regex: "(?:\\w?\\W?){200}",
}).toString();

describe("a feed's polls under another key's costliest follows", () => {
  it("go on every interval, charged to the key whose follower opened the feed and within its share", async () => {
    const duck = await createDuckDbEngine({ now: () => micros(NOW) });
    await replaceTables(duck, { edge_logs: [] });
    const held: (() => void)[] = [];
    const polls = { tenant: 0, attacker: 0 };
    const credentials = new Set<string | undefined>();
    const engine: QueryEngine = {
      dialect: duck.dialect,
      ping: () => duck.ping(),
      close: async () => {},
      async run(query) {
        credentials.add(query.credential);
        if (!query.params.status) {
          const result = await duck.run(query);
          polls.tenant++;
          return result;
        }
        // The attacker's polls: running until the test ends.
        polls.attacker++;
        await new Promise<void>((release) => held.push(release));
        return duck.run(query);
      },
    };
    const keys = [
      { name: "attacker", sha256: sha256Hex(ATTACKER_KEY), scopes: [{ endpoint: "logs.all" }] },
      { name: "tenant", sha256: sha256Hex(TENANT_KEY), scopes: [{ endpoint: "logs.all" }] },
    ];
    const keysFile = new KeysFile(temporaryFile("keys.json", { keys }));
    // Each key's share of the engine: 4 queries running or waiting.
    const admission = { maxConcurrency: 4, maxQueue: 100, maxPerCredential: 4 };
    const app = await buildApp({ engine, keysFile, follow: FOLLOW, admission });
    closers.push(async () => {
      for (const release of held.splice(0)) release();
      await app.close();
      await duck.close();
    });
    const base = await app.listen({ host: "127.0.0.1", port: 0 });
    const follow = `${base}/api/endpoints/logs.all/follow?${QUERY}`;

    // Four streams (the per-credential cap), each its own feed: one more is refused.
    for (let i = 0; i < 4; i++) {
      await open(`${follow}&${COSTLIEST}&search=${i}`, { "x-api-key": ATTACKER_KEY });
    }
    const fifth = await fetch(`${follow}&${COSTLIEST}`, { headers: { "x-api-key": ATTACKER_KEY } });
    expect(fifth.status).toBe(429);
    await fifth.body?.cancel();
    await expect.poll(() => polls.attacker).toBeGreaterThanOrEqual(2);

    const tenant = await open(follow, { "x-api-key": TENANT_KEY });
    const from = polls.tenant;
    await expect.poll(() => polls.tenant - from, { timeout: 10_000 }).toBeGreaterThanOrEqual(10);
    const arriving = edgeLog(shift(NOW, SECOND), { id: "arrived" });
    await replaceTables(duck, { edge_logs: [arriving] });
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
    expect([...credentials].sort()).toEqual(["attacker", "tenant"]);
  });
});
