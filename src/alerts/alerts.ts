// The rules at work: each rule on a cached endpoint watches its value (keeping it warm, as a
// dashboard would) and is evaluated on every value the cache stores; each rule on logs.all follows
// its records on the shared feed and is evaluated on every poll. Neither queries on its own. A
// rule fires when its condition becomes true and resolves when it becomes false; each change is
// told once, across replicas, to its webhook, which is delivered in the background and never holds
// a request or a refresh up.
import { resultRows } from "../cache/serialized-result.ts";
import type { Credential } from "../credentials/credential.ts";
import { authorize, type RawQuery } from "../credentials/scope-rule.ts";
import type { CachedEndpoint, EndpointDefinition } from "../endpoints/catalog.ts";
import type { FollowHub } from "../endpoints/follow.ts";
import type { WatchEndpoint } from "../endpoints/runner.ts";
import { startingAt } from "../endpoints/stream-position.ts";
import type { Row } from "../engines/engine.ts";
import type { AlertStates, Claim, Delivery, Handed, RuleState } from "./alert-states.ts";
import { matchingRows, RecordWindow } from "./conditions.ts";
import type { AlertRule } from "./rules-file.ts";
import {
  type DeliveryOptions,
  deliver,
  type Message,
  sealMessage,
  unsealMessage,
} from "./webhooks.ts";

export interface AlertCounts {
  evaluations: number;
  firings: number;
  deliveries: number;
  deliveryFailures: number;
}

export interface AlertLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface AlertsDeps {
  watch: WatchEndpoint;
  hub: FollowHub;
  states: AlertStates;
  delivery: DeliveryOptions;
  log: AlertLog;
}

/** What GET /api/alerts says of a rule. */
export interface AlertListing {
  name: string;
  endpoint: string;
  params: Readonly<Record<string, string>>;
  condition: Readonly<Record<string, string | number>>;
  state: RuleState["status"];
  firing_since: string | null;
  last_evaluated_at: string | null;
  last_delivery: (Omit<Delivery, "at"> & { at: string }) | null;
}

interface ActiveRule {
  /** The rule as the file now says: its webhook may change without the rule changing. */
  rule: AlertRule;
  stop: () => void;
  stopped: boolean;
  /** Evaluations one after another, so that transitions keep their order. */
  evaluations: Promise<void>;
  /** The message waiting while one is delivered: only the newest, which says the state now. */
  waiting?: Queued;
  delivering: boolean;
}

/** A message to deliver, and the end of this replica's hold on its lease (settled or not). */
interface Queued {
  message: Message;
  release: (settled: boolean) => Promise<void>;
}

/** A feed's catch-up that failed is tried again after this long. */
const RETRY_FOLLOW_MS = 30_000;

export class Alerts {
  readonly #deps: AlertsDeps;
  readonly #active = new Map<string, ActiveRule>();
  readonly #counts = new Map<string, AlertCounts>();
  readonly #closing = new AbortController();

  constructor(deps: AlertsDeps) {
    this.#deps = deps;
  }

  /** Runs exactly these rules: new ones start, gone or changed ones stop, the rest go on. */
  apply(rules: readonly AlertRule[]): void {
    const wanted = new Map(rules.map((rule) => [rule.identity, rule]));
    for (const [identity, active] of this.#active) {
      const kept = wanted.get(identity);
      if (kept) {
        active.rule = kept;
        continue;
      }
      this.#stop(active);
      this.#active.delete(identity);
    }
    for (const [identity, rule] of wanted) {
      if (!this.#active.has(identity)) this.#active.set(identity, this.#start(rule));
    }
  }

  /** Counts by rule name, for /metrics. */
  counts(): ReadonlyMap<string, AlertCounts> {
    return this.#counts;
  }

  /**
   * The rules `credential` may see, with their states: those whose endpoint and parameters it may
   * call; with `endpoint`, only its rules.
   */
  async list(credential: Credential, endpoint?: EndpointDefinition): Promise<AlertListing[]> {
    const visible = [...this.#active.values()].filter(
      ({ rule }) =>
        (endpoint === undefined || rule.endpoint.name === endpoint.name) &&
        mayCall(credential, rule),
    );
    return Promise.all(
      visible.map(async ({ rule }) => listing(rule, await this.#deps.states.get(rule.identity))),
    );
  }

  /** Stops every rule; deliveries under way are abandoned (their attempts end). */
  close(): void {
    this.#closing.abort();
    for (const active of this.#active.values()) this.#stop(active);
    this.#active.clear();
  }

  #stop(active: ActiveRule): void {
    active.stopped = true;
    active.stop();
  }

  #start(rule: AlertRule): ActiveRule {
    const active: ActiveRule = {
      rule,
      stop: () => {},
      stopped: false,
      evaluations: Promise.resolve(),
      delivering: false,
    };
    /** `rows` made the condition true (none: false), judging what was computed at `asOf` (ms). */
    const evaluate = (rows: Row[], asOf: number) => {
      if (active.stopped) return;
      // One failure (a bug, say) is logged and leaves the next evaluations to run.
      active.evaluations = active.evaluations
        .then(() => this.#evaluated(active, rows, asOf))
        .catch((error: unknown) => {
          this.#deps.log.error({ alert: rule.name, err: error }, "alert rule evaluation failed");
        });
    };
    const { condition, endpoint, params } = rule;
    if (condition.kind === "rows") {
      active.stop = this.#deps.watch(
        endpoint as CachedEndpoint,
        params,
        (answer) => {
          const rows = resultRows(answer.payload);
          evaluate(matchingRows(rows, condition.rows, condition.comparison), answer.computedAt);
        },
        true,
      );
    } else this.#followRecords(active, condition.count, condition.withinSeconds, evaluate);
    return active;
  }

  /**
   * Counts the rule's records: first the newest `count` its window already holds (a rule that
   * starts, as after a restart or a reload, counts them too; no more are read, since no more can
   * count), then each that arrives, on the feed.
   */
  #followRecords(
    active: ActiveRule,
    count: number,
    withinSeconds: number,
    evaluate: (rows: Row[], asOf: number) => void,
  ): void {
    const { hub, log } = this.#deps;
    const { rule } = active;
    const window = new RecordWindow(count, withinSeconds);
    const start = hub.now();
    const reading = new AbortController();
    active.stop = () => reading.abort();
    const retry = (error: unknown) => {
      if (active.stopped) return;
      log.error(
        { alert: rule.name, err: error },
        "alert rule's records could not be read; trying again",
      );
      const again = setTimeout(() => {
        if (!active.stopped) this.#followRecords(active, count, withinSeconds, evaluate);
      }, RETRY_FOLLOW_MS);
      again.unref();
      active.stop = () => clearTimeout(again);
    };
    let read = 0;
    const held = hub.records(
      rule.endpoint,
      rule.params,
      start - BigInt(withinSeconds) * 1_000_000n,
      start,
      {
        credential: "alerts",
        signal: reading.signal,
        background: true,
        morePages: (page) => {
          read += page.length;
          return read < count;
        },
      },
    );
    held.then((rows) => {
      if (active.stopped) return;
      for (const row of rows.slice(0, count)) window.add(row);
      active.stop = hub.follow(rule.endpoint, rule.params, startingAt(start), {
        credential: "alerts",
        unstreamed: true,
        deliver: (row) => {
          window.add(row);
          return true;
        },
        ready: async () => {},
        fail: retry,
        polled: () => {
          const now = hub.now();
          evaluate(window.matching(now), Number(now / 1000n));
        },
      });
    }, retry);
  }

  async #evaluated(active: ActiveRule, rows: Row[], asOf: number): Promise<void> {
    if (active.stopped) return;
    const { rule } = active;
    const { states, log } = this.#deps;
    this.#count(rule.name).evaluations++;
    const now = Date.now();
    const firing = rows.length > 0;
    const status = firing ? "firing" : "ok";
    const message: Message = {
      id: `msg_${rule.identity.slice(0, 22)}_${now}`,
      type: firing ? "alert.firing" : "alert.resolved",
      data: {
        rule: rule.name,
        endpoint: rule.endpoint.name,
        params: rule.rawParams,
        condition: rule.rawCondition,
        state: status,
        since: new Date(now).toISOString(),
        rows,
      },
    };
    const handed = await states.evaluate(rule.identity, status, now, asOf, () => ({
      id: message.id,
      sealed: sealMessage(message, rule.webhook.secret),
    }));
    if (!handed || active.stopped) return;
    if (!handed.changed) return this.#takeOver(active, handed);
    if (firing) {
      this.#count(rule.name).firings++;
      log.warn(
        { alert: rule.name, endpoint: rule.endpoint.name, rows: rows.length },
        "alert firing",
      );
    } else log.info({ alert: rule.name, endpoint: rule.endpoint.name }, "alert resolved");
    this.#send(active, message, handed.claim);
  }

  /** Delivers the message of a change whose deliverer went before settling it. */
  async #takeOver(active: ActiveRule, found: Handed): Promise<void> {
    const message = unsealMessage(found.sealed, active.rule.webhook.secret);
    if (!message) {
      // Not sealed under this rule's secret (a new one, or not a replica's): nothing to send.
      await found.claim.hold()(true);
      this.#deps.log.warn(
        { alert: active.rule.name },
        "an alert message left by another replica was not sealed under the rule's secret; dropped",
      );
      return;
    }
    this.#send(active, message, found.claim);
  }

  /**
   * Delivers in the background, one message at a time; a message that arrives while one is being
   * delivered waits, replacing any that waited before it (the newest says the state now). Its lease
   * is held from now, waiting included: lapsed, another replica would deliver it too.
   */
  #send(active: ActiveRule, message: Message, claim: Claim): void {
    const queued: Queued = { message, release: claim.hold() };
    if (active.delivering) {
      // The outbox now holds the newer message: the one replaced is let go, unsettled.
      void active.waiting?.release(false);
      active.waiting = queued;
      return;
    }
    active.delivering = true;
    void (async () => {
      for (let next: Queued | undefined = queued; next; next = active.waiting) {
        active.waiting = undefined;
        await this.#deliver(active.rule, next).catch((error: unknown) => {
          this.#deps.log.error({ alert: active.rule.name, err: error }, "alert delivery failed");
        });
      }
      active.delivering = false;
    })();
  }

  async #deliver(rule: AlertRule, { message, release }: Queued): Promise<void> {
    const counts = this.#count(rule.name);
    // Unsettled (cut short by the service closing, or a failure here): left for another replica,
    // once this one's lease lapses.
    let settled = false;
    let problem: string | undefined;
    try {
      const delivery = await deliver(
        rule.webhook,
        message,
        this.#deps.delivery,
        (_attempt, last) => {
          counts.deliveryFailures++;
          problem = last;
        },
        this.#closing.signal,
      );
      if (delivery.outcome === "failed" && this.#closing.signal.aborted) return;
      settled = true;
      if (delivery.outcome === "delivered") counts.deliveries++;
      else {
        // The URL's host only: its path or query may hold a token.
        this.#deps.log.error(
          {
            alert: rule.name,
            type: message.type,
            receiver: new URL(rule.webhook.url).host,
            attempts: delivery.attempts,
            status: delivery.status,
            problem,
          },
          "alert webhook delivery failed",
        );
      }
      await this.#deps.states.delivered(rule.identity, delivery);
    } finally {
      await release(settled);
    }
  }

  #count(name: string): AlertCounts {
    let counts = this.#counts.get(name);
    if (!counts) {
      counts = { evaluations: 0, firings: 0, deliveries: 0, deliveryFailures: 0 };
      this.#counts.set(name, counts);
    }
    return counts;
  }
}

/** Whether the credential may call the rule's endpoint with its parameters, its scope fixing nothing else. */
function mayCall(credential: Credential, rule: AlertRule): boolean {
  const written: RawQuery = rule.rawParams;
  const decision = authorize(credential, rule.endpoint, written);
  if ("refused" in decision) return false;
  const authorized = decision.granted;
  const names = new Set([...Object.keys(written), ...Object.keys(authorized)]);
  return [...names].every((name) => authorized[name] === written[name]);
}

function listing(rule: AlertRule, state: RuleState): AlertListing {
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  const { lastDelivery } = state;
  return {
    name: rule.name,
    endpoint: rule.endpoint.name,
    params: rule.rawParams,
    condition: rule.rawCondition,
    state: state.status,
    firing_since: state.status === "firing" ? iso(state.since) : null,
    last_evaluated_at: iso(state.evaluatedAt),
    last_delivery: lastDelivery ? { ...lastDelivery, at: iso(lastDelivery.at) as string } : null,
  };
}
