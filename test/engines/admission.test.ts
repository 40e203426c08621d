// The admission gate's bounds, fair pick, deadlines and shutdown, over an engine whose queries end
// when the test says: the timing faults the real engines produce only by chance.
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type AdmissionError,
  type AdmissionOptions,
  type AdmittedEngine,
  admit,
} from "../../src/engines/admission.ts";
import { EngineError, type QueryEngine, type QueryRequest } from "../../src/engines/engine.ts";

interface Held {
  request: QueryRequest;
  finish: () => void;
}

/**
 * An engine whose every query waits for `finish()`. An aborted one ends as DuckDB's would, unless
 * `stopsOnAbort` is false: an engine slow to stop, which keeps its slot past the deadline.
 */
function heldEngine({ stopsOnAbort = true } = {}) {
  const started: Held[] = [];
  let settled = 0;
  const engine: QueryEngine = {
    dialect: "duckdb",
    run: (request) =>
      new Promise((resolve, reject) => {
        const finish = () => resolve({ rows: [{ endpoint: request.endpoint }], truncated: false });
        if (stopsOnAbort) {
          request.signal?.addEventListener("abort", () =>
            reject(new EngineError("engine_timeout", "interrupted")),
          );
        }
        started.push({ request, finish });
      }).finally(() => {
        settled++;
      }) as ReturnType<QueryEngine["run"]>,
    ping: async () => {},
    close: async () => {},
  };
  return { engine, started, settled: () => settled };
}

const OPTIONS: AdmissionOptions = { maxConcurrency: 2, maxQueue: 3, maxPerCredential: 4 };

const query = (credential: string, name = credential): QueryRequest => ({
  endpoint: name,
  sql: "",
  params: {},
  maxRows: 10,
  credential,
});

/** Work no credential caused: cache warming ("warming") or a follow poll ("follow"). */
const background = (trigger: "warming" | "follow", name: string): QueryRequest => ({
  endpoint: name,
  sql: "",
  params: {},
  maxRows: 10,
  trigger,
});

/** Lets every settled promise's callbacks run: the gate's bookkeeping, the callers' answers. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Flooders of the gate, one per request: each tops its share back up after every answer, so its
 * line never empties. `step()` ends the longest-running query, as the engine would, and lets the
 * gate start the next; tests count starts, not time.
 */
function flood(
  gate: AdmittedEngine,
  started: Held[],
  flooders: QueryRequest[],
  share: number,
): { step: () => Promise<void> } {
  const outstanding = new Map(flooders.map((request) => [request, 0]));
  const topUp = () => {
    for (const request of flooders) {
      while ((outstanding.get(request) ?? 0) < share) {
        outstanding.set(request, (outstanding.get(request) ?? 0) + 1);
        void gate
          .run(request)
          .catch(() => {})
          .finally(() => outstanding.set(request, (outstanding.get(request) ?? 0) - 1));
      }
    }
  };
  topUp();
  let ended = 0;
  return {
    async step() {
      started[ended++]?.finish();
      await settle();
      topUp();
      await settle();
    },
  };
}

/** What a promise came to: its result's endpoint, or its error's code. */
const outcome = (promise: Promise<{ rows: { endpoint?: unknown }[] }>) =>
  promise.then(
    (result) => `ok:${result.rows[0]?.endpoint}`,
    (error: AdmissionError | EngineError) => error.code,
  );

afterEach(() => {
  vi.useRealTimers();
});

describe("admission", () => {
  it("runs at most maxConcurrency at once, one credential at most half, and queues the rest", async () => {
    const { engine, started } = heldEngine();
    const gate = admit(engine, OPTIONS);
    const answers = [query("a", "a1"), query("a", "a2"), query("b", "b1")].map((request) =>
      outcome(gate.run(request)),
    );
    expect(started.map((held) => held.request.endpoint)).toEqual(["a1", "b1"]);
    expect(gate.stats()).toMatchObject({ running: 2, queued: 1 });
    started[0]?.finish();
    await vi.waitFor(() => expect(started).toHaveLength(3));
    expect(started[2]?.request.endpoint).toBe("a2");
    started[1]?.finish();
    started[2]?.finish();
    expect(await Promise.all(answers)).toEqual(["ok:a1", "ok:a2", "ok:b1"]);
    expect(gate.stats()).toMatchObject({ running: 0, queued: 0 });
  });

  it("refuses at once past a credential's share (429), and a newcomer to a full queue already holding its equal share (503)", async () => {
    const { engine } = heldEngine();
    const gate = admit(engine, OPTIONS);
    for (let i = 0; i < 4; i++) void gate.run(query("a")).catch(() => {});
    const share = await gate.run(query("a")).catch((error: AdmissionError) => error);
    expect(share).toMatchObject({ code: "rate_limited", retryAfterSeconds: 1 });

    const even = admit(heldEngine().engine, OPTIONS);
    // Two running, three waiting: one place each of five, more than g's equal share of a sixth.
    for (const name of ["b", "c", "d", "e", "f"]) void even.run(query(name)).catch(() => {});
    const full = await even.run(query("g")).catch((error: AdmissionError) => error);
    expect(full).toMatchObject({ code: "overloaded", retryAfterSeconds: 1 });
    expect(gate.stats().refused).toMatchObject({ rate_limited: 1 });
    expect(even.stats()).toMatchObject({ queued: 3, refused: { overloaded: 1 } });
  });

  it("gives a newcomer to a full queue the newest place of the credential holding the most, which is answered 503", async () => {
    const { engine, started } = heldEngine();
    const gate = admit(engine, { maxConcurrency: 2, maxQueue: 4, maxPerCredential: 10 });
    const a = [1, 2, 3, 4].map((i) => outcome(gate.run(query("a", `a${i}`))));
    const b = [1, 2].map((i) => outcome(gate.run(query("b", `b${i}`))));
    // a1 and b1 run; a2, a3, a4, b2 fill the queue.
    expect(gate.stats()).toMatchObject({ running: 2, queued: 4 });
    const c = outcome(gate.run(query("c", "c1")));
    expect(await a[3]).toBe("overloaded");
    const d = outcome(gate.run(query("d", "d1")));
    expect(await a[2]).toBe("overloaded");
    // a holds 2 now, as b does: the next newcomer takes the place of one of them.
    const e = outcome(gate.run(query("e", "e1")));
    // c holds its equal share of the places (six among five): it takes no other's.
    expect(await outcome(gate.run(query("c", "c2")))).toBe("overloaded");
    expect(gate.stats()).toMatchObject({ queued: 4, refused: { overloaded: 4 } });
    for (let i = 0; i < 6; i++) {
      started[i]?.finish();
      await settle();
    }
    const answered = await Promise.all([...a.slice(0, 2), ...b, c, d, e]);
    expect(answered.filter((answer) => answer === "overloaded")).toHaveLength(1);
    expect(answered.filter((answer) => answer.startsWith("ok:"))).toContain("ok:c1");
  });

  it("gives a freed slot to the line that used the least engine time among those running equally few", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const { engine, started } = heldEngine();
    const gate = admit(engine, { maxConcurrency: 2, maxQueue: 20, maxPerCredential: 10 });
    for (const name of ["a1", "b1", "a2", "b2", "a3"])
      void gate.run(query(name[0] as string, name));
    vi.setSystemTime(Date.now() + 1_000);
    started[0]?.finish();
    await settle();
    // A light caller arrives while b1 has run for a second and more.
    const light = outcome(gate.run(query("light", "light1")));
    vi.setSystemTime(Date.now() + 1_000);
    started[1]?.finish();
    await settle();
    // b (two seconds used) waited longer in turn, but light has used none.
    expect(started.map((held) => held.request.endpoint)).toEqual(["a1", "b1", "a2", "light1"]);
    started[3]?.finish();
    expect(await light).toBe("ok:light1");
  });

  it.each([2, 8])(
    "%i credentials filling the queue within their shares never keep another's query out",
    async (flooders) => {
      const { engine, started } = heldEngine();
      // Each flooder's share is the default, half of the slots and places.
      const gate = admit(engine, { maxConcurrency: 2, maxQueue: 20, maxPerCredential: 11 });
      const names = Array.from({ length: flooders }, (_, i) => query(`flood${i}`));
      const { step } = flood(gate, started, names, 11);
      expect(gate.stats().queued).toBe(20);
      for (let i = 1; i <= 6; i++) {
        const name = `victim${i}`;
        let answer: string | undefined;
        void outcome(gate.run(query("victim", name))).then((result) => {
          answer = result;
        });
        for (let steps = 0; answer === undefined && steps < 50; steps++) await step();
        expect(answer, name).toBe(`ok:${name}`);
      }
    },
  );

  it("keeps places for background work that callers' queries cannot take, and never displaces it", async () => {
    const { engine, started } = heldEngine();
    const gate = admit(engine, { maxConcurrency: 2, maxQueue: 2, maxPerCredential: 10 });
    const a = [1, 2, 3].map((i) => outcome(gate.run(query("a", `a${i}`))));
    void gate.run(query("b", "b1")).catch(() => {});
    // The callers' places are full: a2, a3.
    const warming = outcome(gate.run(background("warming", "refresh")));
    const poll = outcome(gate.run({ ...query("a", "poll"), trigger: "follow", background: true }));
    expect(gate.stats()).toMatchObject({ running: 2, queued: 4 });
    // A newcomer displaces the newest query of the credential holding most, not its feed's poll.
    const c = outcome(gate.run(query("c", "c1")));
    expect(await a[2]).toBe("overloaded");
    expect(gate.held("a")).toBe(3);
    // Background work waits: callers hold at most one slot, so the first to free goes to it.
    started[0]?.finish();
    await settle();
    expect(started[2]?.request.endpoint).toBe("refresh");
    for (let i = 1; i < 6; i++) {
      started[i]?.finish();
      await settle();
    }
    expect(await Promise.all([warming, poll, c, a[1]])).toEqual([
      "ok:refresh",
      "ok:poll",
      "ok:c1",
      "ok:a2",
    ]);
  });

  it("keeps slots free from a flood, and gives a freed one to the credential running fewest", async () => {
    const { engine, started } = heldEngine();
    const gate = admit(engine, { maxConcurrency: 4, maxQueue: 10, maxPerCredential: 10 });
    for (let i = 1; i <= 5; i++) void gate.run(query("flood", `flood${i}`)).catch(() => {});
    // The flood holds half the slots: a newcomer starts at once.
    const light = outcome(gate.run(query("dashboard", "light")));
    expect(started.map((held) => held.request.endpoint)).toEqual(["flood1", "flood2", "light"]);
    started[2]?.finish();
    expect(await light).toBe("ok:light");
    for (let i = 1; i <= 2; i++) void gate.run(query("other", `other${i}`)).catch(() => {});
    expect(started.map((held) => held.request.endpoint).slice(3)).toEqual(["other1", "other2"]);
    // Both at their share now; when other1 ends, other (1 running) goes before flood (2 running).
    void gate.run(query("other", "other3")).catch(() => {});
    started[3]?.finish();
    await vi.waitFor(() => expect(started).toHaveLength(6));
    expect(started[5]?.request.endpoint).toBe("other3");
  });

  it.each([
    ["2 flooding credentials", [query("a"), query("b")]],
    ["3 flooding credentials", [query("a"), query("b"), query("c")]],
    ["warming and follow polls flooding", [background("warming", "r"), background("follow", "f")]],
  ])(
    "serves credentials with equal running work in turn: %s cannot starve another caller",
    async (_, flooders) => {
      const { engine, started } = heldEngine();
      const gate = admit(engine, { maxConcurrency: 2, maxQueue: 20, maxPerCredential: 4 });
      const { step } = flood(gate, started, flooders, 4);
      // A dashboard asks six times, each when the last has answered, while the flooders hold both
      // slots and keep their lines full.
      const waits: number[] = [];
      for (let i = 1; i <= 6; i++) {
        const name = `victim${i}`;
        const arrival = started.length;
        let answer: string | undefined;
        void outcome(gate.run(query("victim", name))).then((result) => {
          answer = result;
        });
        for (let steps = 0; answer === undefined && steps < 50; steps++) await step();
        expect(answer, name).toBe(`ok:${name}`);
        // Starts of others between its arrival and its own: at most one turn of each flooder.
        waits.push(started.findIndex((held) => held.request.endpoint === name) - arrival);
      }
      expect(Math.max(...waits)).toBeLessThanOrEqual(flooders.length);
    },
  );

  it("keeps a slot for work no credential caused: each warming or follow poll starts at the next free slot", async () => {
    const { engine, started } = heldEngine();
    const gate = admit(engine, { maxConcurrency: 2, maxQueue: 20, maxPerCredential: 4 });
    const { step } = flood(gate, started, [query("a"), query("b"), query("c")], 4);
    const answers: Promise<string>[] = [];
    for (let i = 1; i <= 6; i++) {
      const name = i % 2 ? `refresh${i}` : `follow${i}`;
      // Both slots are the flooders' when it arrives; the next one to free is its.
      expect(started.slice(-2).every((held) => held.request.credential)).toBe(true);
      const arrival = started.length;
      answers.push(outcome(gate.run(background(i % 2 ? "warming" : "follow", name))));
      await step();
      expect(started[arrival]?.request.endpoint, name).toBe(name);
      // Two more ends: the flooder's running beside it, then it.
      await step();
      await step();
    }
    expect(await Promise.all(answers)).toEqual(
      [1, 2, 3, 4, 5, 6].map((i) => (i % 2 ? `ok:refresh${i}` : `ok:follow${i}`)),
    );
  });

  it("answers a query whose deadline passes while queued with 504, and never starts it", async () => {
    vi.useFakeTimers();
    const { engine, started } = heldEngine({ stopsOnAbort: false });
    const gate = admit(engine, { ...OPTIONS, timeoutMs: 500 });
    void gate.run(query("a", "a1")).catch(() => {});
    void gate.run(query("c", "c1")).catch(() => {});
    const queued = gate.run(query("b", "b1")).catch((error: EngineError) => error);
    await vi.advanceTimersByTimeAsync(500);
    expect(await queued).toMatchObject({
      code: "engine_timeout",
      message: "The query waited 500 ms for the engine and was not started.",
    });
    expect(started.map((held) => held.request.endpoint)).toEqual(["a1", "c1"]);
    expect(gate.stats()).toMatchObject({ queued: 0, refused: { expired: 1 } });
  });

  it("stops a running query at its deadline: the caller is answered and the engine's work aborted", async () => {
    vi.useFakeTimers();
    const { engine, started, settled } = heldEngine();
    const gate = admit(engine, { ...OPTIONS, timeoutMs: 500 });
    const running = gate.run(query("a")).catch((error: EngineError) => error);
    expect(started[0]?.request.deadline).toBe(Date.now() + 500);
    await vi.advanceTimersByTimeAsync(500);
    expect(await running).toMatchObject({ code: "engine_timeout" });
    expect(started[0]?.request.signal?.aborted).toBe(true);
    expect(settled()).toBe(1);
    expect(gate.stats().running).toBe(0);
  });

  it("takes a query whose caller stopped waiting out of line, or stops it where it runs", async () => {
    const { engine, started } = heldEngine();
    const gate = admit(engine, OPTIONS);
    const [waits, runs] = [new AbortController(), new AbortController()];
    const running = gate.run({ ...query("a", "a1"), signal: runs.signal }).catch((e) => e);
    void gate.run(query("c", "c1"));
    const queued = gate.run({ ...query("b", "b1"), signal: waits.signal }).catch((e) => e);
    await settle();
    waits.abort();
    expect(await queued).toBeInstanceOf(DOMException);
    expect(gate.stats().queued).toBe(0);
    runs.abort();
    expect(await running).toBeInstanceOf(DOMException);
    expect(started[0]?.request.signal?.aborted).toBe(true);
    // The stopped query's slot goes to the next in line; the withdrawn one never started.
    void gate.run(query("b", "b2"));
    await settle();
    expect(started.map((held) => held.request.endpoint)).toEqual(["a1", "c1", "b2"]);
  });

  it("on drain refuses the queued and new queries at once and lets running ones finish; abortRunning ends them", async () => {
    const { engine, started } = heldEngine();
    const gate = admit(engine, OPTIONS);
    const answers = ["a", "b", "c"].map((name) => outcome(gate.run(query(name))));
    gate.drain();
    expect(await answers[2]).toBe("shutting_down");
    expect(await outcome(gate.run(query("d")))).toBe("shutting_down");
    started[0]?.finish();
    expect(await answers[0]).toBe("ok:a");
    gate.abortRunning();
    expect(await answers[1]).toBe("shutting_down");
    expect(started[1]?.request.signal?.aborted).toBe(true);
    expect(started).toHaveLength(2);
  });
});
