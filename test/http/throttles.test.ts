// What each throttle counts, and for whom: failed authentications per client address (which a valid
// key passes, and a burst of tokens cannot outrun), the client address behind trusted proxies, the
// per-credential limit however many credentials are counted, and the anonymous pages' own limit.
import { readFileSync } from "node:fs";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { createTokenVerifier, type TokenVerifier } from "../../src/credentials/tokens.ts";
import { RedisLink } from "../../src/redis/link.ts";
import { redisServer } from "../support/redis-server.ts";
import { API_KEY, type ServiceOptions, startService } from "../support/service.ts";
import { start } from "../support/service-process.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const SECRET = "an-hs256-secret-of-at-least-32-bytes!";
const LISTING = "/api/endpoints";

const redis = redisServer();

const service = (options: Partial<ServiceOptions> = {}) => startService({ now: NOW, ...options });

/** The real verifier, counting the verifications it is asked for. */
function countedVerifier() {
  const verify = createTokenVerifier({ secret: SECRET, maxLifetimeSeconds: 600 });
  const counted = { calls: 0 };
  const tokens: TokenVerifier = (token) => {
    counted.calls += 1;
    return verify(token);
  };
  return { tokens, counted };
}

const token = (secret = SECRET) =>
  new SignJWT({ scopes: [{ endpoint: "*" }] })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("dashboard")
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(secret));
const FORGED_WITH = "a-wrong-secret-of-at-least-32-bytes";

const errorOf = (response: { body: string }) =>
  (JSON.parse(response.body) as { error: { code: string; message: string } }).error;

describe("the failed-authentication throttle", () => {
  it("lets a valid API key through from an address over its failures, and nothing else", async () => {
    const { tokens } = countedVerifier();
    const { app } = await service({ config: { auth: { failuresPerMinute: 3 } }, tokens });
    const from = (headers: Record<string, string>) =>
      app.inject({ url: LISTING, remoteAddress: "203.0.113.7", headers });
    for (let guess = 0; guess < 3; guess++) {
      expect((await from({ "x-api-key": `guess-${guess}-0123456789abcdef` })).statusCode).toBe(401);
    }
    // Everyone behind one proxy shares the address: its failures lock out no one holding a key.
    expect((await from({ "x-api-key": API_KEY })).statusCode).toBe(200);
    expect((await from({ authorization: `Bearer ${API_KEY}` })).statusCode).toBe(200);
    const guess = await from({ "x-api-key": "guess-3-0123456789abcdef" });
    expect(guess.statusCode).toBe(429);
    expect(errorOf(guess).code).toBe("rate_limited");
    expect(Number(guess.headers["retry-after"])).toBeGreaterThan(0);
    // A token costs a signature verification, which the throttle exists to bound: even a good one waits.
    const good = await from({ authorization: `Bearer ${await token()}` });
    expect(good.statusCode).toBe(429);
    expect(Number(good.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("counts concurrent bad tokens as they arrive: at most the limit reach the verifier", async () => {
    const { tokens, counted } = countedVerifier();
    const limit = 10;
    const { app } = await service({ config: { auth: { failuresPerMinute: limit } }, tokens });
    const forged = await token(FORGED_WITH);
    const answers = await Promise.all(
      Array.from({ length: 300 }, () =>
        app.inject({
          url: LISTING,
          remoteAddress: "203.0.113.9",
          headers: { authorization: `Bearer ${forged}` },
        }),
      ),
    );
    const statuses = answers.map((answer) => answer.statusCode);
    expect(counted.calls).toBeLessThanOrEqual(limit);
    expect(statuses.filter((status) => status === 401)).toHaveLength(counted.calls);
    expect(statuses.filter((status) => status === 429)).toHaveLength(300 - counted.calls);
  });

  it("gives back what a verification counted once its token passes", async () => {
    const { tokens, counted } = countedVerifier();
    const { app } = await service({ config: { auth: { failuresPerMinute: 2 } }, tokens });
    const good = await token();
    const answers = await Promise.all(
      Array.from({ length: 2 }, () =>
        app.inject({ url: LISTING, headers: { authorization: `Bearer ${good}` } }),
      ),
    );
    expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200]);
    // Two good tokens in flight used the whole budget for a moment; passing, they gave it back.
    const forged = await token(FORGED_WITH);
    for (let attempt = 0; attempt < 2; attempt++) {
      const refused = await app.inject({
        url: LISTING,
        headers: { authorization: `Bearer ${forged}` },
      });
      expect(refused.statusCode).toBe(401);
    }
    expect(counted.calls).toBe(4);
  });
});

describe("TRUST_PROXY: whose address the per-address counts use", () => {
  /** Three bad keys from the client `forwarded` names, through a proxy on loopback. */
  async function throttleThroughProxy(trustProxy: string[] | undefined) {
    const { app } = await service({ config: { auth: { failuresPerMinute: 3 }, trustProxy } });
    const through = (forwardedFor: string) =>
      app.inject({
        url: LISTING,
        remoteAddress: "127.0.0.1",
        headers: { "x-api-key": "guess-0123456789abcdef", "x-forwarded-for": forwardedFor },
      });
    for (let guess = 0; guess < 3; guess++) {
      expect((await through("198.51.100.1")).statusCode).toBe(401);
    }
    return through;
  }

  it.each([
    ["its address", ["127.0.0.1"]],
    ["its range", ["127.0.0.0/8", "10.0.0.0/8"]],
  ])("counts each client behind a proxy trusted by %s apart", async (_by, trustProxy) => {
    const through = await throttleThroughProxy(trustProxy);
    expect((await through("198.51.100.1")).statusCode).toBe(429);
    expect((await through("198.51.100.2")).statusCode).toBe(401);
    // What the client itself claims, left of the proxy's entry, is not believed.
    expect((await through("198.51.100.2, 198.51.100.1")).statusCode).toBe(429);
  });

  it("ignores X-Forwarded-For unless TRUST_PROXY is set: no client writes its way out", async () => {
    const through = await throttleThroughProxy(undefined);
    expect((await through("198.51.100.2")).statusCode).toBe(429);
    expect((await through("198.51.100.3")).statusCode).toBe(429);
  });

  it("reads TRUST_PROXY as addresses and CIDR ranges; a bad one stops startup naming it", () => {
    expect(loadConfig({}).trustProxy).toBeUndefined();
    expect(
      loadConfig({ TRUST_PROXY: " 172.30.80.2, 10.0.0.0/8,fd00::/8 ,::1" }).trustProxy,
    ).toEqual(["172.30.80.2", "10.0.0.0/8", "fd00::/8", "::1"]);
    for (const bad of ["10.0.0.0/33", "fd00::/129", "10.0.0/8", "proxy.internal", "10.0.0.0/8/8"]) {
      expect(() => loadConfig({ TRUST_PROXY: `127.0.0.1,${bad}` })).toThrow(
        new ConfigError(
          `TRUST_PROXY: ${JSON.stringify(bad)} is not an address or CIDR range (such as 10.0.0.0/8 or fd00::/8)`,
        ),
      );
    }
    expect(() => loadConfig({ TRUST_PROXY: " , " })).toThrow(/^TRUST_PROXY: holds no address/);
  });
});

describe("the per-credential rate limit", () => {
  it("keeps a limited key's count however many other credentials are counted after it", async () => {
    const others = Array.from({ length: 5_001 }, (_, i) => `other-key-${i}-0123456789abcdef`);
    const { app } = await service({
      config: { rateLimitPerMinute: 1, auth: { apiKeys: [API_KEY, ...others] } },
    });
    const as = async (key: string) =>
      (await app.inject({ url: LISTING, headers: { "x-api-key": key } })).statusCode;
    expect(await as(API_KEY)).toBe(200);
    expect(await as(API_KEY)).toBe(429);
    for (const key of others) expect(await as(key)).toBe(200);
    expect(await as(API_KEY)).toBe(429);
  });
});

describe("what is served without a credential", () => {
  const SWAGGER_UI = new URL("../../node_modules/@fastify/swagger-ui/static/", import.meta.url);
  const BROWSER = { "accept-encoding": "gzip, deflate, br, zstd" };

  it("counts /docs, its assets, /openapi.json and the explorer per client address", async () => {
    const { app } = await service({ config: { anonymousRateLimitPerMinute: 3 } });
    const from = (remoteAddress: string, url: string, headers: Record<string, string> = {}) =>
      app.inject({ url, remoteAddress, headers });
    for (const url of ["/docs", "/openapi.json", "/"]) {
      expect((await from("203.0.113.7", url)).statusCode, url).toBe(200);
    }
    const limited = await from("203.0.113.7", "/docs/static/swagger-ui.css");
    expect(limited.statusCode).toBe(429);
    expect(errorOf(limited)).toEqual({
      code: "rate_limited",
      message: expect.stringMatching(
        /^More than 3 requests a minute from this address without a credential; retry in \d+ seconds\.$/,
      ),
    });
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect((await from("203.0.113.7", "/explorer/main.js")).statusCode).toBe(429);
    expect((await from("203.0.113.7", "/openapi.json")).statusCode).toBe(429);
    // A credential's requests are its own: counted by the credential, or (the document) not at all.
    const key = { "x-api-key": API_KEY };
    expect((await from("203.0.113.7", "/openapi.json", key)).statusCode).toBe(200);
    expect((await from("203.0.113.7", LISTING, key)).statusCode).toBe(200);
    expect((await from("203.0.113.8", "/docs/static/swagger-ui.css")).statusCode).toBe(200);
  });

  it("counts an address once across replicas that share Redis", async () => {
    // Generous: this machine is shared, and a late answer would make the count per replica.
    const link = new RedisLink({
      url: redis.url,
      prefix: `throttles-${process.pid}:`,
      timeoutMs: 1_000,
    });
    try {
      expect(await link.waitUntilUp(5_000)).toBe(true);
      const replicas = [
        await service({ config: { anonymousRateLimitPerMinute: 3 }, redis: link }),
        await service({ config: { anonymousRateLimitPerMinute: 3 }, redis: link }),
      ];
      const statusOn = async (replica: number) =>
        (
          await replicas[replica]?.app.inject({
            url: "/openapi.json",
            remoteAddress: "203.0.113.5",
          })
        )?.statusCode;
      expect([await statusOn(0), await statusOn(1), await statusOn(0)]).toEqual([200, 200, 200]);
      expect([await statusOn(1), await statusOn(0)]).toEqual([429, 429]);
    } finally {
      await link.close();
    }
  });

  it("serves the docs page's assets compressed, under a path naming their version, cached for good", async () => {
    const { app } = await service();
    const page = await app.inject({ url: "/docs" });
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map(
      ([, url]) => new URL(url as string, "http://localhost/docs").pathname,
    );
    const bundle = assets.find((url) => url.endsWith("/swagger-ui-bundle.js")) as string;
    expect(bundle).toMatch(/^\/docs\/static\/[0-9a-f]{16}\/swagger-ui-bundle\.js$/);
    expect(assets.filter((url) => url.startsWith(bundle.replace(/[^/]+$/, "")))).toHaveLength(6);
    const file = readFileSync(new URL("swagger-ui-bundle.js", SWAGGER_UI));
    const decoders: Record<string, (body: Buffer) => Buffer> = {
      br: brotliDecompressSync,
      gzip: gunzipSync,
      identity: (body) => body,
    };
    const etags = new Set<string>();
    for (const [acceptEncoding, encoding] of [
      [BROWSER["accept-encoding"], "br"],
      ["gzip", "gzip"],
      ["br;q=0, gzip", "gzip"],
      ["", "identity"],
    ] as const) {
      const response = await app.inject({
        url: bundle,
        headers: { "accept-encoding": acceptEncoding },
      });
      expect(response.statusCode).toBe(200);
      expect(response.headers["content-encoding"]).toBe(
        encoding === "identity" ? undefined : encoding,
      );
      expect(response.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(response.headers.vary).toBe("Accept-Encoding");
      expect(response.headers["content-security-policy"]).toMatch(/^default-src 'self';/);
      expect(decoders[encoding]?.(response.rawPayload).equals(file)).toBe(true);
      etags.add(response.headers.etag as string);
      if (encoding === "br") expect(response.rawPayload.length).toBeLessThan(file.length / 3);
    }
    expect(etags.size).toBe(3);
  });

  it("serves /openapi.json compressed, with an ETag and a short max-age", async () => {
    const { app } = await service();
    const plain = await app.inject({ url: "/openapi.json" });
    const compressed = await app.inject({ url: "/openapi.json", headers: BROWSER });
    expect(compressed.headers["content-encoding"]).toBe("br");
    expect(brotliDecompressSync(compressed.rawPayload).toString()).toBe(plain.body);
    expect(compressed.headers["cache-control"]).toBe("public, max-age=60");
    expect(compressed.headers.vary).toBe("X-API-KEY, Authorization, Accept-Encoding");
    const etag = compressed.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const current = await app.inject({
      url: "/openapi.json",
      headers: { ...BROWSER, "if-none-match": etag },
    });
    expect(current.statusCode).toBe(304);
    expect(current.body).toBe("");
    const keyed = await app.inject({
      url: "/openapi.json",
      headers: { ...BROWSER, "x-api-key": API_KEY },
    });
    expect(keyed.headers["cache-control"]).toBe("private, max-age=60");
    expect(brotliDecompressSync(keyed.rawPayload).toString()).toBe(plain.body);
  });

  it("serves the explorer's files compressed, revalidated on every load", async () => {
    const { app } = await service();
    for (const url of ["/", "/explorer/main.js", "/explorer/uPlot.iife.min.js"]) {
      const plain = await app.inject({ url });
      const compressed = await app.inject({ url, headers: { "accept-encoding": "gzip" } });
      expect(compressed.headers["content-encoding"], url).toBe("gzip");
      expect(gunzipSync(compressed.rawPayload).toString()).toBe(plain.body);
      expect(compressed.headers["cache-control"]).toBe("no-cache");
      const etag = compressed.headers.etag as string;
      expect(etag).not.toBe(plain.headers.etag);
      const current = await app.inject({
        url,
        headers: { "accept-encoding": "gzip", "if-none-match": etag },
      });
      expect(current.statusCode).toBe(304);
    }
  });
});

describe("the service process", () => {
  it("reads TRUST_PROXY and ANONYMOUS_RATE_LIMIT_PER_MINUTE from its environment", async () => {
    const { baseUrl } = await start({
      API_KEYS: API_KEY,
      TRUST_PROXY: "127.0.0.1",
      ANONYMOUS_RATE_LIMIT_PER_MINUTE: "2",
    });
    const statusFor = async (client: string) =>
      (await fetch(`${baseUrl}/openapi.json`, { headers: { "x-forwarded-for": client } })).status;
    expect([await statusFor("198.51.100.1"), await statusFor("198.51.100.1")]).toEqual([200, 200]);
    expect(await statusFor("198.51.100.1")).toBe(429);
    expect(await statusFor("198.51.100.2")).toBe(200);
  });
});
