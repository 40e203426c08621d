// A rule's state, in this process and shared through a real redis-server: one transition told per
// change, an evaluation of something older than one taken changes nothing, and a state read back
// from Redis is only what a replica could have written.
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { AlertStates } from "../../src/alerts/alert-states.ts";
import { RedisLink } from "../../src/redis/link.ts";
import { redisServer } from "../support/redis-server.ts";

const redis = redisServer();
const links: RedisLink[] = [];
afterEach(async () => {
  for (const link of links.splice(0)) await link.close();
});

let namespaces = 0;
/** Two replicas' states on a Redis namespace of their own, and that namespace. */
async function sharedStates(leaseMs?: number) {
  const prefix = `alert-states-${process.pid}-${++namespaces}:`;
  const states: AlertStates[] = [];
  for (let i = 0; i < 2; i++) {
    const link = new RedisLink({ url: redis.url, prefix, timeoutMs: 1_000 });
    expect(await link.waitUntilUp(5_000)).toBe(true);
    links.push(link);
    states.push(new AlertStates(link, leaseMs));
  }
  return { states: states as [AlertStates, AlertStates], prefix };
}

/** Messages sealed so far: an evaluation seals one only when it is the one to tell a change. */
let sealed = 0;
/** Whether `states` is the one to tell of this change (it then holds a claim on its message). */
async function told(states: AlertStates, to: "ok" | "firing", at: number, asOf: number) {
  const handed = await states.evaluate("r", to, at, asOf, () => {
    const id = `msg_${++sealed}`;
    return { id, sealed: `sealed ${id}` };
  });
  return handed?.changed === true;
}

describe("alert states", () => {
  it.each([
    [
      "in this process",
      async (): Promise<[AlertStates, AlertStates]> => {
        const one = new AlertStates();
        return [one, one];
      },
    ],
    ["shared by two replicas", async () => (await sharedStates()).states],
  ])(
    "%s: tell into firing and back to ok once each, and never for an older evaluation",
    async (_, made) => {
      const [first, second] = await made();
      sealed = 0;
      // All well at first: nothing to tell.
      expect(await told(first, "ok", 1, 100)).toBe(false);
      expect(await told(first, "firing", 2, 200)).toBe(true);
      // The other replica judging the same value, or an older one, tells nothing.
      expect(await told(second, "firing", 3, 200)).toBe(false);
      expect(await told(second, "ok", 3, 150)).toBe(false);
      expect((await first.get("r")).status).toBe("firing");
      expect(await told(second, "ok", 4, 300)).toBe(true);
      expect(await told(first, "ok", 5, 300)).toBe(false);
      expect(await first.get("r")).toMatchObject({ status: "ok", since: 4 });
      expect(sealed).toBe(2);
    },
  );

  it("takes only what a replica writes from Redis: a forged state is read as nothing of it", async () => {
    const { states, prefix } = await sharedStates();
    await told(states[0], "firing", 1_000, 1);
    const client = new Redis(redis.url);
    try {
      await client.hset(`${prefix}alert:r`, {
        since: "1e300",
        evaluatedAt: "soon",
        lastDelivery: JSON.stringify({
          at: 5,
          type: "alert.firing",
          outcome: "delivered",
          attempts: 1,
          secret: "x",
        }),
      });
      expect(await states[1].get("r")).toEqual({
        status: "firing",
        asOf: 1,
        lastDelivery: { at: 5, type: "alert.firing", outcome: "delivered", attempts: 1 },
      });
      await client.hset(`${prefix}alert:r`, { lastDelivery: '{"at":"x"}' });
      expect((await states[1].get("r")).lastDelivery).toBeUndefined();
    } finally {
      client.disconnect();
    }
  });

  it("hands a change's message to another replica when its deliverer goes before settling it, and to no one once settled", async () => {
    const [first, second] = (await sharedStates(200)).states;
    const composed = (id: string) => () => ({ id, sealed: id.toUpperCase() });
    const handed = await first.evaluate("r", "firing", 1, 1, composed("msg_a"));
    expect(handed).toMatchObject({ id: "msg_a", changed: true });
    const stop = handed?.claim.hold();
    // Held and renewed: an evaluation elsewhere that changes nothing takes nothing, however long.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await second.evaluate("r", "firing", 2, 2, composed("msg_b"))).toBeUndefined();
    // Its deliverer goes without settling it: once its lease lapses, the other replica takes it.
    await stop?.(false);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const taken = await second.evaluate("r", "firing", 3, 3, composed("msg_c"));
    expect(taken).toMatchObject({ id: "msg_a", sealed: "MSG_A", changed: false });
    expect(await first.evaluate("r", "firing", 4, 4, composed("msg_d"))).toBeUndefined();
    await taken?.claim.hold()(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await first.evaluate("r", "firing", 5, 5, composed("msg_e"))).toBeUndefined();
  });
});
