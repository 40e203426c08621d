// Presented secret → credential: an API key (API_KEYS: full access; API_KEYS_FILE: named and
// scoped) or a signed access token. Keys are looked up by their SHA-256: one hash and one map
// lookup per request, whose timing depends on the digest, never on how much of a key was right.
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
 * which costs a signature check, for the caller to start only if it may.
 */
export type Authenticate = (secret: string) => Credential | TokenCheck;

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

  return (secret) => {
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
    const full = fullAccess.get(digest);
    if (full) return full;
    const entry = keysFile?.lookup(digest);
    if (!entry) throw new AuthenticationError("Invalid API key.");
    if (entry.expiresAt !== undefined && now() >= entry.expiresAt) {
      throw new AuthenticationError(
        `This API key expired at ${new Date(entry.expiresAt).toISOString()}.`,
      );
    }
    return entry.credential;
  };
}
