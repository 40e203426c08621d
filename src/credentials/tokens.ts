// Signed access tokens (JWT), verified with jose. Algorithms are pinned per key type: HS256 only
// with JWT_SECRET, ES256/RS256/EdDSA only with the keys of JWT_PUBLIC_KEYS_FILE, so neither `none`
// nor a token HMAC-signed with a public key can pass.
import { createPublicKey, createSecretKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  createLocalJWKSet,
  errors,
  type JSONWebKeySet,
  type JWK,
  type JWTHeaderParameters,
  type JWTVerifyOptions,
  jwtVerify,
} from "jose";
import { z } from "zod";
import type { TokenOptions } from "../config.ts";
import type { Catalog } from "../endpoints/catalog.ts";
import { builtInCatalog } from "../endpoints/load-catalog.ts";
import { type Credential, credentialName, scopesSchema } from "./credential.ts";

export type TokenVerifier = (token: string) => Promise<Credential>;

/** A token refused; the message says why, without echoing the token. */
export class TokenError extends Error {
  override name = "TokenError";
}

const LEEWAY_SECONDS = 30;
const ASYMMETRIC = ["ES256", "RS256", "EdDSA"] as const;

/** A token's claims, its scopes checked against `catalog`. */
const claimsSchema = (catalog: Catalog) =>
  z.object({
    sub: credentialName("needs sub, the credential's name"),
    exp: z.number(),
    iat: z.number().optional(),
    scopes: scopesSchema(catalog),
    rate_limit_per_minute: z.number().int().positive().optional(),
    forced_refresh_per_minute: z.number().int().nonnegative().optional(),
  });

export function createTokenVerifier(
  options: TokenOptions,
  catalog: Catalog = builtInCatalog(),
): TokenVerifier {
  const claims = claimsSchema(catalog);
  const secret =
    options.secret === undefined ? undefined : createSecretKey(Buffer.from(options.secret));
  const publicKeys =
    options.publicKeysFile === undefined ? undefined : readPublicKeys(options.publicKeysFile);
  const algorithms = [...(secret ? ["HS256"] : []), ...(publicKeys ? ASYMMETRIC : [])];

  const keyFor = async (header: JWTHeaderParameters) => {
    if (header.alg === "HS256" && secret) return secret;
    if (publicKeys && (ASYMMETRIC as readonly string[]).includes(header.alg))
      return publicKeys(header);
    throw new TokenError(`algorithm ${header.alg} is not accepted`);
  };

  const verifyOptions: JWTVerifyOptions = {
    algorithms,
    requiredClaims: ["exp"],
    clockTolerance: LEEWAY_SECONDS,
    ...(options.audience !== undefined && { audience: options.audience }),
    ...(options.issuer !== undefined && { issuer: options.issuer }),
  };
  const verify = async (token: string) => {
    try {
      return await jwtVerify(token, keyFor, verifyOptions);
    } catch (error) {
      // Several keys fit the token's alg and kid (PEM keys have no kid, e.g. during a rotation):
      // jose hands them over to be tried in turn.
      if (!(error instanceof errors.JWKSMultipleMatchingKeys)) throw error;
      for await (const key of error) {
        try {
          return await jwtVerify(token, key, verifyOptions);
        } catch (attempt) {
          if (!(attempt instanceof errors.JWSSignatureVerificationFailed)) throw attempt;
        }
      }
      throw new errors.JWSSignatureVerificationFailed();
    }
  };

  return async (token) => {
    let payload: unknown;
    try {
      ({ payload } = await verify(token));
    } catch (error) {
      throw new TokenError((error as Error).message);
    }
    const parsed = claims.safeParse(payload);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new TokenError(`claim ${issue?.path.join(".")}: ${issue?.message}`);
    }
    const { sub, exp, iat, scopes, rate_limit_per_minute, forced_refresh_per_minute } = parsed.data;
    const now = Math.floor(Date.now() / 1000);
    // From when it was issued, or from now when that is earlier: a future iat cannot shorten it.
    if (exp - Math.min(iat ?? now, now) > options.maxLifetimeSeconds) {
      throw new TokenError(
        `it lives longer than JWT_MAX_LIFETIME_SECONDS (${options.maxLifetimeSeconds} s)`,
      );
    }
    return {
      name: sub,
      scopes,
      rateLimitPerMinute: rate_limit_per_minute,
      forcedRefreshPerMinute: forced_refresh_per_minute,
      expiresAt: exp * 1000,
    };
  };
}

/** The file's keys (PEM or JWKS) as a key set; PEM keys get the one algorithm their type allows. */
function readPublicKeys(path: string) {
  try {
    return keySetOf(readFileSync(path, "utf8"));
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new Error(`JWT_PUBLIC_KEYS_FILE ${path}: ${code ? `cannot be read (${code})` : message}`);
  }
}

const PRIVATE_KEY_HELD = "holds a secret or private key; only public keys belong here";

function keySetOf(text: string) {
  const pem = !text.trimStart().startsWith("{");
  if (pem && /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) throw new Error(PRIVATE_KEY_HELD);
  const jwks: JSONWebKeySet = pem
    ? { keys: pemBlocks(text).map((block) => jwkOf(createPublicKey(block))) }
    : (JSON.parse(text) as JSONWebKeySet);
  for (const key of jwks.keys) {
    if (key.kty === "oct" || "d" in key) throw new Error(PRIVATE_KEY_HELD);
  }
  if (jwks.keys.length === 0) throw new Error("holds no public key");
  const keySet = createLocalJWKSet(jwks);
  // PEM keys have no kid, so the token's kid (most issuers set one) cannot match any of them.
  return pem ? (header: JWTHeaderParameters) => keySet({ ...header, kid: undefined }) : keySet;
}

function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g) ?? [];
}

function jwkOf(key: KeyObject): JWK {
  const jwk = key.export({ format: "jwk" }) as JWK;
  const alg =
    key.asymmetricKeyType === "rsa"
      ? "RS256"
      : key.asymmetricKeyType === "ed25519"
        ? "EdDSA"
        : key.asymmetricKeyType === "ec" && jwk.crv === "P-256"
          ? "ES256"
          : undefined;
  if (!alg)
    throw new Error(
      `a ${key.asymmetricKeyType} key is not one of ES256 (P-256), RS256 or EdDSA (Ed25519)`,
    );
  return { ...jwk, alg };
}
