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
import { defineScripts, EXTEND_IF_HELD } from "../redis/scripts.ts";

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
  // Records an evaluation at ARGV[2] of what was computed at ARGV[4] (an older one than already
  // taken changes nothing), and moves a first evaluation that finds all well to ok, untold. 1 when
  // the status is to change and be told (into firing, or from firing back to ok): the caller then
  // seals its message and runs alertTransition. Otherwise the outbox's message when no replica
  // holds its lease, which this one (ARGV[5]) then takes; 0 when there is none.
  alertEvaluated: {
    numberOfKeys: 2,
    lua: `
      redis.call('HSET', KEYS[1], 'evaluatedAt', ARGV[2])
      redis.call('PEXPIRE', KEYS[1], ARGV[3])
      local taken = tonumber(redis.call('HGET', KEYS[1], 'asOf') or '') or -1
      if tonumber(ARGV[4]) >= taken then
        redis.call('HSET', KEYS[1], 'asOf', ARGV[4])
        local current = redis.call('HGET', KEYS[1], 'status')
        if current ~= ARGV[1] then
          if ARGV[1] == 'firing' or current == 'firing' then return 1 end
          redis.call('HSET', KEYS[1], 'status', ARGV[1], 'since', ARGV[2])
          return 0
        end
      end
      local message = redis.call('HGET', KEYS[1], 'outbox')
      if not message then return 0 end
      local id = redis.call('HGET', KEYS[1], 'outboxId') or ''
      if not redis.call('SET', KEYS[2], ARGV[5] .. ':' .. id, 'NX', 'PX', ARGV[6]) then return 0 end
      return {id, message}`,
  },
  // The change alertEvaluated found due, checked again (another replica may have made it since):
  // sets the status, puts the message in the outbox and the lease with ARGV[7]; 1 when it did.
  alertTransition: {
    numberOfKeys: 2,
    lua: `
      local taken = tonumber(redis.call('HGET', KEYS[1], 'asOf') or '') or -1
      if tonumber(ARGV[4]) < taken then return 0 end
      local current = redis.call('HGET', KEYS[1], 'status')
      if current == ARGV[1] or (ARGV[1] == 'ok' and current ~= 'firing') then return 0 end
      redis.call('HSET', KEYS[1], 'status', ARGV[1], 'since', ARGV[2], 'asOf', ARGV[4])
      redis.call('PEXPIRE', KEYS[1], ARGV[3])
      redis.call('HSET', KEYS[1], 'outbox', ARGV[5], 'outboxId', ARGV[6])
      redis.call('SET', KEYS[2], ARGV[7], 'PX', ARGV[8])
      return 1`,
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

/** The first arguments of alertEvaluated and alertTransition: the rule's keys, and the evaluation. */
type Evaluation = readonly [
  key: string,
  lease: string,
  to: string,
  at: number,
  keepMs: number,
  asOf: number,
];

type Scripted = Redis & {
  alertEvaluated(
    ...args: [...Evaluation, replica: string, leaseMs: number]
  ): Promise<0 | 1 | [string, string]>;
  alertTransition(
    ...args: [...Evaluation, outbox: string, outboxId: string, holder: string, leaseMs: number]
  ): Promise<0 | 1>;
  alertRenew(lease: string, holder: string, leaseMs: number): Promise<number>;
  alertSettled(key: string, lease: string, outboxId: string, holder: string): Promise<number>;
};

/** A change to deliver, as the outbox holds it: opaque here (the caller seals and checks it). */
export interface Outgoing {
  id: string;
  sealed: string;
}

/** A message this replica is to deliver, and its claim on it. */
export interface Handed extends Outgoing {
  claim: Claim;
  /** The change this evaluation made; false for a message another replica left undelivered. */
  changed: boolean;
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
    if (link) defineScripts(link.client, SCRIPTS);
  }

  /** The rule's state, shared when Redis answers. */
  async get(identity: string): Promise<RuleState> {
    const fields = await this.#run((redis) => redis.hgetall(this.#key(identity)));
    if (fields === UNAVAILABLE || fields.status === undefined) return this.#mine(identity);
    return stateOf(fields);
  }

  /**
   * Records an evaluation at `at` of what was computed at `asOf`, and moves the rule to `to` unless
   * it is there already or something newer was evaluated before. The one caller (across replicas
   * while Redis answers) whose change is to be told, into firing or from firing back to ok, is
   * handed the message `compose` seals, which only it runs. Any other evaluation may be handed the
   * message of a change whose deliverer went before settling it. Undefined when there is nothing
   * to deliver.
   */
  async evaluate(
    identity: string,
    to: "ok" | "firing",
    at: number,
    asOf: number,
    compose: () => Outgoing,
  ): Promise<Handed | undefined> {
    const mine = this.#mine(identity);
    mine.evaluatedAt = at;
    const current = asOf >= (mine.asOf ?? Number.NEGATIVE_INFINITY);
    if (current) mine.asOf = asOf;
    const told = to === "firing" || mine.status === "firing";
    const moved = current && mine.status !== to;
    if (moved) Object.assign(mine, { status: to, since: at });
    const local = (): Handed | undefined =>
      moved && told ? { ...compose(), claim: LOCAL_CLAIM, changed: true } : undefined;

    // Both scripts' first arguments: the rule's keys, and the evaluation.
    const evaluation = [
      this.#key(identity),
      this.#leaseKey(identity),
      to,
      at,
      KEEP_MS,
      asOf,
    ] as const;
    const found = await this.#run((redis) =>
      (redis as Scripted).alertEvaluated(...evaluation, this.#replica, this.#leaseMs),
    );
    if (found === UNAVAILABLE) return local();
    if (Array.isArray(found)) {
      const [id, sealed] = found;
      return { id, sealed, claim: this.#claim(identity, id), changed: false };
    }
    if (found !== 1) return undefined;
    const outgoing = compose();
    const made = await this.#run((redis) =>
      (redis as Scripted).alertTransition(
        ...evaluation,
        outgoing.sealed,
        outgoing.id,
        this.#holder(outgoing.id),
        this.#leaseMs,
      ),
    );
    if (made === UNAVAILABLE) return local();
    return made === 1
      ? { ...outgoing, claim: this.#claim(identity, outgoing.id), changed: true }
      : undefined;
  }

  /** A claim on a shared outbox message: renewed every third of the lease until settled. */
  #claim(identity: string, id: string): Claim {
    const lease = this.#leaseKey(identity);
    const holder = this.#holder(id);
    return {
      hold: () => {
        const renew = setInterval(() => {
          void this.#run((redis) => (redis as Scripted).alertRenew(lease, holder, this.#leaseMs));
        }, this.#leaseMs / 3);
        renew.unref();
        return async (settled) => {
          clearInterval(renew);
          if (!settled) return;
          await this.#run((redis) =>
            (redis as Scripted).alertSettled(this.#key(identity), lease, id, holder),
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

  /** This replica, holding the lease for message `id`. */
  #holder(id: string): string {
    return `${this.#replica}:${id}`;
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
