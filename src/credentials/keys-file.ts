// API_KEYS_FILE: named keys with scopes, stored as the SHA-256 of each key (the file never holds a
// key). Reloaded when the file changes and on demand (the process asks on SIGHUP); a bad file on
// reload keeps the previous set and logs one error line, so a typo locks nobody out.
import { readFileSync, statSync } from "node:fs";
import { z } from "zod";
import { type Credential, credentialName, scopesSchema } from "./credential.ts";

export interface KeyEntry {
  credential: Credential;
  /** Epoch ms after which the key is refused; absent: never. */
  expiresAt?: number;
}

const entrySchema = z.strictObject(
  {
    name: credentialName("needs a name"),
    sha256: z
      .string({ error: "needs sha256: the SHA-256 of the key in hex (npm run key prints it)" })
      .regex(/^[0-9a-fA-F]{64}$/, "sha256 must be 64 hex digits: the SHA-256 of the key"),
    scopes: scopesSchema,
    rate_limit_per_minute: z.number().int().positive().optional(),
    forced_refresh_per_minute: z.number().int().nonnegative().optional(),
    expires_at: z.iso
      .datetime({ offset: true, error: "expires_at must be an ISO 8601 time with a zone" })
      .optional(),
  },
  {
    error: (issue) =>
      issue.code !== "unrecognized_keys"
        ? undefined
        : issue.keys.includes("key")
          ? "holds a key; the file stores only its sha256 (npm run key prints it)"
          : `unknown field ${issue.keys.join(", ")}`,
  },
);

const fileSchema = z.strictObject({ keys: z.array(entrySchema) });

export class KeysFileError extends Error {
  override name = "KeysFileError";
}

/** The keys of the file, by the hex SHA-256 of each key. */
export function parseKeysFile(path: string, text: string): Map<string, KeyEntry> {
  const fail = (where: string, problem: string) => {
    throw new KeysFileError(`API_KEYS_FILE ${path}: ${where}${problem}`);
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    fail("", `not JSON (${(error as Error).message})`);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    const [, index, ...rest] = issue.path;
    const entry = (json as { keys?: { name?: unknown }[] }).keys?.[index as number];
    const where =
      index === undefined
        ? ""
        : `key ${Number(index) + 1}${typeof entry?.name === "string" ? ` ("${entry.name}")` : ""}${rest.length ? ` ${rest.join(".")}` : ""}: `;
    fail(where, issue.message);
  }
  const keys = new Map<string, KeyEntry>();
  const names = new Set<string>();
  parsed.data?.keys.forEach((entry, index) => {
    const digest = entry.sha256.toLowerCase();
    const where = `key ${index + 1} ("${entry.name}"): `;
    if (names.has(entry.name)) fail(where, "another key has this name");
    if (keys.has(digest)) fail(where, "another key has this sha256");
    names.add(entry.name);
    keys.set(digest, {
      credential: {
        name: entry.name,
        scopes: entry.scopes,
        rateLimitPerMinute: entry.rate_limit_per_minute,
        forcedRefreshPerMinute: entry.forced_refresh_per_minute,
      },
      expiresAt: entry.expires_at === undefined ? undefined : Date.parse(entry.expires_at),
    });
  });
  return keys;
}

export interface ReloadLog {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** How often `watch` looks: the longest a change waits, however often the file is rewritten. */
const POLL_MS = 250;
/** Coarser than any file system clock (FAT: 2 s): a stamp this near now may be a later write's. */
const RECENT_STAMP_MS = 2_000;

/** The file's current keys; `watch` keeps them current until `close`. */
export class KeysFile {
  readonly path: string;
  #keys: Map<string, KeyEntry>;
  /** The text last read, taken or refused: reading it again changes nothing and logs nothing. */
  #text: string;
  #identity: string | undefined;
  readonly #listeners = new Set<() => void>();
  #stop: (() => void) | undefined;

  /** Reads the file now; a bad file throws KeysFileError naming the file, the key and the problem. */
  constructor(path: string) {
    this.path = path;
    this.#identity = identityOf(path);
    this.#text = readText(path);
    this.#keys = parseKeysFile(path, this.#text);
  }

  lookup(digestHex: string): KeyEntry | undefined {
    return this.#keys.get(digestHex);
  }

  get size(): number {
    return this.#keys.size;
  }

  /** Calls `listener` after each reload that took the file's keys; returns what unsubscribes it. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reads the file again; a bad file keeps the previous keys. */
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

  /** Takes the file's keys if its text changed, or always; `identity`: the file's before reading. */
  #read(log: ReloadLog, identity: string | undefined, always: boolean): void {
    this.#identity = identity;
    try {
      const text = readText(this.path);
      if (text === this.#text && !always) return;
      this.#text = text;
      this.#keys = parseKeysFile(this.path, text);
    } catch (error) {
      log.error({}, `${(error as Error).message}; keeping the previous keys`);
      return;
    }
    log.info({ keys: this.#keys.size }, "API_KEYS_FILE reloaded");
    for (const listener of this.#listeners) {
      // One failing listener neither stops the others nor, from a signal or a timer, the process.
      try {
        listener();
      } catch (error) {
        log.error({ err: error }, "API_KEYS_FILE change listener failed");
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

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new KeysFileError(
      `API_KEYS_FILE ${path}: cannot be read (${(error as NodeJS.ErrnoException).code})`,
    );
  }
}
