// API_KEYS_FILE: named keys with scopes, stored as the SHA-256 of each key (the file never holds a
// key). Reloaded when the file changes and on demand (the process asks on SIGHUP); a bad file on
// reload keeps the previous set and logs one error line, so a typo locks nobody out (watched-file.ts).
import { z } from "zod";
import type { Catalog } from "../endpoints/catalog.ts";
import { builtInCatalog } from "../endpoints/load-catalog.ts";
import { SettingsFileError, WatchedFile } from "../watched-file.ts";
import { type Credential, credentialName, scopesSchema } from "./credential.ts";

export interface KeyEntry {
  credential: Credential;
  /** Epoch ms after which the key is refused; absent: never. */
  expiresAt?: number;
}

/** One key's entry, its scopes checked against `catalog`. */
const entrySchema = (catalog: Catalog) =>
  z.strictObject(
    {
      name: credentialName("needs a name"),
      sha256: z
        .string({ error: "needs sha256: the SHA-256 of the key in hex (npm run key prints it)" })
        .regex(/^[0-9a-fA-F]{64}$/, "sha256 must be 64 hex digits: the SHA-256 of the key"),
      scopes: scopesSchema(catalog),
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

const fileSchema = (catalog: Catalog) => z.strictObject({ keys: z.array(entrySchema(catalog)) });

/** What a bad keys file throws. */
export { SettingsFileError as KeysFileError };

/** The keys of the file, by the hex SHA-256 of each key; scopes name endpoints of `catalog`. */
export function parseKeysFile(
  path: string,
  text: string,
  catalog: Catalog = builtInCatalog(),
): Map<string, KeyEntry> {
  const fail = (where: string, problem: string) => {
    throw new SettingsFileError(`API_KEYS_FILE ${path}: ${where}${problem}`);
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    fail("", `not JSON (${(error as Error).message})`);
  }
  const parsed = fileSchema(catalog).safeParse(json);
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

/** The file's current keys; `watch` keeps them current until `close` (see WatchedFile). */
export class KeysFile extends WatchedFile<Map<string, KeyEntry>> {
  /** Reads the file now; a bad file throws KeysFileError naming the file, the key and the problem. */
  constructor(path: string, catalog: Catalog = builtInCatalog()) {
    super(path, {
      variable: "API_KEYS_FILE",
      noun: "keys",
      parse: (text) => parseKeysFile(path, text, catalog),
      summary: (keys) => ({ keys: keys.size }),
    });
  }

  lookup(digestHex: string): KeyEntry | undefined {
    return this.value.get(digestHex);
  }

  get size(): number {
    return this.value.size;
  }
}
