// The rules at work: each rule on a cached endpoint watches its value (keeping it warm, as a
// dashboard would) and is evaluated on every value the cache stores; each rule on logs.all follows
// its records on the shared feed and is evaluated on every poll. Neither queries on its own. A
// rule fires when its condition becomes true and resolves when it becomes false; each change is
// told once, across replicas, to its webhook, which is delivered in the background and never holds
// a request or a refresh up.
import type { CachePolicy } from "../cache/result-cache.ts";
import type { Credential } from "../credentials/credential.ts";
import { authorize, type RawQuery } from "../credentials/scope-rule.ts";
import type { FollowHub } from "../endpoints/follow.ts";
import type { WatchEndpoint } from "../endpoints/runner.ts";
import type { Row } from "../engines/engine.ts";
import { resultRows } from "../http/formats/json.ts";
import type { AlertStates, Delivery, RuleState } from "./alert-states.ts";
import { matchingRows, RecordWindow } from "./conditions.ts";
import type { AlertRule } from "./rules-file.ts";
import { type DeliveryOptions, deliver } from "./webhooks.ts";

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
  rule: AlertRule;
  stop: () => void;
  /** Evaluations one after another, so that transitions keep their order. */
  evaluations: Promise<void>;
  /** Deliveries one after another, behind the evaluations. */
  deliveries: Promise<void>;
}

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
      if (wanted.has(identity)) continue;
      active.stop();
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

  /** The rules `credential` may see, with their states: those whose endpoint and parameters it may call. */
  async list(credential: Credential): Promise<AlertListing[]> {
    const visible = [...this.#active.values()].filter(({ rule }) => mayCall(credential, rule));
    return Promise.all(
      visible.map(async ({ rule }) => listing(rule, await this.#deps.states.get(rule.identity))),
    );
  }

  close(): void {
    this.#closing.abort();
    for (const active of this.#active.values()) active.stop();
    this.#active.clear();
  }

  #start(rule: AlertRule): ActiveRule {
    const active: ActiveRule = {
      rule,
      stop: () => {},
      evaluations: Promise.resolve(),
      deliveries: Promise.resolve(),
    };
    const evaluate = (rows: Row[]) => {
      active.evaluations = active.evaluations.then(() => this.#evaluated(active, rows));
    };
    const { condition, endpoint, params } = rule;
    if (condition.kind === "rows") {
      active.stop = this.#deps.watch(
        endpoint as typeof endpoint & { cache: CachePolicy },
        params,
        (answer) =>
          evaluate(matchingRows(resultRows(answer.payload), condition.rows, condition.comparison)),
        true,
      );
    } else {
      const window = new RecordWindow(condition.count, condition.withinSeconds);
      active.stop = this.#deps.hub.follow(endpoint, params, undefined, {
        credential: "alerts",
        deliver: (row) => {
          window.add(row);
          return true;
        },
        ready: async () => {},
        fail: (error) =>
          this.#deps.log.error({ alert: rule.name, err: error }, "alert rule's feed failed"),
        polled: () => evaluate(window.matching(this.#deps.hub.now())),
      });
    }
    return active;
  }

  async #evaluated(active: ActiveRule, rows: Row[]): Promise<void> {
    const { rule } = active;
    const { states, log } = this.#deps;
    this.#count(rule.name).evaluations++;
    const now = Date.now();
    await states.evaluated(rule.identity, now);
    const firing = rows.length > 0;
    if (!(await states.transition(rule.identity, firing ? "firing" : "ok", now))) return;
    if (firing) {
      this.#count(rule.name).firings++;
      log.warn(
        { alert: rule.name, endpoint: rule.endpoint.name, rows: rows.length },
        "alert firing",
      );
    } else log.info({ alert: rule.name, endpoint: rule.endpoint.name }, "alert resolved");
    const message = {
      id: `msg_${rule.identity.slice(0, 22)}_${now}`,
      type: firing ? ("alert.firing" as const) : ("alert.resolved" as const),
      data: {
        rule: rule.name,
        endpoint: rule.endpoint.name,
        params: rule.rawParams,
        condition: rule.rawCondition,
        state: firing ? "firing" : "ok",
        since: new Date(now).toISOString(),
        rows,
      },
    };
    active.deliveries = active.deliveries.then(() => this.#deliver(rule, message));
  }

  async #deliver(rule: AlertRule, message: Parameters<typeof deliver>[1]): Promise<void> {
    const counts = this.#count(rule.name);
    const delivery = await deliver(
      rule.webhook,
      message,
      this.#deps.delivery,
      () => counts.deliveryFailures++,
      this.#closing.signal,
    );
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
        },
        "alert webhook delivery failed",
      );
    }
    await this.#deps.states.delivered(rule.identity, delivery);
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
  try {
    const authorized = authorize(credential, rule.endpoint, written);
    const names = new Set([...Object.keys(written), ...Object.keys(authorized)]);
    return [...names].every((name) => authorized[name] === written[name]);
  } catch {
    return false;
  }
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
