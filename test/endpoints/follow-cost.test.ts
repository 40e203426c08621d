// What a live tail costs per record: a feed's poll that finds 16 000 records within the lag sends
// each once, in order, for O(log n) comparisons of record order each — not a walk and a sort of
// every record still within the lag per record sent, which held the event loop for seconds.
// Counted, not timed: the records share one microsecond, so every comparison of two of them is one
// Buffer.compare of their ids, which the test counts.
import { afterEach, describe, expect, it, vi } from "vitest";
import { cursorCodec } from "../../src/endpoints/cursor.ts";
import { type Follower, FollowHub } from "../../src/endpoints/follow.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import type { Row } from "../../src/engines/engine.ts";
import { catalog } from "../support/catalog.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import { edgeLog, MICROSECOND, micros, PROJECT, shift } from "../support/fixtures.ts";
import { inOrder, NOW } from "../support/follow-client.ts";

const RECORDS = 16_000;
/** Comparisons per record and log2 of the records: a sort of them all, and a few heaps' worth. */
const PER_RECORD_AND_LOG = 4;
const CODEC = cursorCodec("a-cursor-secret-of-at-least-32-characters");
const LOGS = catalog.find((endpoint) => endpoint.name === "logs.all") as (typeof catalog)[number];
const PARAMS = {
  ...Object.fromEntries([...LOGS.paramNames].map((name) => [name, null])),
  project: PROJECT,
  project_tier: "FREE",
};

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closers.splice(0).reverse()) await close();
});

describe("a live tail", () => {
  it("sends 16 000 records within the lag each once, in order, for O(n log n) comparisons in all", async () => {
    // One microsecond after the clock: every record is news to a stream opened now.
    const at = shift(NOW, MICROSECOND);
    const rows = Array.from({ length: RECORDS }, (_, i) => edgeLog(at, { id: `burst-${i}` }));
    const expected = inOrder(rows).map((row) => row.id);
    const duck = await createDuckDbEngine({ now: () => micros(NOW) });
    closers.push(() => duck.close());
    await replaceTables(duck, { edge_logs: rows });
    const hub = new FollowHub(duck, {
      intervalMs: 50,
      lagMs: 60_000,
      clock: () => micros(NOW),
      cursors: CODEC,
    });
    closers.push(() => hub.close());

    const bound = PER_RECORD_AND_LOG * RECORDS * Math.log2(RECORDS);
    let comparisons = 0;
    const compareIds = Buffer.compare;
    // Past the bound the comparator throws, which ends that poll at once instead of letting a
    // quadratic delivery hold the test's event loop for minutes.
    vi.spyOn(Buffer, "compare").mockImplementation((a, b) => {
      if (++comparisons > bound) throw new Error("more comparisons than the bound");
      return compareIds(a, b);
    });
    const sent: string[] = [];
    let lastEventId = "";
    const follower: Follower = {
      credential: "reader",
      // Each event id made, as a Server-Sent Events stream makes them.
      deliver(record: Row, cursor) {
        sent.push(String(record.id));
        lastEventId = cursor();
        return true;
      },
      ready: async () => {},
      fail: (error) => {
        throw error;
      },
    };
    closers.push(hub.follow(LOGS, PARAMS, undefined, follower));
    await expect
      .poll(() => sent.length === RECORDS || comparisons > bound, { timeout: 60_000 })
      .toBe(true);
    vi.restoreAllMocks();

    expect(comparisons).toBeLessThanOrEqual(bound);
    expect(sent).toEqual(expected);
    // The last id names the 64 newest records, past a horizon at the newest one left out.
    const position = CODEC.decodeStream(lastEventId);
    expect(position?.delivered).toHaveLength(64);
    expect(position?.horizon).toEqual({ micros: micros(at), id: expected.at(-65) });
  }, 90_000);
});
