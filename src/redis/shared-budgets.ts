// Per-credential limits counted once across replicas (one budget, in one place): uses a minute
// (forced refreshes) and things held at once (open follow streams, a share of engine work). Each
// answers UNAVAILABLE while Redis is away, and its caller then counts in this process, as it does
// without Redis. Keys name the limit and the credential, never a key or token.
import { randomUUID } from "node:crypto";
import { type RedisLink, UNAVAILABLE } from "./link.ts";

/** A hold on one of a credential's places; released when the work ends. */
export interface Lease {
  release(): void;
}

/** One budget's places across replicas: a lease, false when all are taken, undefined while Redis is away. */
export interface SharedPlaces {
  hold(credential: string, limit: number): Promise<Lease | false | undefined>;
}

/** Counts a credential's uses in the current window, starting the window on its first use. */
const SPEND = `
local used = redis.call('INCR', KEYS[1])
if used == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return used`;

/**
 * Takes a place when fewer than ARGV[1] live leases are held. A lease lives ARGV[2] ms unless
 * renewed, so a replica that dies holding one frees it by then.
 */
const HOLD = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

const RENEW = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
for i, member in ipairs(ARGV) do
  if i > 1 then redis.call('ZADD', KEYS[i - 1], 'XX', now + tonumber(ARGV[1]), member) end
end
for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ARGV[1]) end
return 1`;

const WINDOW_MS = 60_000;
const LEASE_MS = 30_000;

export class SharedBudgets {
  readonly #link: RedisLink;
  readonly #replica = randomUUID();
  /** This process's live leases: member → key, renewed while held. */
  readonly #held = new Map<string, string>();
  readonly #renewal: NodeJS.Timeout;
  #leases = 0;

  constructor(link: RedisLink) {
    this.#link = link;
    this.#renewal = setInterval(() => void this.#renew(), LEASE_MS / 3);
    this.#renewal.unref();
  }

  /** One more use of `limit` a minute: whether it is within the budget; undefined while Redis is away. */
  async spend(budget: string, credential: string, limit: number): Promise<boolean | undefined> {
    const used = await this.#link.run(
      (client) =>
        client.eval(SPEND, 1, `budget:${budget}:${credential}`, WINDOW_MS) as Promise<number>,
    );
    return used === UNAVAILABLE ? undefined : used <= limit;
  }

  /** The places of `budget`, for a caller that counts in its own process while Redis is away. */
  places(budget: string): SharedPlaces {
    return { hold: (credential, limit) => this.#hold(`holds:${budget}:${credential}`, limit) };
  }

  close(): void {
    clearInterval(this.#renewal);
  }

  async #hold(key: string, limit: number): Promise<Lease | false | undefined> {
    const member = `${this.#replica}:${++this.#leases}`;
    const taken = await this.#link.run(
      (client) => client.eval(HOLD, 1, key, limit, LEASE_MS, member) as Promise<number>,
    );
    if (taken === UNAVAILABLE) return undefined;
    if (taken === 0) return false;
    this.#held.set(member, key);
    return {
      release: () => {
        if (!this.#held.delete(member)) return;
        // Not released (Redis away): the lease expires by itself.
        void this.#link.run((client) => client.zrem(key, member));
      },
    };
  }

  async #renew(): Promise<void> {
    if (this.#held.size === 0) return;
    const members = [...this.#held.keys()];
    const keys = members.map((member) => this.#held.get(member) as string);
    await this.#link.run((client) =>
      client.eval(RENEW, keys.length, ...keys, LEASE_MS, ...members),
    );
  }
}
