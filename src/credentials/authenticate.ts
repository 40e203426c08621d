// Presented secret → credential: an API key (API_KEYS: full access; API_KEYS_FILE: named and
// scoped) or a signed access token. Keys are looked up by their SHA-256: one hash and one map
// lookup, whose timing depends on the digest, never on how much of a key was right. A connection
// that presents again the key it last had accepted is answered without the hash (see `accepted`).
import { hash } from "node:crypto";
import { type Credential, FULL_ACCESS } from "./credential.ts";
import type { KeysFile } from "./keys-file.ts";
import { TokenError, type TokenVerifier } from "./tokens.ts";

export interface CredentialSources {
  /** Keys with full access, named `api-key-<position>`. */
  apiKeys?: readonly string[];
  keysFile?: KeysFile;
  tokens?: TokenVerifier;
  /** Epoch ms; default Date.now. */
  now?: () => number;
}

/** Missing, unknown, expired or badly signed: the message a 401 carries. */
export class AuthenticationError extends Error {
  override name = "AuthenticationError";
}

/** A token's signature verification, not yet begun. */
export type TokenCheck = () => Promise<Credential>;

/**
 * An API key is answered at once (no promise on a cached hit's path); a token with its verification,
 * which costs a signature check, for the caller to start only if it may. `connection` (any object
 * that lives as long as the client's connection) lets a kept-alive connection's repeated key skip
 * the hash.
 */
export type Authenticate = (secret: string, connection?: object) => Credential | TokenCheck;

/** The key a connection last had accepted, and what it was accepted against. */
interface AcceptedKey {
  secret: string;
  credential: Credential;
  /** The keys file's keys when it was accepted (a reload replaces them whole); undefined: no file. */
  keys: unknown;
  expiresAt: number | undefined;
}

const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

// The one-shot form: no Hash object per request (a third of the cost of createHash().update().digest()).
export const sha256Hex = (text: string) => hash("sha256", text, "hex");

export function createAuthenticator(sources: CredentialSources): Authenticate {
  const { keysFile, tokens, now = Date.now } = sources;
  const fullAccess = new Map(
    (sources.apiKeys ?? []).map((key, index) => [
      sha256Hex(key),
      { name: `api-key-${index + 1}`, scopes: FULL_ACCESS } satisfies Credential,
    ]),
  );
  if (fullAccess.size === 0 && !keysFile && !tokens) {
    throw new Error("no credentials: give API keys, a keys file or a token key");
  }

  // A kept-alive connection sends the same key on every request: comparing it with the one the
  // connection last had accepted costs a seventh of its SHA-256 and lookup (docs/benchmarks.md,
  // "issue 41's hot path"). The comparison takes the same time whatever the two hold, and both are
  // secrets this connection presented: it tells a client nothing of any key it did not send.
  const accepted = new WeakMap<object, AcceptedKey>();

  return (secret, connection) => {
    const last = connection && accepted.get(connection);
    if (
      last !== undefined &&
      sameText(secret, last.secret) &&
      last.keys === keysFile?.value &&
      (last.expiresAt === undefined || now() < last.expiresAt)
    ) {
      return last.credential;
    }
    if (tokens && JWT_SHAPE.test(secret)) {
      return () =>
        tokens(secret).catch((error: unknown) => {
          if (error instanceof TokenError) {
            throw new AuthenticationError(`Invalid access token: ${error.message}.`);
          }
          throw error;
        });
    }
    const digest = sha256Hex(secret);
    const keys = keysFile?.value;
    const full = fullAccess.get(digest);
    const entry = full ? undefined : keysFile?.lookup(digest);
    const credential = full ?? entry?.credential;
    if (!credential) throw new AuthenticationError("Invalid API key.");
    const expiresAt = entry?.expiresAt;
    if (expiresAt !== undefined && now() >= expiresAt) {
      throw new AuthenticationError(
        `This API key expired at ${new Date(expiresAt).toISOString()}.`,
      );
    }
    if (connection) accepted.set(connection, { secret, credential, keys, expiresAt });
    return credential;
  };
}

/** Whether two strings are equal, in a time that depends on the length of `presented` only. */
function sameText(presented: string, kept: string): boolean {
  let difference = presented.length ^ kept.length;
  // Past the end of `kept`, charCodeAt is NaN, which `^` reads as 0: the lengths already differ.
  for (let i = 0; i < presented.length; i++) {
    difference |= presented.charCodeAt(i) ^ kept.charCodeAt(i);
  }
  return difference === 0;
}
