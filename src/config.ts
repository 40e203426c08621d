// The environment, read once into a typed config. A bad setting stops startup with one line
// naming the variable and what it expects.
import { isIP } from "node:net";
import { availableParallelism } from "node:os";
import { delimiter, resolve } from "node:path";
import { z } from "zod";
import type { AdmissionOptions } from "./engines/admission.ts";
import type { BigQuerySettings, DuckDbSettings } from "./engines/open-engine.ts";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

const flag = z
  .enum(["true", "false", "1", "0", "on", "off"], { error: "expects true or false" })
  .transform((value) => ["true", "1", "on"].includes(value));

const wholePositive = z.coerce
  .number({ error: "expects a whole number" })
  .int("expects a whole number")
  .positive("expects a positive number");
const positiveInt = (fallback: number) => wholePositive.default(fallback);

const text = z.string().trim().min(1, "must not be empty");

const commaSeparated = z.string().transform((value) =>
  value
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean),
);

/** An IPv4 or IPv6 address, or a CIDR range of them: what proxy-addr (Fastify's trustProxy) takes. */
function isAddressOrRange(entry: string): boolean {
  const [address = "", prefix, ...rest] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || rest.length > 0 || address.includes("%")) return false;
  return (
    prefix === undefined ||
    (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128))
  );
}

const environment = z.object({
  PORT: z.coerce
    .number({ error: "expects a port number" })
    .int()
    .min(0)
    .max(65535, "expects a port number (0-65535)")
    .default(3000),
  HOST: text.default("127.0.0.1"),
  API_KEYS: commaSeparated
    .pipe(
      z
        .array(z.string().min(16, "each key needs at least 16 characters"))
        .min(1, "holds no key; list keys separated by commas, or leave it unset"),
    )
    .optional(),
  API_KEYS_FILE: text.optional(),
  ALERT_RULES_FILE: text.optional(),
  ENDPOINTS_DIR: text.optional(),
  JWT_SECRET: z
    .string()
    .refine((secret) => Buffer.byteLength(secret) >= 32, "needs at least 32 bytes")
    .optional(),
  JWT_PUBLIC_KEYS_FILE: text.optional(),
  JWT_MAX_LIFETIME_SECONDS: positiveInt(86_400),
  JWT_AUDIENCE: text.optional(),
  JWT_ISSUER: text.optional(),
  AUTH_FAILURES_PER_MINUTE: positiveInt(30),
  TRUST_PROXY: commaSeparated
    .pipe(
      z
        .array(
          z.string().refine(isAddressOrRange, {
            error: (issue) =>
              `${JSON.stringify(issue.input)} is not an address or CIDR range (such as 10.0.0.0/8 or fd00::/8)`,
          }),
        )
        .min(1, "holds no address; list proxy addresses or CIDR ranges separated by commas"),
    )
    .optional(),
  ANONYMOUS_RATE_LIMIT_PER_MINUTE: positiveInt(120),
  ENGINE_MAX_CONCURRENCY: wholePositive.optional(),
  ENGINE_MAX_QUEUE: positiveInt(100),
  ENGINE_MAX_PER_CREDENTIAL: wholePositive.optional(),
  SHUTDOWN_GRACE_MS: positiveInt(25_000),
  HTTP_REQUEST_TIMEOUT_MS: positiveInt(30_000),
  HTTP_HEADERS_TIMEOUT_MS: positiveInt(10_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInt(72_000),
  HTTP_MAX_CONNECTIONS: positiveInt(10_000),
  MANAGEMENT_PORT: z.coerce
    .number({ error: "expects a port number" })
    .int()
    .min(0)
    .max(65535, "expects a port number (0-65535)")
    .optional(),
  QUERY_ENGINE: z.enum(["bigquery", "duckdb"], { error: "expects bigquery or duckdb" }).optional(),
  BIGQUERY_PROJECT_ID: text.optional(),
  BIGQUERY_DATASET: text.optional(),
  BIGQUERY_LOCATION: text.optional(),
  BIGQUERY_API_ENDPOINT: z
    .url({ protocol: /^https?$/, error: "expects a URL such as http://127.0.0.1:9050" })
    .optional(),
  BIGQUERY_JOB_TIMEOUT_MS: positiveInt(30_000),
  BIGQUERY_MAX_BYTES_BILLED: z
    .string()
    .regex(/^\d+$/, "expects a whole number of bytes")
    .optional(),
  DUCKDB_PATH: text.optional(),
  DUCKDB_QUERY_TIMEOUT_MS: positiveInt(30_000),
  DUCKDB_MEMORY_LIMIT: z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i, "expects a size such as 4GB or 512MiB")
    .optional(),
  LOCAL_DATA: text.optional(),
  LOCAL_DATA_POLL_SECONDS: wholePositive.optional(),
  DEMO_DATA: flag.optional(),
  DEMO_DATA_INTERVAL_SECONDS: wholePositive.optional(),
  CACHE_MAX_ENTRIES: positiveInt(10_000),
  CACHE_MAX_BYTES: positiveInt(64 * 1024 * 1024),
  CACHE_MAX_WARM_KEYS: positiveInt(1000),
  CACHE_FORCED_REFRESH_PER_MINUTE: z.coerce
    .number({ error: "expects a whole number" })
    .int("expects a whole number")
    .min(0, "expects 0 or more")
    .default(6),
  RATE_LIMIT_PER_MINUTE: positiveInt(600),
  LOGS_FOLLOW_INTERVAL_SECONDS: positiveInt(5),
  LOGS_FOLLOW_LAG_SECONDS: positiveInt(60),
  LOGS_FOLLOW_MAX_PER_CREDENTIAL: positiveInt(4),
  STREAMS_MAX_OPEN: wholePositive.optional(),
  STREAMS_MAX_PER_ADDRESS: positiveInt(16),
  METRICS_MAX_CREDENTIALS: positiveInt(200),
  REDIS_URL: z
    .url({
      protocol: /^rediss?$/,
      error: "expects redis://[:password@]host[:port][/db] or rediss:// for TLS",
    })
    .optional(),
  REDIS_PREFIX: text.default("query-service:"),
  REDIS_TIMEOUT_MS: z.coerce
    .number({ error: "expects a whole number of milliseconds" })
    .int("expects a whole number of milliseconds")
    .min(1, "expects 1 to 50 ms")
    .max(50, "expects 1 to 50 ms: a slower Redis must not hold up cached answers")
    .default(50),
  CURSOR_SECRET: z.string().min(32, "needs at least 32 characters").optional(),
  CURSOR_SECRET_FILE: text.default(".state/cursor-secret"),
  PID_FILE: text.default(".state/service.pid"),
  LOG_FORMAT: z.enum(["json", "pretty"], { error: "expects json or pretty" }).optional(),
  LOG_LEVEL: z
    .enum(LOG_LEVELS, { error: `expects one of ${LOG_LEVELS.join(", ")}` })
    .default("info"),
});

/** How signed access tokens (JWT) are verified. */
export interface TokenOptions {
  /** HS256 secret, at least 32 bytes. */
  secret?: string;
  /** PEM public keys or a JWKS (ES256 P-256, RS256, EdDSA Ed25519). */
  publicKeysFile?: string;
  maxLifetimeSeconds: number;
  audience?: string;
  issuer?: string;
}

export interface AuthSettings {
  /** Full-access keys; startup generates one when no credential source is configured. */
  apiKeys: string[];
  keysFile?: string;
  /** Absent unless JWT_SECRET or JWT_PUBLIC_KEYS_FILE is set. */
  tokens?: TokenOptions;
  failuresPerMinute: number;
}

export interface FollowSettings {
  /** How often a feed asks the engine for new records. */
  intervalMs: number;
  /** How much older than the newest record sent a late record may be and still be sent. */
  lagMs: number;
  maxPerCredential: number;
}

export interface StreamSettings {
  /** Open streams in this process at most, below its connection cap. */
  maxOpen: number;
  /** Open streams per client address at most, across replicas while Redis answers. */
  maxPerAddress: number;
}

export interface HttpSettings {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
}

export interface RedisSettings {
  /** Holds the password, if any: never log it. */
  url: string;
  prefix: string;
  timeoutMs: number;
}

export interface Config {
  port: number;
  host: string;
  auth: AuthSettings;
  /** maxPerCredential absent: the service's default share (service.ts). */
  admission: Omit<AdmissionOptions, "maxPerCredential"> & { maxPerCredential?: number };
  shutdownGraceMs: number;
  http: HttpSettings;
  /** A second listener for /health, /ready and /metrics; absent: none. */
  managementPort?: number;
  engine: BigQuerySettings | DuckDbSettings;
  cache: { maxEntries: number; maxBytes: number; maxWarmKeys: number };
  rateLimitPerMinute: number;
  /** Requests a minute per client address to the pages and documents served without a credential. */
  anonymousRateLimitPerMinute: number;
  /** Proxies whose X-Forwarded-For names the client (addresses, CIDR ranges); absent: none. */
  trustProxy?: string[];
  /** Recomputations one credential may force a minute (Cache-Control on a request). */
  forcedRefreshPerMinute: number;
  follow: FollowSettings;
  streams: StreamSettings;
  /** Distinct credential labels per process on metrics, job labels and spans; the rest are `other`. */
  metricsMaxCredentials: number;
  /** Shared cache, lock, leases and rate limit across replicas (REDIS_URL); absent: this process only. */
  redis?: RedisSettings;
  /** Signs page cursors and event ids; absent: the one kept in cursorSecretFile. Never log it. */
  cursorSecret?: string;
  /** Where the secret generated without CURSOR_SECRET is kept (absolute), read again at restart. */
  cursorSecretFile: string;
  /** Where the process writes its id (absolute), for `kill -HUP`; removed at exit. */
  pidFile: string;
  /** Alert rules (ALERT_RULES_FILE); absent: none. */
  alertRulesFile?: string;
  /** Folders of operators' endpoints (ENDPOINTS_DIR), served beside the built-in ones. */
  endpointsDirs: string[];
  logLevel: (typeof LOG_LEVELS)[number];
  /** JSON lines (production, a pipe), or pino-pretty's readable lines (a terminal, `npm run dev`). */
  logFormat: "json" | "pretty";
}

/** Each setting's default, as the schema gives it to an unset variable; settings without one left out. */
export function settingDefaults(): Record<string, unknown> {
  const defaults = Object.entries(environment.parse({}));
  return Object.fromEntries(defaults.filter(([, value]) => value !== undefined));
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Settings to change from the defaults; a nested group is changed field by field. */
export type ConfigOverrides = {
  [K in keyof Config]?: Config[K] extends readonly unknown[] | undefined
    ? Config[K]
    : Config[K] extends object
      ? Partial<Config[K]>
      : Config[K];
};

/** The config an empty environment gives (the schema's defaults), with `overrides` applied. */
export function configFrom(overrides: ConfigOverrides = {}): Config {
  const merged: Record<string, unknown> = { ...loadConfig({}) };
  for (const [name, value] of Object.entries(overrides)) {
    const base = merged[name];
    const group = typeof value === "object" && !Array.isArray(value) && typeof base === "object";
    merged[name] = group ? { ...base, ...value } : value;
  }
  return merged as unknown as Config;
}

/** `stdoutIsTerminal`: a person reads the log, so it is readable lines unless LOG_FORMAT says. */
export function loadConfig(env: NodeJS.ProcessEnv, stdoutIsTerminal = false): Config {
  // An empty variable counts as unset, as in most shells' `VAR= command`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = environment.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`${String(issue?.path[0])}: ${issue?.message}`);
  }
  const e = parsed.data;
  const engine = engineSettings(e);
  // Replicas that share values must compute them from the same data: demo logs are generated per
  // process (each replica's differ) and a DUCKDB_PATH file is per replica.
  if (e.REDIS_URL !== undefined && engine.kind === "duckdb" && engine.localData === undefined) {
    throw new ConfigError(
      "REDIS_URL: replicas sharing a cache must serve the same data; on the embedded engine set LOCAL_DATA to one folder of exports every replica reads (demo data and database files differ per replica)",
    );
  }
  return {
    port: e.PORT,
    host: e.HOST,
    alertRulesFile: e.ALERT_RULES_FILE,
    endpointsDirs: endpointsDirsOf(e.ENDPOINTS_DIR),
    auth: {
      apiKeys: e.API_KEYS ?? [],
      keysFile: e.API_KEYS_FILE,
      tokens:
        e.JWT_SECRET || e.JWT_PUBLIC_KEYS_FILE
          ? {
              secret: e.JWT_SECRET,
              publicKeysFile: e.JWT_PUBLIC_KEYS_FILE,
              maxLifetimeSeconds: e.JWT_MAX_LIFETIME_SECONDS,
              audience: e.JWT_AUDIENCE,
              issuer: e.JWT_ISSUER,
            }
          : undefined,
      failuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    },
    engine,
    admission: {
      maxConcurrency: e.ENGINE_MAX_CONCURRENCY ?? defaultConcurrency(engine.kind),
      maxQueue: e.ENGINE_MAX_QUEUE,
      ...(e.ENGINE_MAX_PER_CREDENTIAL !== undefined && {
        maxPerCredential: e.ENGINE_MAX_PER_CREDENTIAL,
      }),
      timeoutMs: engine.kind === "duckdb" ? engine.timeoutMs : engine.jobTimeoutMs,
    },
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    http: {
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      // Node refuses a headers timeout longer than the request's.
      headersTimeoutMs: Math.min(e.HTTP_HEADERS_TIMEOUT_MS, e.HTTP_REQUEST_TIMEOUT_MS),
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
    },
    managementPort: e.MANAGEMENT_PORT,
    cache: {
      maxEntries: e.CACHE_MAX_ENTRIES,
      maxBytes: e.CACHE_MAX_BYTES,
      maxWarmKeys: e.CACHE_MAX_WARM_KEYS,
    },
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    anonymousRateLimitPerMinute: e.ANONYMOUS_RATE_LIMIT_PER_MINUTE,
    trustProxy: e.TRUST_PROXY,
    forcedRefreshPerMinute: e.CACHE_FORCED_REFRESH_PER_MINUTE,
    follow: {
      intervalMs: e.LOGS_FOLLOW_INTERVAL_SECONDS * 1000,
      lagMs: e.LOGS_FOLLOW_LAG_SECONDS * 1000,
      maxPerCredential: e.LOGS_FOLLOW_MAX_PER_CREDENTIAL,
    },
    streams: streamSettings(e),
    metricsMaxCredentials: e.METRICS_MAX_CREDENTIALS,
    ...(e.REDIS_URL !== undefined && {
      redis: { url: e.REDIS_URL, prefix: e.REDIS_PREFIX, timeoutMs: e.REDIS_TIMEOUT_MS },
    }),
    cursorSecret: e.CURSOR_SECRET,
    cursorSecretFile: resolve(e.CURSOR_SECRET_FILE),
    pidFile: resolve(e.PID_FILE),
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT ?? (stdoutIsTerminal ? "pretty" : "json"),
  };
}

/**
 * ENDPOINTS_DIR's folders, absolute: separated as PATH is (":"), so a folder's name may hold a
 * comma. The service and `npm run key` / `npm run token` read it alike.
 */
export function endpointsDirsOf(value: string | undefined): string[] {
  return (value ?? "")
    .split(delimiter)
    .filter((dir) => dir.trim() !== "")
    .map((dir) => resolve(dir));
}

/** Half the connection cap, at most 1 000: the rest stay for /health and ordinary queries. */
const defaultMaxStreams = (maxConnections: number) =>
  Math.max(1, Math.min(1000, Math.floor(maxConnections / 2)));

/** Streams stay below the connection cap: /health and ordinary queries keep connections of their own. */
function streamSettings(e: z.infer<typeof environment>): StreamSettings {
  const maxOpen = e.STREAMS_MAX_OPEN ?? defaultMaxStreams(e.HTTP_MAX_CONNECTIONS);
  if (maxOpen >= e.HTTP_MAX_CONNECTIONS) {
    throw new ConfigError(
      `STREAMS_MAX_OPEN: expects fewer than HTTP_MAX_CONNECTIONS (${e.HTTP_MAX_CONNECTIONS}), so that streams never take every connection`,
    );
  }
  return { maxOpen, maxPerAddress: e.STREAMS_MAX_PER_ADDRESS };
}

/**
 * DuckDB: one query per core, and no more than libuv's thread pool, whose threads its queries
 * occupy (a query waiting for a thread cannot be interrupted). BigQuery: the work is remote.
 */
function defaultConcurrency(kind: "bigquery" | "duckdb"): number {
  if (kind === "bigquery") return 32;
  return Math.min(availableParallelism(), Number(process.env.UV_THREADPOOL_SIZE ?? 4));
}

function engineSettings(e: z.infer<typeof environment>): Config["engine"] {
  const kind = e.QUERY_ENGINE ?? (e.BIGQUERY_PROJECT_ID ? "bigquery" : "duckdb");
  if (kind === "duckdb") {
    return {
      kind,
      path: e.DUCKDB_PATH,
      memoryLimit: e.DUCKDB_MEMORY_LIMIT,
      localData: e.LOCAL_DATA,
      localDataPollSeconds: e.LOCAL_DATA_POLL_SECONDS,
      demoData: e.DEMO_DATA,
      demoIntervalSeconds: e.DEMO_DATA_INTERVAL_SECONDS,
      timeoutMs: e.DUCKDB_QUERY_TIMEOUT_MS,
    };
  }
  if (!e.BIGQUERY_PROJECT_ID)
    throw new ConfigError("BIGQUERY_PROJECT_ID: required for the bigquery engine");
  if (!e.BIGQUERY_DATASET) {
    throw new ConfigError(
      "BIGQUERY_DATASET: required for the bigquery engine (the dataset holding edge_logs)",
    );
  }
  return {
    kind,
    projectId: e.BIGQUERY_PROJECT_ID,
    dataset: e.BIGQUERY_DATASET,
    location: e.BIGQUERY_LOCATION,
    apiEndpoint: e.BIGQUERY_API_ENDPOINT,
    jobTimeoutMs: e.BIGQUERY_JOB_TIMEOUT_MS,
    maximumBytesBilled: e.BIGQUERY_MAX_BYTES_BILLED,
  };
}

// ---------------------------------------------------------------------------------------------
// Near misses: a variable that nearly spells a setting does nothing, silently, unless told.

const SETTINGS = Object.keys(environment.shape);

/** A name with each word's plural ending dropped, so that API_KEY and API_KEYS compare equal. */
function singular(name: string): string {
  return name
    .split("_")
    .map((word) => word.replace(/IES$/, "Y").replace(/S$/, ""))
    .join("_");
}

const SETTING_PREFIXES = new Set(SETTINGS.map((name) => singular(name.split("_")[0] ?? "")));

/** Levenshtein distance, or `limit + 1` as soon as it is known to exceed `limit`. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    if (Math.min(...current) > limit) return limit + 1;
    previous = current;
  }
  return previous[b.length] ?? limit + 1;
}

/**
 * One warning per variable that is not a setting but nearly spells one: two edits or fewer, or
 * singular for plural (API_KEY for API_KEYS, REDIS_URI for REDIS_URL), in any case. Only names
 * that begin as a setting does are looked at, so PATH, HOME and the like never are. Names only:
 * never a value.
 */
export function nearMisses(env: NodeJS.ProcessEnv): string[] {
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    const upper = name.toUpperCase();
    if (SETTINGS.includes(name) || !SETTING_PREFIXES.has(singular(upper.split("_")[0] ?? ""))) {
      continue;
    }
    const meant = SETTINGS.map((setting) => ({
      setting,
      distance: singular(setting) === singular(upper) ? 0 : editDistance(upper, setting, 2),
    }))
      .filter(({ distance }) => distance <= 2)
      .sort((a, b) => a.distance - b.distance)[0];
    if (meant) {
      warnings.push(
        `${name} is not a setting of this service and does nothing: did you mean ${meant.setting}?`,
      );
    }
  }
  return warnings;
}
