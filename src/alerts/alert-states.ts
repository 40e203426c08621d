// Each rule's state: pending (not yet evaluated), ok or firing, since when, when last evaluated and
// its last delivery. With Redis, the state is shared: a transition is made by one script, so of
// all the replicas that find a rule's condition changed, exactly one moves it and delivers its
// webhook; and a replica that restarts finds its rules where they were, firing or not. The same
// script keeps the change's message as the rule's outbox, with a lease its deliverer renews: when
// that replica goes before the message was delivered (or given up), another takes it over. Without
// Redis (or while it is away) the state is this process's own.
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { type RedisLink, UNAVAILABLE } from "../redis/link.ts";
import { EXTEND_IF_HELD } from "../redis/scripts.ts";

export type AlertStatus = "pending" | "ok" | "firing";

export interface Delivery {
  /** Epoch ms of the last attempt. */
  at: number;
  type: "alert.firing" | "alert.resolved";
  outcome: "delivered" | "failed";
  attempts: number;
  /** The receiver's last HTTP status; absent when it could not be reached. */
  status?: number;
}

export interface RuleState {
  status: AlertStatus;
  /** When what was last evaluated was computed: an evaluation of something older changes nothing. */
  asOf?: number;
  /** Epoch ms: when the rule entered its status. */
  since?: number;
  evaluatedAt?: number;
  lastDelivery?: Delivery;
}

// A state unwritten for this long belongs to a rule that is gone: Redis drops it.
const KEEP_MS = 30 * 86_400_000;

/** Without Redis, this process delivers what it changed, and nobody else could. */
const LOCAL_CLAIM: Claim = { hold: () => async () => {} };

const SCRIPTS = {
  // Records an evaluation at ARGV[2], and sets the status unless it is so already or the
  // evaluation is of something older (ARGV[4]) than one already taken; 1 when the change is one to
  // tell (into firing, or from firing back to ok), with its message put in the outbox; 0 otherwise
  // (a first evaluation that finds all well included).
  alertTransition: {
    numberOfKeys: 2,
    lua: `
      redis.call('HSET', KEYS[1], 'evaluatedAt', ARGV[2])
      redis.call('PEXPIRE', KEYS[1], ARGV[3])
      local taken = tonumber(redis.call('HGET', KEYS[1], 'asOf') or '') or -1
      if tonumber(ARGV[4]) < taken then return 0 end
      redis.call('HSET', KEYS[1], 'asOf', ARGV[4])
      local current = redis.call('HGET', KEYS[1], 'status')
      if current == ARGV[1] then return 0 end
      redis.call('HSET', KEYS[1], 'status', ARGV[1], 'since', ARGV[2])
      if ARGV[1] == 'ok' and current ~= 'firing' then return 0 end
      redis.call('HSET', KEYS[1], 'outbox', ARGV[5], 'outboxId', ARGV[6])
      redis.call('SET', KEYS[2], ARGV[7], 'PX', ARGV[8])
      return 1`,
  },
  // The outbox's message when no replica holds its lease, which this one then takes.
  alertUnclaimed: {
    numberOfKeys: 2,
    lua: `
      local message = redis.call('HGET', KEYS[1], 'outbox')
      if not message then return false end
      local id = redis.call('HGET', KEYS[1], 'outboxId') or ''
      if not redis.call('SET', KEYS[2], ARGV[1] .. ':' .. id, 'NX', 'PX', ARGV[2]) then return false end
      return {id, message}`,
  },
  // Renews the lease while its holder delivers; 0 when it is no longer its own.
  alertRenew: EXTEND_IF_HELD,
  // Empties the outbox of a message delivered or given up (unless a newer one replaced it), and
  // gives its lease back.
  alertSettled: {
    numberOfKeys: 2,
    lua: `
      if redis.call('HGET', KEYS[1], 'outboxId') == ARGV[1] then
        redis.call('HDEL', KEYS[1], 'outbox', 'outboxId')
      end
      if redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('DEL', KEYS[2]) end
      return 1`,
  },
} as const;

type Scripted = {
  alertTransition(
    key: string,
    lease: string,
    to: string,
    at: number,
    keepMs: number,
    asOf: number,
    outbox: string,
    outboxId: string,
    holder: string,
    leaseMs: number,
  ): Promise<0 | 1>;
  alertUnclaimed(
    key: string,
    lease: string,
    replica: string,
    leaseMs: number,
  ): Promise<[string, string] | null>;
  alertRenew(lease: string, holder: string, leaseMs: number): Promise<number>;
  alertSettled(key: string, lease: string, outboxId: string, holder: string): Promise<number>;
};

/** A change to deliver, as the outbox holds it: opaque here (the caller seals and checks it). */
export interface Outgoing {
  id: string;
  sealed: string;
}

/** Who delivers an outbox's message: this replica, for as long as it renews the lease. */
export interface Claim {
  /**
   * Keeps the lease while the delivery runs. The returned function ends it: settled (delivered
   * or given up) empties the outbox; not settled leaves the message for another replica.
   */
  hold(): (settled: boolean) => Promise<void>;
}

export class AlertStates {
  readonly #link: RedisLink | undefined;
  readonly #local = new Map<string, RuleState>();
  readonly #leaseMs: number;
  /** This replica, in the leases it holds. */
  readonly #replica = randomBytes(9).toString("base64url");

  /** `leaseMs`: how long a deliverer may go unheard before another replica takes its message over. */
  constructor(link?: RedisLink, leaseMs = 30_000) {
    this.#link = link;
    this.#leaseMs = leaseMs;
    for (const [name, script] of Object.entries(SCRIPTS)) {
      if (link && !(name in link.client)) link.client.defineCommand(name, script);
    }
  }

  /** The rule's state, shared when Redis answers. */
  async get(identity: string): Promise<RuleState> {
    const fields = await this.#run((redis) => redis.hgetall(this.#key(identity)));
    if (fields === UNAVAILABLE || fields.status === undefined) return this.#mine(identity);
    return stateOf(fields);
  }

  /**
   * Records an evaluation at `at`, and moves the rule to `to` unless it is there already, or `asOf`
   * (when what was evaluated was computed) is older than what an evaluation already took. A claim on `outgoing` for the one
   * caller, across replicas while Redis answers, whose change is to be told (into firing, or from
   * firing to ok): it delivers it. Undefined for every other.
   */
  async transition(
    identity: string,
    to: "ok" | "firing",
    at: number,
    asOf: number,
    outgoing: Outgoing,
  ): Promise<Claim | undefined> {
    const mine = this.#mine(identity);
    mine.evaluatedAt = at;
    const current = asOf >= (mine.asOf ?? Number.NEGATIVE_INFINITY);
    if (current) mine.asOf = asOf;
    const told = to === "firing" || mine.status === "firing";
    const moved = current && mine.status !== to;
    if (moved) Object.assign(mine, { status: to, since: at });
    const holder = `${this.#replica}:${outgoing.id}`;
    const shared = await this.#run((redis) =>
      (redis as unknown as Scripted).alertTransition(
        this.#key(identity),
        this.#leaseKey(identity),
        to,
        at,
        KEEP_MS,
        asOf,
        outgoing.sealed,
        outgoing.id,
        holder,
        this.#leaseMs,
      ),
    );
    if (shared === UNAVAILABLE) return moved && told ? LOCAL_CLAIM : undefined;
    return shared === 1 ? this.#claim(identity, outgoing.id, holder) : undefined;
  }

  /** The message of a change whose deliverer went before settling it, now claimed by this replica. */
  async unclaimed(identity: string): Promise<(Outgoing & { claim: Claim }) | undefined> {
    const found = await this.#run((redis) =>
      (redis as unknown as Scripted).alertUnclaimed(
        this.#key(identity),
        this.#leaseKey(identity),
        this.#replica,
        this.#leaseMs,
      ),
    );
    if (found === UNAVAILABLE || !Array.isArray(found)) return undefined;
    const [id, sealed] = found;
    return { id, sealed, claim: this.#claim(identity, id, `${this.#replica}:${id}`) };
  }

  /** A claim on a shared outbox message: renewed every third of the lease until settled. */
  #claim(identity: string, id: string, holder: string): Claim {
    const lease = this.#leaseKey(identity);
    return {
      hold: () => {
        const renew = setInterval(() => {
          void this.#run((redis) =>
            (redis as unknown as Scripted).alertRenew(lease, holder, this.#leaseMs),
          );
        }, this.#leaseMs / 3);
        renew.unref();
        return async (settled) => {
          clearInterval(renew);
          if (!settled) return;
          await this.#run((redis) =>
            (redis as unknown as Scripted).alertSettled(this.#key(identity), lease, id, holder),
          );
        };
      },
    };
  }

  async delivered(identity: string, delivery: Delivery): Promise<void> {
    this.#mine(identity).lastDelivery = delivery;
    await this.#run((redis) =>
      redis.hset(this.#key(identity), "lastDelivery", JSON.stringify(delivery)),
    );
  }

  #mine(identity: string): RuleState {
    let state = this.#local.get(identity);
    if (!state) {
      state = { status: "pending" };
      this.#local.set(identity, state);
    }
    return state;
  }

  #run<T>(command: (client: Redis) => Promise<T>): Promise<T | typeof UNAVAILABLE> {
    return this.#link ? this.#link.run(command) : Promise.resolve(UNAVAILABLE);
  }

  #key(identity: string): string {
    return `alert:${identity}`;
  }

  #leaseKey(identity: string): string {
    return `alert-delivery:${identity}`;
  }
}

/** Epoch ms a replica could have written: a whole number from 1970 to 2100. */
const LATEST_MS = Date.UTC(2100, 0, 1);
function epochMs(text: unknown): number | undefined {
  const value = typeof text === "string" || typeof text === "number" ? Number(text) : Number.NaN;
  return Number.isSafeInteger(value) && value >= 0 && value < LATEST_MS ? value : undefined;
}

/**
 * A state as stored. Whatever can write to Redis can write anything there: only the fields a
 * replica writes, of the forms it writes them, are taken; anything else counts as not there.
 */
function stateOf(fields: Record<string, string>): RuleState {
  const status = fields.status === "firing" ? "firing" : "ok";
  const since = epochMs(fields.since);
  const evaluatedAt = epochMs(fields.evaluatedAt);
  const asOf = Number(fields.asOf);
  const lastDelivery = deliveryOf(fields.lastDelivery);
  return {
    status,
    ...(since !== undefined && { since }),
    ...(evaluatedAt !== undefined && { evaluatedAt }),
    ...(Number.isFinite(asOf) && { asOf }),
    ...(lastDelivery && { lastDelivery }),
  };
}

function deliveryOf(text: string | undefined): Delivery | undefined {
  let found: Record<string, unknown>;
  try {
    found = JSON.parse(text ?? "");
  } catch {
    return undefined;
  }
  if (typeof found !== "object" || found === null) return undefined;
  const at = epochMs(found.at);
  const { type, outcome, attempts, status } = found;
  if (at === undefined || (type !== "alert.firing" && type !== "alert.resolved")) return undefined;
  if (outcome !== "delivered" && outcome !== "failed") return undefined;
  if (!Number.isSafeInteger(attempts) || (attempts as number) < 0 || (attempts as number) > 100) {
    return undefined;
  }
  const answered =
    Number.isInteger(status) && (status as number) >= 100 && (status as number) < 600;
  return {
    at,
    type,
    outcome,
    attempts: attempts as number,
    ...(answered && { status: status as number }),
  };
}
