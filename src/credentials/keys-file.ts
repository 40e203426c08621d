// API_KEYS_FILE: named keys with scopes, stored as the SHA-256 of each key (the file never holds a
// key). Reloaded on SIGHUP and when the file changes; a bad file on reload keeps the previous set
// and logs one error line, so a typo locks nobody out.
import { type FSWatcher, readFileSync, watch } from "node:fs";
import { basename, dirname } from "node:path";
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

/** The file's current keys; `watch` keeps them current until `close`. */
export class KeysFile {
  readonly path: string;
  #keys: Map<string, KeyEntry>;
  #stop: (() => void) | undefined;
  readonly #listeners = new Set<() => void>();

  /** Reads the file now; a bad file throws KeysFileError naming the file, the key and the problem. */
  constructor(path: string) {
    this.path = path;
    this.#keys = parseKeysFile(path, readText(path));
  }

  lookup(digestHex: string): KeyEntry | undefined {
    return this.#keys.get(digestHex);
  }

  get size(): number {
    return this.#keys.size;
  }

  /** Calls `listener` after each reload that took; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reads the file again; a bad file keeps the previous keys. */
  reload(log: ReloadLog): void {
    try {
      this.#keys = parseKeysFile(this.path, readText(this.path));
      log.info({ keys: this.#keys.size }, "API_KEYS_FILE reloaded");
      for (const listener of this.#listeners) listener();
    } catch (error) {
      log.error({}, `${(error as Error).message}; keeping the previous keys`);
    }
  }

  /** Reloads on SIGHUP and when the file changes (watching its folder: editors replace files). */
  watch(log: ReloadLog): void {
    let timer: NodeJS.Timeout | undefined;
    const soon = () => {
      clearTimeout(timer);
      // Editors write in several steps; one reload once they are done.
      timer = setTimeout(() => this.reload(log), 50);
    };
    const watcher: FSWatcher = watch(dirname(this.path), (_event, file) => {
      if (file === basename(this.path)) soon();
    });
    const onHangup = () => this.reload(log);
    process.on("SIGHUP", onHangup);
    this.#stop = () => {
      clearTimeout(timer);
      watcher.close();
      process.off("SIGHUP", onHangup);
    };
  }

  close(): void {
    this.#stop?.();
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
