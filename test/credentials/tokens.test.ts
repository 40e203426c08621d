// Signed access tokens: what a good token grants, and every way a forged, stale, over-long or
// mis-scoped one is refused; plus how a bad public keys file is refused at startup.
import { createPrivateKey, sign as signBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type CryptoKey,
  exportJWK,
  exportPKCS8,
  exportSPKI,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  SignJWT,
} from "jose";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { TokenOptions } from "../../src/config.ts";
import {
  AuthenticationError,
  createAuthenticator,
  type TokenCheck,
} from "../../src/credentials/authenticate.ts";
import type { Scope } from "../../src/credentials/credential.ts";
import {
  createTokenVerifier,
  TokenError,
  type TokenVerifier,
} from "../../src/credentials/tokens.ts";

const SECRET = "an-hs256-secret-of-at-least-32-bytes!";
const MAX_LIFETIME = 3600;
const INVOCATION_STATS_ID = "301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c";
const SCOPES: Scope[] = [
  { endpoint: "logs.all", fixed_params: { project: "acme" } },
  { endpoint: INVOCATION_STATS_ID, fixed_params: {} },
];

type Alg = "HS256" | "ES256" | "RS256" | "EdDSA";
const ASYMMETRIC = ["ES256", "RS256", "EdDSA"] as const;

const pairs = {
  ES256: await generateKeyPair("ES256", { extractable: true }),
  RS256: await generateKeyPair("RS256", { extractable: true }),
  EdDSA: await generateKeyPair("EdDSA", { extractable: true }),
};
const RSA_PEM = await exportSPKI(pairs.RS256.publicKey);
const PEMS = await Promise.all(ASYMMETRIC.map((alg) => exportSPKI(pairs[alg].publicKey)));
const JWKS = {
  keys: await Promise.all(
    ASYMMETRIC.map(async (alg) => ({
      ...(await exportJWK(pairs[alg].publicKey)),
      kid: kidOf(alg),
    })),
  ),
};

function kidOf(alg: Alg): string {
  return `${alg.toLowerCase()}-1`;
}

// Date alone is frozen, so that the leeway boundaries are exact whatever the clock does meanwhile.
let now = 0;
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  now = Math.floor(Date.now() / 1000);
  vi.setSystemTime(now * 1000);
});
afterEach(() => {
  vi.useRealTimers();
});

/** A token's usual claims: issued now, living ten minutes, scoped to SCOPES. */
function claims(overrides: JWTPayload = {}): JWTPayload {
  return { sub: "acme", iat: now, exp: now + 600, scopes: SCOPES, ...overrides };
}

interface Signing {
  alg: Alg;
  key: CryptoKey | Uint8Array;
  kid?: string;
}

function sign(payload: JWTPayload, { alg, key, kid }: Signing): Promise<string> {
  return new SignJWT(payload).setProtectedHeader({ alg, typ: "JWT", kid }).sign(key);
}

const hs256 = (payload: JWTPayload = claims()) =>
  sign(payload, { alg: "HS256", key: new TextEncoder().encode(SECRET) });

const base64url = (value: string | Uint8Array) => Buffer.from(value).toString("base64url");

/** A compact JWS built by hand, for what jose refuses to sign: `none`, a key of the wrong type. */
function handmade(
  header: object,
  payload: JWTPayload,
  signature: (input: string) => Uint8Array = () => new Uint8Array(),
): string {
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  return `${input}.${base64url(signature(input))}`;
}

function fileWith(name: string, content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "tokens-")), name);
  writeFileSync(path, content);
  return path;
}

const pemFile = (pems: readonly string[] = PEMS) => fileWith("keys.pem", pems.join("\n"));
const jwksFile = (keys: readonly JWK[] = JWKS.keys) =>
  fileWith("jwks.json", JSON.stringify({ keys }));

const verifier = (options: Partial<TokenOptions> = {}) =>
  createTokenVerifier({ secret: SECRET, maxLifetimeSeconds: MAX_LIFETIME, ...options });
const publicKeysOnly = (publicKeysFile: string) => verifier({ secret: undefined, publicKeysFile });

async function refused(verify: TokenVerifier, token: string, why: RegExp): Promise<void> {
  const error = await verify(token).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(TokenError);
  expect((error as TokenError).message).toMatch(why);
}

async function accepted(verify: TokenVerifier, token: string): Promise<void> {
  expect(await verify(token)).toEqual({
    name: "acme",
    scopes: SCOPES,
    expiresAt: expect.any(Number),
  });
}

function refusedFile(path: string, why: RegExp): void {
  let thrown: unknown;
  try {
    publicKeysOnly(path);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(Error);
  const { message } = thrown as Error;
  expect(message.startsWith(`JWT_PUBLIC_KEYS_FILE ${path}: `)).toBe(true);
  expect(message).toMatch(why);
}

describe("access tokens", () => {
  it("turns a valid HS256 token into its credential: sub, scopes, rate limit and expiry", async () => {
    const token = await hs256(claims({ rate_limit_per_minute: 120 }));
    expect(await verifier()(token)).toEqual({
      name: "acme",
      scopes: SCOPES,
      rateLimitPerMinute: 120,
      expiresAt: (now + 600) * 1000,
    });
  });

  it.each(ASYMMETRIC)("accepts a valid %s token against a PEM file", async (alg) => {
    const token = await sign(claims(), { alg, key: pairs[alg].privateKey });
    await accepted(publicKeysOnly(pemFile()), token);
  });

  it.each(ASYMMETRIC)("accepts a valid %s token against a JWKS file, by kid", async (alg) => {
    const token = await sign(claims(), { alg, key: pairs[alg].privateKey, kid: kidOf(alg) });
    await accepted(publicKeysOnly(jwksFile()), token);
  });

  it("accepts a token with a kid against a PEM file, whose keys have none", async () => {
    const token = await sign(claims(), { alg: "ES256", key: pairs.ES256.privateKey, kid: "k7" });
    await accepted(publicKeysOnly(pemFile()), token);
  });

  it("accepts a token signed by any of several PEM keys of one type (a rotation)", async () => {
    const next = await generateKeyPair("RS256", { extractable: true });
    const verify = publicKeysOnly(pemFile([RSA_PEM, await exportSPKI(next.publicKey)]));
    for (const key of [pairs.RS256.privateKey, next.privateKey]) {
      await accepted(verify, await sign(claims(), { alg: "RS256", key }));
    }
    const stranger = await generateKeyPair("RS256");
    await refused(
      verify,
      await sign(claims(), { alg: "RS256", key: stranger.privateKey }),
      /signature verification failed/,
    );
  });

  it("refuses a token expired more than 30 s ago", async () => {
    await refused(verifier(), await hs256(claims({ exp: now - 31 })), /"exp" claim/);
  });

  it("accepts a token expired 10 s ago (clock leeway)", async () => {
    await accepted(verifier(), await hs256(claims({ iat: now - 600, exp: now - 10 })));
  });

  it("refuses a token not valid before 31 s from now", async () => {
    await refused(verifier(), await hs256(claims({ nbf: now + 31 })), /"nbf" claim/);
  });

  it("accepts a token not valid before 10 s from now (clock leeway)", async () => {
    await accepted(verifier(), await hs256(claims({ nbf: now + 10 })));
  });

  it("refuses a token without exp", async () => {
    await refused(verifier(), await hs256(claims({ exp: undefined })), /missing required "exp"/);
  });

  it("refuses a token living longer than the maximum lifetime", async () => {
    const token = await hs256(claims({ exp: now + MAX_LIFETIME + 1 }));
    await refused(verifier(), token, /longer than JWT_MAX_LIFETIME_SECONDS \(3600 s\)/);
  });

  it("measures the lifetime from now when iat is in the future", async () => {
    const token = await hs256(claims({ iat: now + MAX_LIFETIME, exp: now + MAX_LIFETIME + 600 }));
    await refused(verifier(), token, /longer than JWT_MAX_LIFETIME_SECONDS/);
  });

  it("refuses a payload re-encoded with a wider scope under the original signature", async () => {
    const [header, , signature] = (await hs256()).split(".");
    const wider = base64url(JSON.stringify(claims({ scopes: [{ endpoint: "*" }] })));
    await refused(verifier(), `${header}.${wider}.${signature}`, /signature verification failed/);
  });

  it("refuses a tampered signature", async () => {
    const [header, payload, signature = ""] = (await hs256()).split(".");
    const flipped = `${signature[0] === "A" ? "B" : "A"}${signature.slice(1)}`;
    await refused(verifier(), `${header}.${payload}.${flipped}`, /signature verification failed/);
  });

  it("refuses an unsecured token (alg none)", async () => {
    const token = handmade({ alg: "none", typ: "JWT" }, claims());
    await refused(verifier({ publicKeysFile: pemFile() }), token, /"alg".+not allowed/);
  });

  describe("an HS256 token HMAC-signed with the RSA public key", () => {
    const confused = () => sign(claims(), { alg: "HS256", key: new TextEncoder().encode(RSA_PEM) });

    it("is refused when the server has only public keys", async () => {
      await refused(publicKeysOnly(pemFile()), await confused(), /"alg".+not allowed/);
    });

    it("is refused when the server has both a secret and public keys", async () => {
      const verify = verifier({ publicKeysFile: pemFile() });
      await refused(verify, await confused(), /signature verification failed/);
    });
  });

  it("refuses a kid the JWKS does not hold", async () => {
    const token = await sign(claims(), { alg: "ES256", key: pairs.ES256.privateKey, kid: "es-2" });
    await refused(publicKeysOnly(jwksFile()), token, /no applicable key/);
  });

  it("refuses a token whose header names ES256 but which an RSA key signed", async () => {
    const rsa = createPrivateKey(await exportPKCS8(pairs.RS256.privateKey));
    const token = handmade({ alg: "ES256", kid: kidOf("RS256") }, claims(), (input) =>
      signBytes("sha256", Buffer.from(input), rsa),
    );
    await refused(publicKeysOnly(jwksFile()), token, /no applicable key/);
  });

  it("refuses a token whose header names ES256 but which an RSA key signed, against PEM keys", async () => {
    const rsa = createPrivateKey(await exportPKCS8(pairs.RS256.privateKey));
    const token = handmade({ alg: "ES256" }, claims(), (input) =>
      signBytes("sha256", Buffer.from(input), rsa),
    );
    await refused(publicKeysOnly(pemFile()), token, /signature verification failed/);
  });

  describe("audience and issuer", () => {
    const checking = () => verifier({ audience: "query-service", issuer: "https://auth.example" });
    const right = { aud: "query-service", iss: "https://auth.example" };

    it("accepts the configured audience and issuer", async () => {
      await accepted(checking(), await hs256(claims(right)));
    });

    it("refuses another audience", async () => {
      await refused(checking(), await hs256(claims({ ...right, aud: "other" })), /"aud"/);
    });

    it("refuses another issuer", async () => {
      await refused(checking(), await hs256(claims({ ...right, iss: "https://evil" })), /"iss"/);
    });

    it("checks no audience when none is configured", async () => {
      await accepted(verifier(), await hs256(claims({ aud: "anyone" })));
    });
  });

  it("refuses a scope naming an unknown endpoint", async () => {
    const token = await hs256(claims({ scopes: [{ endpoint: "logs.none", fixed_params: {} }] }));
    await refused(verifier(), token, /claim scopes.0: no endpoint is named .*"logs.none"/);
  });

  it("refuses a scope fixing a parameter its endpoint does not take", async () => {
    const scopes = [{ endpoint: "usage.api-counts", fixed_params: { project_tier: "PRO" } }];
    await refused(
      verifier(),
      await hs256(claims({ scopes })),
      /claim scopes.0: fixes "project_tier", which usage.api-counts takes/,
    );
  });

  it("refuses a token without sub", async () => {
    await refused(verifier(), await hs256(claims({ sub: undefined })), /claim sub: needs sub/);
  });
});

describe("JWT_PUBLIC_KEYS_FILE", () => {
  it("refuses a JWKS holding a private key", async () => {
    const path = jwksFile([await exportJWK(pairs.ES256.privateKey)]);
    refusedFile(path, /holds a secret or private key/);
  });

  it("refuses a PEM file holding a private key, even beside public keys", async () => {
    const privatePem = await exportPKCS8(pairs.RS256.privateKey);
    refusedFile(pemFile([privatePem]), /holds a secret or private key/);
    refusedFile(pemFile([...PEMS, privatePem]), /holds a secret or private key/);
  });

  it("refuses a JWKS holding a symmetric (oct) key", async () => {
    const path = jwksFile([await exportJWK(new TextEncoder().encode(SECRET))]);
    refusedFile(path, /holds a secret or private key/);
  });

  it("refuses a missing file", () => {
    refusedFile(join(tmpdir(), "no-such-dir-for-tokens", "keys.pem"), /cannot be read \(ENOENT\)/);
  });
});

describe("the authenticator with tokens", () => {
  it("answers a bad token with an AuthenticationError that does not echo it", async () => {
    const authenticate = createAuthenticator({ tokens: verifier() });
    const token = await hs256(claims({ exp: now - 60 }));
    const error = await (authenticate(token) as TokenCheck)().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(AuthenticationError);
    const { message } = error as AuthenticationError;
    expect(message.startsWith("Invalid access token: ")).toBe(true);
    for (const part of [token, ...token.split(".")]) expect(message).not.toContain(part);
  });

  it("still answers a valid token with its credential", async () => {
    const authenticate = createAuthenticator({ tokens: verifier() });
    expect(await (authenticate(await hs256()) as TokenCheck)()).toEqual({
      name: "acme",
      scopes: SCOPES,
      expiresAt: (now + 600) * 1000,
    });
  });
});
