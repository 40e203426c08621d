// API_KEYS_FILE: named keys with scopes, stored as the SHA-256 of each key (the file never holds a
// key). Reloaded when the file changes and on demand (the process asks on SIGHUP): a removal always
// applies, a bad entry refuses its own key only, and a file that does not parse keeps the previous
// keys it still holds, so a typo locks out no one else (watched-file.ts). Each problem is one line.
import { z } from "zod";
import type { Catalog } from "../endpoints/catalog.ts";
import { builtInCatalog } from "../endpoints/load-catalog.ts";
import { type Reading, SettingsFileError, WatchedFile } from "../watched-file.ts";
import { type Credential, credentialName, type Scope, scopesSchema } from "./credential.ts";

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

/** The file's shape; each entry is checked on its own, so that one bad entry refuses only itself. */
const fileSchema = z.strictObject({ keys: z.array(z.unknown()) });

/** What a bad keys file throws. */
export { SettingsFileError as KeysFileError };

type Keys = Map<string, KeyEntry>;

/**
 * The keys of the file, by the hex SHA-256 of each key; scopes name endpoints of `catalog`. At
 * startup (no `previous`) any problem is one. On reload a removed key is refused whatever else the
 * file holds: an entry the service cannot honour (an unknown endpoint, a bad field, a repeated name
 * or key) refuses that key alone, and a file that does not parse keeps only the previous keys whose
 * sha256 it still holds.
 */
export function readKeysFile(
  path: string,
  text: string,
  catalog: Catalog,
  previous?: Keys,
): Reading<Keys> {
  const line = (where: string, problem: string) => `API_KEYS_FILE ${path}: ${where}${problem}`;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return unparsed(line("", `not JSON (${(error as Error).message})`), text, previous);
  }
  const file = fileSchema.safeParse(json);
  if (!file.success) {
    const issue = file.error.issues[0] as z.core.$ZodIssue;
    return unparsed(line("", issue.message), text, previous);
  }
  const keys: Keys = new Map();
  const names = new Set<string>();
  const problems: string[] = [];
  const warnings: string[] = [];
  const schema = entrySchema(catalog);
  for (const [index, written] of file.data.keys.entries()) {
    const named = (written as { name?: unknown } | null)?.name;
    const where = `key ${index + 1}${typeof named === "string" ? ` ("${named}")` : ""}`;
    const refuse = (problem: string, field = "") =>
      problems.push(
        line(`${where}${field}: `, previous ? `${problem}; that key is refused` : problem),
      );
    const parsed = schema.safeParse(written);
    if (!parsed.success) {
      const issue = parsed.error.issues[0] as z.core.$ZodIssue;
      refuse(issue.message, issue.path.length ? ` ${issue.path.join(".")}` : "");
      continue;
    }
    const entry = parsed.data;
    const digest = entry.sha256.toLowerCase();
    const clash = names.has(entry.name)
      ? "another key has this name"
      : keys.has(digest)
        ? "another key has this sha256"
        : undefined;
    if (clash) {
      refuse(clash);
      continue;
    }
    names.add(entry.name);
    for (const unpinned of unpinnedByWildcard(catalog, entry.scopes)) {
      warnings.push(line(`${where} `, unpinned));
    }
    keys.set(digest, {
      credential: {
        name: entry.name,
        scopes: entry.scopes,
        rateLimitPerMinute: entry.rate_limit_per_minute,
        forcedRefreshPerMinute: entry.forced_refresh_per_minute,
      },
      expiresAt: entry.expires_at === undefined ? undefined : Date.parse(entry.expires_at),
    });
  }
  return { value: keys, problems, warnings };
}

/** A file that does not parse: on reload, the previous keys whose sha256 it still holds. */
function unparsed(problem: string, text: string, previous: Keys | undefined): Reading<Keys> {
  if (!previous) return { value: new Map(), problems: [problem], warnings: [] };
  const lower = text.toLowerCase();
  const kept = new Map([...previous].filter(([digest]) => lower.includes(digest)));
  const revoked = previous.size - kept.size;
  return {
    value: kept,
    problems: [
      `${problem}; keeping the previous keys it still holds${revoked > 0 ? ` (${revoked} no longer in it refused)` : ""}`,
    ],
    warnings: [],
  };
}

/**
 * A `*` scope's fixed parameter that some endpoints do not take: the scope rule pins it where it is
 * taken, so the key calls those endpoints unpinned — broad as `*` means, but not what the file seems
 * to say. Said, not refused: a new endpoint without the parameter would otherwise lock the key out.
 */
function unpinnedByWildcard(catalog: Catalog, scopes: readonly Scope[]): string[] {
  return scopes.flatMap((scope, index) => {
    if (scope.endpoint !== "*") return [];
    return Object.keys(scope.fixed_params).flatMap((param) => {
      const lacking = catalog.entries.filter((endpoint) => !endpoint.paramNames.has(param));
      if (lacking.length === 0) return [];
      const names = lacking.map((endpoint) => endpoint.name).join(", ");
      return [
        `scopes.${index}: * fixes "${param}", which ${names} ${lacking.length === 1 ? "does" : "do"} not take: this key calls ${lacking.length === 1 ? "it" : "them"} with no ${param} pinned (name the endpoints to scope instead of *)`,
      ];
    });
  });
}

/** The file's current keys; `watch` keeps them current until `close` (see WatchedFile). */
export class KeysFile extends WatchedFile<Keys> {
  /** Reads the file now; a bad file throws KeysFileError naming the file, the key and the problem. */
  constructor(path: string, catalog: Catalog = builtInCatalog()) {
    super(
      path,
      {
        variable: "API_KEYS_FILE",
        read: (text, against, previous) => readKeysFile(path, text, against, previous),
        summary: (keys) => ({ keys: keys.size }),
      },
      catalog,
    );
  }

  lookup(digestHex: string): KeyEntry | undefined {
    return this.value.get(digestHex);
  }

  get size(): number {
    return this.value.size;
  }
}
