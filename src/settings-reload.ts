// One reload of what an operator changes while the service runs — the endpoint folders
// (ENDPOINTS_DIR), API_KEYS_FILE and ALERT_RULES_FILE — on SIGHUP or when either file changes: all
// read together, each file checked against the endpoints read with it, then swapped in one turn of
// the event loop, so that no request sees keys of one reload beside endpoints of another, and one
// SIGHUP takes a new endpoint and the key scoped to it. A bad part keeps what it had, except that
// a removal always applies (keys-file.ts, rules-source.ts); each problem is one line naming its file,
// and each part's outcome is counted (query_service_reloads_total).
import type { LiveCatalog } from "./endpoints/catalog.ts";
import { CatalogError } from "./endpoints/load-catalog.ts";
import type { ServedCatalog } from "./endpoints/served-catalog.ts";
import type { FileReading, ReloadLog, WatchedFile } from "./watched-file.ts";

/** What a reload reads: the endpoint folders, the keys file, the alert rules. */
export type ReloadPart = "endpoints" | "keys" | "rules";
/** `refused`: something in the part was refused (the whole, or an entry); the rest applied. */
export type ReloadOutcome = "applied" | "refused";
/** Reloads by part and outcome, for /metrics. */
export type ReloadCounts = Map<ReloadPart, Map<ReloadOutcome, number>>;

export interface SettingsParts {
  catalog: LiveCatalog;
  /** Reads and checks the endpoint folders; throws CatalogError listing every problem. */
  loadEndpoints: () => Promise<Omit<ServedCatalog, "problems">>;
  keysFile?: WatchedFile<unknown>;
  alertRules?: WatchedFile<unknown>;
  log: ReloadLog;
}

export class SettingsReload {
  readonly counts: ReloadCounts = new Map();
  readonly #parts: SettingsParts;
  /** The reload asked for and not yet started: later asks join it. */
  #pending: Promise<void> | undefined;
  /** The last reload asked for: reloads run one after another, never interleaved. */
  #last: Promise<void> = Promise.resolve();

  constructor(parts: SettingsParts) {
    this.#parts = parts;
  }

  /** Reloads everything, after any reload running; `cause` starts its log lines ("SIGHUP"). */
  reload(cause: string): Promise<void> {
    if (this.#pending) return this.#pending;
    const next = this.#last.then(() => {
      this.#pending = undefined;
      return this.#once(cause);
    });
    this.#pending = next;
    this.#last = next.catch(() => {});
    return next;
  }

  /** Reloads everything when either file changes. */
  watch(): void {
    const { keysFile, alertRules, log } = this.#parts;
    keysFile?.watch(log, () => void this.reload("API_KEYS_FILE changed"));
    alertRules?.watch(log, () => void this.reload("ALERT_RULES_FILE changed"));
  }

  close(): void {
    this.#parts.keysFile?.close();
    this.#parts.alertRules?.close();
  }

  async #once(cause: string): Promise<void> {
    const { catalog, keysFile, alertRules, log } = this.#parts;
    const endpoints = await this.#readEndpoints(cause);
    // Read against the endpoints they will be served with; nothing is served yet.
    const against = endpoints?.catalog ?? catalog;
    const keys = keysFile?.read(against);
    const rules = alertRules?.read(against);
    // The swap, in this one turn; what follows it (ended streams, rules restarted) after.
    const tell = [keys && keysFile?.take(keys, log), rules && alertRules?.take(rules, log)];
    if (endpoints) catalog.replace(endpoints.catalog);
    for (const told of tell) told?.();
    if (keys) this.#count("keys", keys);
    if (rules) this.#count("rules", rules);
  }

  /** The endpoint folders read and checked again; undefined (logged, counted) when refused. */
  async #readEndpoints(cause: string) {
    const { log } = this.#parts;
    try {
      const served = await this.#parts.loadEndpoints();
      for (const line of served.notServed) log.warn({}, line);
      const names = served.catalog.entries.map((endpoint) => endpoint.name);
      log.info({ endpoints: names }, `${cause}: serving ${names.length} endpoints`);
      this.#tally("endpoints", "applied");
      return served;
    } catch (error) {
      const problems = error instanceof CatalogError ? error.problems : [(error as Error).message];
      for (const problem of problems) log.error({}, problem);
      log.error(
        {},
        `${cause}: the endpoint folders have problems; the endpoints served before are kept`,
      );
      this.#tally("endpoints", "refused");
      return undefined;
    }
  }

  #count(part: ReloadPart, reading: FileReading<unknown>): void {
    this.#tally(part, reading.problems.length > 0 ? "refused" : "applied");
  }

  #tally(part: ReloadPart, outcome: ReloadOutcome): void {
    const byOutcome = this.counts.get(part) ?? new Map<ReloadOutcome, number>();
    byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
    this.counts.set(part, byOutcome);
  }
}
