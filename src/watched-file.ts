// A JSON settings file the process follows while it runs (API_KEYS_FILE, ALERT_RULES_FILE), its
// contents checked against the endpoint catalog: read at startup, where any problem throws; then
// read again when the file behind the path changes and on demand (SIGHUP), in two steps — read
// against a catalog, then taken — so that a reload of every settings part swaps them together
// (settings-reload.ts). A bad file or entry on reload keeps what its kind says (the previous
// contents, less what the file no longer grants) and logs one line per problem.
import { readFileSync, statSync } from "node:fs";
import type { Catalog } from "./endpoints/catalog.ts";

export class SettingsFileError extends Error {
  override name = "SettingsFileError";
}

export interface ReloadLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** What a file's text gives against a catalog. */
export interface Reading<T> {
  /** What to serve: all of the file, or what a bad file or entry leaves (on reload). */
  value: T;
  /** One line per problem, naming the file (and the entry); on reload, saying what was kept. */
  problems: string[];
  /** One line per entry that is served but does less than it seems to. */
  warnings: string[];
}

export interface SettingsFileKind<T> {
  /** The environment variable naming the file, which every message starts with. */
  variable: string;
  /**
   * The contents of the file's text against `catalog`; `previous` (absent at startup) is what a
   * bad file or entry on reload may keep.
   */
  read(text: string, catalog: Catalog, previous: T | undefined): Reading<T>;
  /** What a reload's log line says of the new contents. */
  summary(value: T): object;
}

/**
 * The file read again, not yet served (see `take`); `changed` is false when it could not be read,
 * which keeps what it held and tells no listener.
 */
export type FileReading<T> = Reading<T> & { changed: boolean };

/** How often `watch` looks: the longest a change waits, however often the file is rewritten. */
const POLL_MS = 250;
/** Coarser than any file system clock (FAT: 2 s): a stamp this near now may be a later write's. */
const RECENT_STAMP_MS = 2_000;

/** The file's current contents; `watch` keeps them current until `close`. */
export class WatchedFile<T> {
  readonly path: string;
  readonly #kind: SettingsFileKind<T>;
  readonly #catalog: Catalog;
  #value: T;
  /** The text last read, taken or refused: `watch` reads again only when it changes. */
  #text: string;
  #identity: string | undefined;
  /** Lines of the startup read, for the process to log once it has a log. */
  readonly warnings: readonly string[];
  readonly #listeners = new Set<() => void>();
  #stop: (() => void) | undefined;

  /**
   * Reads the file now against `catalog` (the live one: a reload of this file alone checks it
   * against what is served); any problem throws SettingsFileError naming the file and the entry.
   */
  constructor(path: string, kind: SettingsFileKind<T>, catalog: Catalog) {
    this.path = path;
    this.#kind = kind;
    this.#catalog = catalog;
    this.#identity = identityOf(path);
    this.#text = readText(kind.variable, path);
    const { value, problems, warnings } = kind.read(this.#text, catalog, undefined);
    if (problems[0] !== undefined) throw new SettingsFileError(problems[0]);
    this.#value = value;
    this.warnings = warnings;
  }

  get value(): T {
    return this.#value;
  }

  /** Calls `listener` after each reload that took the file's contents; returns what unsubscribes it. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * The file's text now, against `catalog`, not yet served. A file that cannot be read keeps the
   * current contents: nothing can be said of what it no longer grants.
   */
  read(catalog: Catalog): FileReading<T> {
    let text: string;
    try {
      text = readText(this.#kind.variable, this.path);
    } catch (error) {
      const problem = `${(error as Error).message}; keeping what it held`;
      return { value: this.#value, problems: [problem], warnings: [], changed: false };
    }
    this.#text = text;
    return { ...this.#kind.read(text, catalog, this.#value), changed: true };
  }

  /** Serves what `read` found, logs its lines, and tells the listeners (after the caller's swap). */
  take(reading: FileReading<T>, log: ReloadLog): () => void {
    this.#value = reading.value;
    for (const problem of reading.problems) log.error({}, problem);
    for (const warning of reading.warnings) log.warn({}, warning);
    if (!reading.changed) return () => {};
    log.info(this.#kind.summary(this.#value), `${this.#kind.variable} reloaded`);
    return () => this.#tell(log);
  }

  /** Reads the file again against the catalog it was opened with, and serves it. */
  reload(log: ReloadLog): void {
    this.take(this.read(this.#catalog), log)();
  }

  /**
   * Calls `changed` (default: `reload`) when the text behind the path changes. Polled, not
   * watched: kubelet updates a mounted ConfigMap or Secret by swapping the `..data` symlink the
   * file's own symlink goes through, which no event names the file for; a poll also keeps a file
   * rewritten without pause from postponing a reload.
   */
  watch(log: ReloadLog, changed: () => void = () => this.reload(log)): void {
    const poll = setInterval(() => {
      const identity = identityOf(this.path);
      if (identity !== undefined && identity === this.#identity) return;
      this.#identity = identity;
      let text: string;
      try {
        text = readText(this.#kind.variable, this.path);
      } catch {
        // Gone for a moment (a rename over it) or for good: the next reload says which.
        return;
      }
      if (text !== this.#text) changed();
    }, POLL_MS).unref();
    this.#stop = () => clearInterval(poll);
  }

  close(): void {
    this.#stop?.();
  }

  #tell(log: ReloadLog): void {
    for (const listener of this.#listeners) {
      // One failing listener neither stops the others nor, from a signal or a timer, the process.
      try {
        listener();
      } catch (error) {
        log.error({ err: error }, `${this.#kind.variable} change listener failed`);
      }
    }
  }
}

/**
 * The file the path leads to (through any symlinks), its size and stamp, or why it cannot be had.
 * Undefined while the stamp is recent: a second write within the same clock tick leaves all of
 * them as they were, so until then the text is compared.
 */
function identityOf(path: string): string | undefined {
  try {
    const { dev, ino, size, mtimeNs } = statSync(path, { bigint: true });
    if (Math.abs(Date.now() - Number(mtimeNs / 1_000_000n)) < RECENT_STAMP_MS) return undefined;
    return `${dev}:${ino}:${size}:${mtimeNs}`;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code;
  }
}

function readText(variable: string, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new SettingsFileError(
      `${variable} ${path}: cannot be read (${(error as NodeJS.ErrnoException).code})`,
    );
  }
}
