// A JSON settings file the process follows while it runs (API_KEYS_FILE, ALERT_RULES_FILE): read
// at startup, where a bad file throws; then read again when the file behind the path changes and on
// demand (SIGHUP), where a bad file keeps the previous contents and logs one line, so a typo breaks
// nothing that worked.
import { readFileSync, statSync } from "node:fs";

export class SettingsFileError extends Error {
  override name = "SettingsFileError";
}

export interface ReloadLog {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface SettingsFileKind<T> {
  /** The environment variable naming the file, which every message starts with. */
  variable: string;
  /** What a bad file keeps: "keys", "rules". */
  noun: string;
  /** The contents of the file's text; throws SettingsFileError saying what is wrong, and where. */
  parse(text: string): T;
  /** What a reload's log line says of the new contents. */
  summary(value: T): object;
}

/** How often `watch` looks: the longest a change waits, however often the file is rewritten. */
const POLL_MS = 250;
/** Coarser than any file system clock (FAT: 2 s): a stamp this near now may be a later write's. */
const RECENT_STAMP_MS = 2_000;

/** The file's current contents; `watch` keeps them current until `close`. */
export class WatchedFile<T> {
  readonly path: string;
  readonly #kind: SettingsFileKind<T>;
  #value: T;
  /** The text last read, taken or refused: reading it again changes nothing and logs nothing. */
  #text: string;
  #identity: string | undefined;
  readonly #listeners = new Set<() => void>();
  #stop: (() => void) | undefined;

  /** Reads the file now; a bad file throws SettingsFileError naming the file and the problem. */
  constructor(path: string, kind: SettingsFileKind<T>) {
    this.path = path;
    this.#kind = kind;
    this.#identity = identityOf(path);
    this.#text = readText(kind.variable, path);
    this.#value = kind.parse(this.#text);
  }

  get value(): T {
    return this.#value;
  }

  /** Calls `listener` after each reload that took the file's contents; returns what unsubscribes it. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reads the file again; a bad file keeps the previous contents. */
  reload(log: ReloadLog): void {
    this.#read(log, identityOf(this.path), true);
  }

  /**
   * Reloads when the file behind the path changes. Polled, not watched: kubelet updates a mounted
   * ConfigMap or Secret by swapping the `..data` symlink the file's own symlink goes through, which
   * no event names the file for; a poll also keeps a file rewritten without pause from postponing
   * a reload.
   */
  watch(log: ReloadLog): void {
    const poll = setInterval(() => {
      const identity = identityOf(this.path);
      if (identity === undefined || identity !== this.#identity) this.#read(log, identity, false);
    }, POLL_MS).unref();
    this.#stop = () => clearInterval(poll);
  }

  close(): void {
    this.#stop?.();
  }

  /** Takes the file's contents if its text changed, or always; `identity`: the file's before reading. */
  #read(log: ReloadLog, identity: string | undefined, always: boolean): void {
    const { variable, noun } = this.#kind;
    this.#identity = identity;
    try {
      const text = readText(variable, this.path);
      if (text === this.#text && !always) return;
      this.#text = text;
      this.#value = this.#kind.parse(text);
    } catch (error) {
      log.error({}, `${(error as Error).message}; keeping the previous ${noun}`);
      return;
    }
    log.info(this.#kind.summary(this.#value), `${variable} reloaded`);
    for (const listener of this.#listeners) {
      // One failing listener neither stops the others nor, from a signal or a timer, the process.
      try {
        listener();
      } catch (error) {
        log.error({ err: error }, `${variable} change listener failed`);
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
