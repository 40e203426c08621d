// One gate in front of the engine: at most `maxConcurrency` queries run at once, at most `maxQueue`
// callers' queries wait, and one credential holds at most `maxPerCredential` of them (running +
// waiting); past a bound the caller is answered at once with Retry-After, never left waiting. One
// credential runs at most half the slots (at least one), so a flood leaves a slot free for everyone
// else (measured: with both slots of two held by seconds-long queries, another caller's light query
// waited seconds; DuckDB spreads one query over every core, so the idle slot costs the flood little).
// A free slot goes to the waiting credential with the fewest running queries; among equals, to the
// one that used the least engine time since it began asking (so light queries do not wait a turn of
// every heavy one), and among equals to the one served longest ago. However many keep their queues
// full, every waiting credential gets its turn: one that used more waits only until the others have
// used as much.
// A full queue does not shut a newcomer out: a credential holding less than an equal share of the
// places (slots + queue, divided among the credentials holding any, itself included; running +
// waiting, in this process) takes the newest waiting place of the credential holding the most, which
// is answered 503 `overloaded`. So however many credentials fill the queue within their shares,
// another's query gets in while it asks for no more than its equal share, and the refusals fall on
// those holding the most. The one refused then holds at least its equal share, so it cannot take
// the place back: no two credentials trade a place back and forth.
// Background work — work no credential caused (cache warming, one caller per trigger) and work that
// keeps a live view current (a feed's poll, an alert rule's read: `background`, in a line apart from
// its credential's queries) — waits in `maxQueue` places of its own that callers' queries never
// take, and keeps a slot: while any of it waits, callers' work holds at most `maxConcurrency` − 1
// slots (when there are two or more), so warmed results and live feeds do not go stale behind a
// flood. A feed's poll still counts in its payer's share.
// Each query has one deadline from its arrival: waiting counts, and a query whose deadline passes
// while it waits is never started. A query whose caller left (its signal aborted) leaves the line,
// or is stopped where it runs. Written here rather than with p-queue/p-limit: neither offers
// per-caller shares, a fair pick across callers, or dropping queued work at shutdown.
import type { Lease, SharedPlaces } from "../redis/shared-budgets.ts";
import { EngineError, type QueryEngine, type QueryRequest, type QueryResult } from "./engine.ts";

export interface AdmissionOptions {
  maxConcurrency: number;
  maxQueue: number;
  maxPerCredential: number;
  /** Budget of one query from arrival to answer; absent: the engine's own timeout only. */
  timeoutMs?: number;
  /** A credential's share counted once across replicas (REDIS_URL), else in this process only. */
  shared?: SharedPlaces;
}

/** A refusal by the gate itself: the code (whose status the HTTP layer knows) and Retry-After. */
export class AdmissionError extends Error {
  readonly code: "overloaded" | "rate_limited" | "shutting_down";
  readonly retryAfterSeconds: number;

  constructor(code: AdmissionError["code"], message: string) {
    super(message);
    this.name = "AdmissionError";
    this.code = code;
    this.retryAfterSeconds = 1;
  }
}

export interface AdmissionStats {
  running: number;
  queued: number;
  /** Refusals since start, by code; deadlines passed in the queue count as `expired`. */
  refused: Record<AdmissionError["code"] | "expired", number>;
}

export interface AdmittedEngine extends QueryEngine {
  stats(): AdmissionStats;
  /** Queries of `credential` running or waiting in this process: how busy its share is. */
  held(credential: string): number;
  /** Shutdown: refuses new and queued work at once; running queries go on. */
  drain(): void;
  /** Shutdown's end: answers the running queries as refused and stops their engine work. */
  abortRunning(): void;
}

interface Ticket {
  /** Whose share it counts in. */
  credential: string;
  /** Which line it waits in: its credential's queries', or its credential's background work. */
  line: string;
  /** Background work: it keeps places and a slot of its own. */
  background: boolean;
  /** Its place in the credential's share across replicas, when counted there. */
  lease: Lease | undefined;
  start: () => void;
  refuse: (error: Error) => void;
  controller: AbortController;
  timer: NodeJS.Timeout | undefined;
}

export function admit(engine: QueryEngine, options: AdmissionOptions): AdmittedEngine {
  /** Each line's waiting tickets (see Ticket.line), in turn order: the one served longest ago first. */
  const waiting = new Map<string, Ticket[]>();
  const running = new Set<Ticket>();
  /** Running queries by line: the pick reads it once for every waiting line. */
  const runningBy = new Map<string, number>();
  /** Running + waiting by credential: its share. */
  const held = new Map<string, number>();
  const refused: AdmissionStats["refused"] = {
    overloaded: 0,
    rate_limited: 0,
    shutting_down: 0,
    expired: 0,
  };
  let callersWaiting = 0;
  let backgroundWaiting = 0;
  let backgroundRunning = 0;
  let draining = false;
  const maxRunningEach = Math.max(1, Math.ceil(options.maxConcurrency / 2));
  // With one slot, keeping it for background work would hand it all of it.
  const maxRunningCallers =
    options.maxConcurrency >= 2 ? options.maxConcurrency - 1 : options.maxConcurrency;

  const count = (counts: Map<string, number>, credential: string, delta: number) => {
    const total = (counts.get(credential) ?? 0) + delta;
    if (total === 0) counts.delete(credential);
    else counts.set(credential, total);
  };
  const release = (ticket: Ticket) => {
    count(held, ticket.credential, -1);
    ticket.lease?.release();
  };
  const leaveQueue = (ticket: Ticket) => {
    if (ticket.background) backgroundWaiting--;
    else callersWaiting--;
  };
  /**
   * Engine time (ms) each active line (waiting or running) used while active, counted from the
   * least any active line had used when it became active: no line banks time it did not ask for.
   */
  const used = new Map<string, number>();
  const activate = (line: string) => {
    if (used.has(line)) return;
    let least = Number.POSITIVE_INFINITY;
    for (const ms of used.values()) least = Math.min(least, ms);
    used.set(line, Number.isFinite(least) ? least : 0);
  };
  const forgetIfIdle = (line: string) => {
    if (!waiting.has(line) && !runningBy.has(line)) used.delete(line);
  };
  const refuse = (code: AdmissionError["code"], error: AdmissionError) => {
    refused[code]++;
    return Promise.reject(error);
  };
  /**
   * Starts waiting work while slots are free: the line with the fewest running first, among equals
   * the one that used the least engine time, among equals the first in turn order, which then goes
   * to the back. By line rather than oldest ticket first: a credential's wait is bounded by how many
   * others wait, not by how deep their queues are; and by time used, so that light queries are not
   * made to wait a turn of every heavy one.
   */
  const pump = () => {
    while (running.size < options.maxConcurrency && callersWaiting + backgroundWaiting > 0) {
      const callersMayStart =
        backgroundWaiting === 0 || running.size - backgroundRunning < maxRunningCallers;
      let next: string | undefined;
      let fewest = maxRunningEach;
      let least = Number.POSITIVE_INFINITY;
      for (const [name, line] of waiting) {
        const load = runningBy.get(name) ?? 0;
        if (load >= maxRunningEach || !(callersMayStart || line[0]?.background)) continue;
        const spent = used.get(name) ?? 0;
        if (load < fewest || (load === fewest && spent < least)) {
          next = name;
          fewest = load;
          least = spent;
        }
      }
      if (next === undefined) return;
      const line = waiting.get(next) as Ticket[];
      const ticket = line.shift() as Ticket;
      // Served: to the back of the turn order.
      waiting.delete(next);
      if (line.length > 0) waiting.set(next, line);
      leaveQueue(ticket);
      ticket.start();
    }
  };

  const unqueue = (ticket: Ticket) => {
    const line = waiting.get(ticket.line);
    const index = line?.indexOf(ticket) ?? -1;
    if (!line || index < 0) return false;
    line.splice(index, 1);
    if (line.length === 0) waiting.delete(ticket.line);
    leaveQueue(ticket);
    forgetIfIdle(ticket.line);
    return true;
  };

  /**
   * Makes a place in the callers' full queue for `credential` while it holds less than its equal
   * share: the newest waiting query of the credential holding the most places (at least two more
   * than `credential`) is refused. False when there is none: the newcomer is the one refused.
   */
  const makeRoomFor = (credential: string): boolean => {
    const holds = held.get(credential) ?? 0;
    const holders = held.size + (holds === 0 ? 1 : 0);
    if ((holds + 1) * holders > options.maxConcurrency + options.maxQueue) return false;
    let most: Ticket[] | undefined;
    let mostHeld = holds + 1;
    for (const line of waiting.values()) {
      const newest = line.at(-1);
      if (newest === undefined || newest.background) continue;
      const theirs = held.get(newest.credential) ?? 0;
      if (theirs > mostHeld) {
        most = line;
        mostHeld = theirs;
      }
    }
    const evicted = most?.at(-1);
    if (evicted === undefined) return false;
    unqueue(evicted);
    release(evicted);
    refused.overloaded++;
    evicted.refuse(
      new AdmissionError(
        "overloaded",
        "The query engine is at capacity and this credential holds the largest part of it; retry shortly.",
      ),
    );
    return true;
  };

  async function run(request: QueryRequest): Promise<QueryResult> {
    const arrived = Date.now();
    // Work nobody's credential caused (warming) shares as one caller per trigger.
    const credential = request.credential ?? `(${request.trigger ?? "unattributed"})`;
    const background = request.background === true || request.credential === undefined;
    if (draining) {
      return refuse(
        "shutting_down",
        new AdmissionError("shutting_down", "The service is shutting down; retry shortly."),
      );
    }
    // Across replicas while Redis answers; this process's own count holds either way.
    const lease = options.shared
      ? await options.shared.hold(credential, options.maxPerCredential)
      : undefined;
    const full = () => lease === false || (held.get(credential) ?? 0) >= options.maxPerCredential;
    if (full()) {
      if (lease) lease.release();
      return refuse(
        "rate_limited",
        new AdmissionError(
          "rate_limited",
          `This credential already has ${options.maxPerCredential} queries running or waiting; retry when one has answered.`,
        ),
      );
    }
    const queueFull =
      running.size >= options.maxConcurrency &&
      (background ? backgroundWaiting >= options.maxQueue : callersWaiting >= options.maxQueue);
    if (queueFull && (background || !makeRoomFor(credential))) {
      if (lease) lease.release();
      return refuse(
        "overloaded",
        new AdmissionError("overloaded", "The query engine is at capacity; retry shortly."),
      );
    }

    if (request.signal?.aborted) {
      if (lease) lease.release();
      return Promise.reject(request.signal.reason);
    }
    const deadline = options.timeoutMs === undefined ? undefined : arrived + options.timeoutMs;
    count(held, credential, 1);
    return new Promise<QueryResult>((resolve, reject) => {
      let settled = false;
      const answer = (settle: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(ticket.timer);
        request.signal?.removeEventListener("abort", withdraw);
        settle();
      };
      // The caller stopped waiting (a follow stream closed): its query leaves the line, or stops.
      const withdraw = () => {
        if (unqueue(ticket)) release(ticket);
        ticket.controller.abort();
        ticket.refuse(request.signal?.reason);
      };
      const ticket: Ticket = {
        credential,
        // A credential's background work waits apart from its queries, which may fill their line.
        line: `${background ? "background" : "caller"}:${credential}`,
        background,
        lease: lease || undefined,
        controller: new AbortController(),
        timer: undefined,
        refuse: (error) => answer(() => reject(error)),
        start: () => {
          const startedAt = Date.now();
          running.add(ticket);
          count(runningBy, ticket.line, 1);
          if (ticket.background) backgroundRunning++;
          engine
            .run({ ...request, deadline, signal: ticket.controller.signal })
            .then(
              (result) => answer(() => resolve(result)),
              (error) => answer(() => reject(error)),
            )
            .finally(() => {
              // The slot is free once the engine's work is, not when the caller was answered.
              running.delete(ticket);
              count(runningBy, ticket.line, -1);
              used.set(ticket.line, (used.get(ticket.line) ?? 0) + Date.now() - startedAt);
              forgetIfIdle(ticket.line);
              if (ticket.background) backgroundRunning--;
              release(ticket);
              pump();
            });
        },
      };
      if (deadline !== undefined) {
        ticket.timer = setTimeout(() => {
          const wasQueued = unqueue(ticket);
          if (wasQueued) {
            refused.expired++;
            release(ticket);
          }
          ticket.controller.abort();
          ticket.refuse(
            new EngineError(
              "engine_timeout",
              wasQueued
                ? `The query waited ${options.timeoutMs} ms for the engine and was not started.`
                : `The query did not finish within ${options.timeoutMs} ms and was stopped.`,
            ),
          );
        }, deadline - arrived);
      }
      request.signal?.addEventListener("abort", withdraw, { once: true });
      activate(ticket.line);
      const line = waiting.get(ticket.line);
      if (line) line.push(ticket);
      else waiting.set(ticket.line, [ticket]);
      if (background) backgroundWaiting++;
      else callersWaiting++;
      pump();
    });
  }

  const { readPage, inspect } = engine;
  return {
    dialect: engine.dialect,
    run,
    // Reading a kept result's page runs no query: it takes no slot.
    ...(readPage && { readPage: readPage.bind(engine) }),
    // Checking SQL runs nothing: it takes no slot.
    ...(inspect && { inspect: inspect.bind(engine) }),
    ping: () => engine.ping(),
    close: () => engine.close(),
    stats: () => ({
      running: running.size,
      queued: callersWaiting + backgroundWaiting,
      refused: { ...refused },
    }),
    held: (credential) => held.get(credential) ?? 0,
    drain() {
      draining = true;
      for (const line of waiting.values()) {
        for (const ticket of line) {
          refused.shutting_down++;
          release(ticket);
          ticket.refuse(
            new AdmissionError("shutting_down", "The service is shutting down; retry shortly."),
          );
        }
      }
      waiting.clear();
      callersWaiting = 0;
      backgroundWaiting = 0;
      for (const line of [...used.keys()]) forgetIfIdle(line);
    },
    abortRunning() {
      for (const ticket of running) {
        ticket.controller.abort();
        ticket.refuse(
          new AdmissionError(
            "shutting_down",
            "The service shut down before the query finished; retry shortly.",
          ),
        );
      }
    },
  };
}
