import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, nearMisses, settingDefaults } from "../src/config.ts";

const BIGQUERY = { BIGQUERY_PROJECT_ID: "acme", BIGQUERY_DATASET: "logs" };

describe("loadConfig", () => {
  it("defaults to the embedded engine, demo data left to the data at hand, on loopback port 3000", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 3000, host: "127.0.0.1", logLevel: "info" });
    expect(config.auth).toEqual({ apiKeys: [], failuresPerMinute: 30 });
    expect(config.engine).toEqual({ kind: "duckdb", timeoutMs: 30_000 });
  });

  it("passes LOCAL_DATA, DUCKDB_PATH and an explicit DEMO_DATA to the embedded engine", () => {
    const env = {
      LOCAL_DATA: "./exports",
      DUCKDB_PATH: "logs.duckdb",
      DEMO_DATA: "off",
      DUCKDB_QUERY_TIMEOUT_MS: "5000",
    };
    expect(loadConfig(env).engine).toEqual({
      kind: "duckdb",
      path: "logs.duckdb",
      localData: "./exports",
      demoData: false,
      timeoutMs: 5000,
    });
  });

  it("picks BigQuery when a project is set, with the job timeout and byte limit", () => {
    const config = loadConfig({
      BIGQUERY_PROJECT_ID: "acme",
      BIGQUERY_DATASET: "logs",
      BIGQUERY_LOCATION: "EU",
      BIGQUERY_MAX_BYTES_BILLED: "1000000000",
    });
    expect(config.engine).toEqual({
      kind: "bigquery",
      projectId: "acme",
      dataset: "logs",
      location: "EU",
      jobTimeoutMs: 30_000,
      maximumBytesBilled: "1000000000",
    });
  });

  it("splits API_KEYS on commas and trims them", () => {
    const keys = ["k".repeat(16), "z".repeat(20)];
    expect(loadConfig({ API_KEYS: ` ${keys[0]} ,${keys[1]},` }).auth.apiKeys).toEqual(keys);
  });

  it("reads the token settings only when a token key is configured", () => {
    const secret = "s".repeat(32);
    expect(loadConfig({ JWT_SECRET: secret, JWT_AUDIENCE: "dash" }).auth.tokens).toEqual({
      secret,
      maxLifetimeSeconds: 86_400,
      audience: "dash",
    });
    expect(() => loadConfig({ JWT_SECRET: "s".repeat(31) })).toThrow(
      "JWT_SECRET: needs at least 32 bytes",
    );
  });

  it("takes a CURSOR_SECRET of 32 characters or more", () => {
    expect(loadConfig({}).cursorSecret).toBeUndefined();
    const secret = "c".repeat(32);
    expect(loadConfig({ CURSOR_SECRET: secret }).cursorSecret).toBe(secret);
    expect(() => loadConfig({ CURSOR_SECRET: "c".repeat(31) })).toThrow(
      "CURSOR_SECRET: needs at least 32 characters",
    );
  });

  it("keeps a generated cursor secret in .state/cursor-secret of the folder it starts in, or CURSOR_SECRET_FILE", () => {
    expect(loadConfig({}).cursorSecretFile).toBe(join(process.cwd(), ".state", "cursor-secret"));
    expect(loadConfig({ CURSOR_SECRET_FILE: "/var/lib/log-query/secret" }).cursorSecretFile).toBe(
      "/var/lib/log-query/secret",
    );
    expect(() => loadConfig({ CURSOR_SECRET_FILE: " " })).toThrow(
      "CURSOR_SECRET_FILE: must not be empty",
    );
  });

  it("refuses an API_KEYS that holds no key, rather than generating one", () => {
    expect(() => loadConfig({ API_KEYS: ",,," })).toThrow(
      "API_KEYS: holds no key; list keys separated by commas, or leave it unset",
    );
  });

  it("bounds engine work by the engine's own measure unless told", () => {
    expect(loadConfig({}).admission).toEqual({
      maxConcurrency: expect.any(Number),
      maxQueue: 100,
      timeoutMs: 30_000,
    });
    expect(loadConfig({}).admission.maxConcurrency).toBeLessThanOrEqual(4);
    const bigquery = loadConfig({ BIGQUERY_PROJECT_ID: "p", BIGQUERY_DATASET: "d" });
    expect(bigquery.admission).toMatchObject({ maxConcurrency: 32, timeoutMs: 30_000 });
    const set = loadConfig({
      ENGINE_MAX_CONCURRENCY: "3",
      ENGINE_MAX_QUEUE: "7",
      ENGINE_MAX_PER_CREDENTIAL: "2",
      DUCKDB_QUERY_TIMEOUT_MS: "500",
      SHUTDOWN_GRACE_MS: "5000",
    });
    expect(set.admission).toEqual({
      maxConcurrency: 3,
      maxQueue: 7,
      maxPerCredential: 2,
      timeoutMs: 500,
    });
    expect(set.shutdownGraceMs).toBe(5000);
  });

  it("reads the HTTP server's timeouts, connection cap and management port", () => {
    expect(loadConfig({}).http).toEqual({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 72_000,
      maxConnections: 10_000,
    });
    expect(loadConfig({}).managementPort).toBeUndefined();
    const set = loadConfig({
      HTTP_REQUEST_TIMEOUT_MS: "5000",
      HTTP_HEADERS_TIMEOUT_MS: "9000",
      HTTP_MAX_CONNECTIONS: "50",
      MANAGEMENT_PORT: "9464",
    });
    // Node refuses a headers timeout above the request's: it is held to it.
    expect(set.http).toMatchObject({
      requestTimeoutMs: 5000,
      headersTimeoutMs: 5000,
      maxConnections: 50,
    });
    expect(set.managementPort).toBe(9464);
  });

  it("keeps streams below the connection cap: half of it by default, at most 1 000", () => {
    expect(loadConfig({}).streams).toEqual({ maxOpen: 1000, maxPerAddress: 16 });
    expect(loadConfig({ HTTP_MAX_CONNECTIONS: "400" }).streams.maxOpen).toBe(200);
    expect(
      loadConfig({
        STREAMS_MAX_OPEN: "300",
        STREAMS_MAX_PER_ADDRESS: "4",
        HTTP_MAX_CONNECTIONS: "400",
      }).streams,
    ).toEqual({ maxOpen: 300, maxPerAddress: 4 });
    expect(() => loadConfig({ STREAMS_MAX_OPEN: "400", HTTP_MAX_CONNECTIONS: "400" })).toThrow(
      /^STREAMS_MAX_OPEN: expects fewer than HTTP_MAX_CONNECTIONS \(400\)/,
    );
  });

  it("shares through Redis only when REDIS_URL is set, with a password, TLS and a prefix", () => {
    expect(loadConfig({}).redis).toBeUndefined();
    const url = "rediss://:s3cret@redis.internal:6380/2";
    expect(loadConfig({ REDIS_URL: url, QUERY_ENGINE: "bigquery", ...BIGQUERY }).redis).toEqual({
      url,
      prefix: "query-service:",
      timeoutMs: 50,
    });
    const local = { REDIS_URL: "redis://127.0.0.1:6379", LOCAL_DATA: "/data/exports" };
    expect(loadConfig({ ...local, REDIS_PREFIX: "eu1:", REDIS_TIMEOUT_MS: "20" }).redis).toEqual({
      url: local.REDIS_URL,
      prefix: "eu1:",
      timeoutMs: 20,
    });
  });

  it("refuses REDIS_URL on the embedded engine without one LOCAL_DATA for every replica", () => {
    for (const env of [{}, { DEMO_DATA: "true" }, { DUCKDB_PATH: "logs.duckdb" }]) {
      expect(() => loadConfig({ REDIS_URL: "redis://127.0.0.1:6379", ...env })).toThrow(
        /^REDIS_URL: replicas sharing a cache must serve the same data; .*LOCAL_DATA/,
      );
    }
  });

  it("passes the embedded engine's memory limit, LOCAL_DATA's poll and the demo data's interval", () => {
    const env = {
      DUCKDB_MEMORY_LIMIT: "4GB",
      LOCAL_DATA_POLL_SECONDS: "5",
      DEMO_DATA_INTERVAL_SECONDS: "2",
    };
    expect(loadConfig(env).engine).toEqual({
      kind: "duckdb",
      memoryLimit: "4GB",
      localDataPollSeconds: 5,
      demoIntervalSeconds: 2,
      timeoutMs: 30_000,
    });
  });

  it("logs readable lines to a terminal and JSON lines to anything else, unless LOG_FORMAT says", () => {
    expect(loadConfig({}, true).logFormat).toBe("pretty");
    expect(loadConfig({}, false).logFormat).toBe("json");
    expect(loadConfig({}).logFormat).toBe("json");
    expect(loadConfig({ LOG_FORMAT: "json" }, true).logFormat).toBe("json");
    expect(loadConfig({ LOG_FORMAT: "pretty" }, false).logFormat).toBe("pretty");
  });

  it("treats an empty variable as unset", () => {
    expect(loadConfig({ PORT: "", QUERY_ENGINE: "" }).port).toBe(3000);
  });

  it.each([
    [{ PORT: "http" }, /^PORT: /],
    [{ PORT: "70000" }, /^PORT: /],
    [{ QUERY_ENGINE: "postgres" }, /^QUERY_ENGINE: expects bigquery or duckdb$/],
    [{ QUERY_ENGINE: "bigquery" }, /^BIGQUERY_PROJECT_ID: required/],
    [{ BIGQUERY_PROJECT_ID: "acme" }, /^BIGQUERY_DATASET: required/],
    [{ BIGQUERY_API_ENDPOINT: "localhost:9050" }, /^BIGQUERY_API_ENDPOINT: expects a URL/],
    [{ BIGQUERY_MAX_BYTES_BILLED: "1e9" }, /^BIGQUERY_MAX_BYTES_BILLED: expects a whole number/],
    [{ API_KEYS: "short" }, /^API_KEYS: each key needs at least 16 characters$/],
    [{ DEMO_DATA: "maybe" }, /^DEMO_DATA: expects true or false$/],
    [{ DUCKDB_MEMORY_LIMIT: "4" }, /^DUCKDB_MEMORY_LIMIT: expects a size such as 4GB or 512MiB$/],
    [{ LOCAL_DATA_POLL_SECONDS: "0" }, /^LOCAL_DATA_POLL_SECONDS: expects a positive number$/],
    [{ LOG_LEVEL: "verbose" }, /^LOG_LEVEL: expects one of fatal, error/],
    [{ CACHE_MAX_BYTES: "-1" }, /^CACHE_MAX_BYTES: expects a positive number$/],
    [{ REDIS_URL: "http://127.0.0.1:6379" }, /^REDIS_URL: expects redis:\/\//],
    [{ REDIS_TIMEOUT_MS: "200" }, /^REDIS_TIMEOUT_MS: expects 1 to 50 ms/],
  ])("rejects %j with one line naming the variable", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe("docs/configuration.md", () => {
  /** Each variable the table names, with the default cell it gives it (`A` / `B` cells split). */
  function documentedDefaults(): Map<string, string> {
    const page = readFileSync(join(import.meta.dirname, "../docs/configuration.md"), "utf8");
    const documented = new Map<string, string>();
    for (const row of page.split("\n").filter((line) => line.startsWith("| `"))) {
      const [names = "", defaults = ""] = row.slice(2).split(" | ");
      const variables = [...names.matchAll(/`([A-Z_]+)`/g)].map((match) => match[1] as string);
      const cells = defaults.split(" / ");
      for (const [i, variable] of variables.entries()) {
        documented.set(
          variable,
          cells.length === variables.length ? (cells[i] as string) : defaults,
        );
      }
    }
    return documented;
  }

  it("gives every setting's default as the config schema does, the one place it is written", () => {
    const documented = documentedDefaults();
    const defaults = Object.entries(settingDefaults());
    expect(defaults.length).toBeGreaterThan(20);
    for (const [variable, value] of defaults) {
      expect(documented.get(variable), variable).toContain(`\`${value}\``);
    }
  });
});

describe("nearMisses", () => {
  it.each([
    ["API_KEY", "API_KEYS"],
    ["API_KEYS_FIL", "API_KEYS_FILE"],
    ["REDIS_URI", "REDIS_URL"],
    ["LOG_LEVL", "LOG_LEVEL"],
    ["JWT_PUBLIC_KEY_FILE", "JWT_PUBLIC_KEYS_FILE"],
    ["CACHE_MAX_ENTRY", "CACHE_MAX_ENTRIES"],
    ["STREAM_MAX_OPEN", "STREAMS_MAX_OPEN"],
    ["api_keys", "API_KEYS"],
  ])("names %s and the setting it nearly spells, %s", (name, setting) => {
    expect(nearMisses({ [name]: "a-value-never-repeated" })).toEqual([
      `${name} is not a setting of this service and does nothing: did you mean ${setting}?`,
    ]);
  });

  it("says nothing of settings, of other programs' variables, or of names far from every setting", () => {
    const env = {
      API_KEYS: "k".repeat(16),
      LOG_LEVEL: "info",
      PATH: "/usr/bin",
      HOME: "/root",
      HOSTNAME: "box",
      LOGNAME: "root",
      HTTP_PROXY: "http://proxy:3128",
      NODE_ENV: "production",
      REDIS_HOST: "cache",
      REDIS_PORT: "tcp://10.0.0.2:6379",
      OTEL_SERVICE_NAME: "query",
    };
    expect(nearMisses(env)).toEqual([]);
  });
});
