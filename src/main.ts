// Process entry: config → engine → app → listen; closes gracefully on SIGTERM/SIGINT; SIGHUP
// reads the endpoint folders, API_KEYS_FILE and ALERT_RULES_FILE again, as one snapshot.
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import closeWithGrace from "close-with-grace";
import { openAlertRules } from "./alerts/rules-source.ts";
import { buildApp } from "./app.ts";
import { type Config, ConfigError, loadConfig, nearMisses } from "./config.ts";
import { KeysFile } from "./credentials/keys-file.ts";
import { createTokenVerifier } from "./credentials/tokens.ts";
import { keptCursorSecret } from "./cursor-secret-file.ts";
import { LiveCatalog } from "./endpoints/catalog.ts";
import { BUILT_IN_ENDPOINTS, loadCatalog } from "./endpoints/load-catalog.ts";
import { loadServedCatalog } from "./endpoints/served-catalog.ts";
import { openEngine } from "./engines/open-engine.ts";
import { buildManagementApp } from "./http/management.ts";
import { createLogger } from "./logger.ts";
import { writePidFile } from "./pid-file.ts";
import { RedisLink } from "./redis/link.ts";
import { createService } from "./service.ts";
import { SettingsReload } from "./settings-reload.ts";
import { credentialLabels } from "./telemetry/attribution.ts";
import { startTracing } from "./telemetry/tracing.ts";

function readConfig() {
  try {
    return loadConfig(process.env, process.stdout.isTTY === true);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

/** One line naming the setting when a listen address cannot be had, then stop. */
function cannotListen(variable: "PORT" | "MANAGEMENT_PORT", port: number) {
  return (error: NodeJS.ErrnoException): never => {
    const address = `${config.host}:${port}`;
    const reason =
      error.code === "EADDRINUSE"
        ? `${variable}: ${address} is already in use`
        : error.code === "EADDRNOTAVAIL" || error.code === "ENOTFOUND"
          ? `HOST: ${config.host} is not an address of this machine`
          : `${variable}: cannot listen on ${address} (${error.code ?? error.message})`;
    process.stderr.write(`Configuration error: ${reason}\n`);
    process.exit(1);
  };
}

/** Claims a listen address for a moment, so a taken port stops startup before any key or data. */
async function checkListenAddress(variable: "PORT" | "MANAGEMENT_PORT", port: number) {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", reject).listen(port, config.host, resolve);
  }).catch(cannotListen(variable, port));
  await new Promise((resolve) => probe.close(resolve));
}

const config = readConfig();
await checkListenAddress("PORT", config.port);
if (config.managementPort !== undefined) {
  await checkListenAddress("MANAGEMENT_PORT", config.managementPort);
}
const log = createLogger(config);
for (const warning of nearMisses(process.env)) log.warn(warning);

/**
 * The endpoint catalog, the keys file, token keys, alert rules (the last three checked against the
 * catalog) and the kept cursor secret, read now: a bad one stops startup naming what is wrong.
 */
function openSettingsFiles({
  auth,
  alertRulesFile,
  cursorSecret,
  cursorSecretFile,
  endpointsDirs,
}: Config) {
  try {
    // Checked by the engine once it is open (below), and then served as that check leaves it.
    const catalog = new LiveCatalog(loadCatalog([BUILT_IN_ENDPOINTS, ...endpointsDirs]));
    return {
      catalog,
      keysFile: auth.keysFile === undefined ? undefined : new KeysFile(auth.keysFile, catalog),
      tokens: auth.tokens && createTokenVerifier(auth.tokens, catalog),
      alertRules:
        alertRulesFile === undefined ? undefined : openAlertRules(alertRulesFile, catalog),
      // Without CURSOR_SECRET, one generated once: cursors made before a restart stay good after it.
      cursors:
        cursorSecret === undefined
          ? keptCursorSecret(cursorSecretFile)
          : { secret: cursorSecret, created: false },
    };
  } catch (error) {
    process.stderr.write(`Configuration error: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

const { catalog, keysFile, tokens, alertRules, cursors } = openSettingsFiles(config);
if (cursors.created) {
  log.info(
    { file: config.cursorSecretFile },
    "generated the secret that signs page cursors and event ids, kept for the next start",
  );
}
let apiKeys = config.auth.apiKeys;
if (apiKeys.length === 0 && !keysFile && !tokens) {
  apiKeys = [randomBytes(24).toString("base64url")];
  // Printed once, outside the log stream: keys never appear in logs.
  process.stderr.write(
    `\nNo API_KEYS set; this process accepts the generated key:\n\n  X-API-KEY: ${apiKeys[0]}\n\n`,
  );
  log.info("generated an API key for this process (printed above, once)");
}
for (const warning of [...(keysFile?.warnings ?? []), ...(alertRules?.warnings ?? [])]) {
  log.warn(warning);
}

// Before the app: Fastify's instrumentation hooks every instance created after it.
const stopTracing = await startTracing();
credentialLabels.max = config.metricsMaxCredentials;

const engine = await openEngine(config.engine, log).catch((error: Error) => {
  // A bad data file or an unreachable engine: one line saying which, then stop.
  process.stderr.write(`Startup error: ${error.message}\n`);
  process.exit(1);
});
try {
  const served = await loadServedCatalog(config.endpointsDirs, engine);
  for (const line of served.notServed) log.warn(line);
  catalog.replace(served.catalog);
} catch (error) {
  // An operator's SQL the engine refuses: one line per file, then stop.
  process.stderr.write(`Configuration error: ${(error as Error).message}\n`);
  process.exit(1);
}

// The endpoint folders and both files, read again together on SIGHUP or when a file changes.
const reload = new SettingsReload({
  catalog,
  loadEndpoints: () => loadServedCatalog(config.endpointsDirs, engine),
  keysFile,
  alertRules,
  log,
});
reload.watch();
// For the life of the process, so a SIGHUP never stops it (closeWithGrace skips SIGHUP below).
process.on("SIGHUP", () => void reload.reload("SIGHUP"));
try {
  writePidFile(config.pidFile);
} catch (error) {
  process.stderr.write(`Configuration error: ${(error as Error).message}\n`);
  process.exit(1);
}

/** On the embedded engine, the identity of the exports loaded: replicas share values only with it. */
async function dataIdentity(): Promise<string | undefined> {
  if (config.engine.kind !== "duckdb" || config.engine.localData === undefined) return undefined;
  const { exportsIdentity } = await import("./cache/data-identity.ts");
  return exportsIdentity(config.engine.localData);
}

// Connects in the background: until Redis answers, this replica works alone (logged once).
const redis = config.redis && new RedisLink({ ...config.redis, logger: log });
if (redis && config.cursorSecret === undefined) {
  log.warn(
    { file: config.cursorSecretFile },
    "CURSOR_SECRET is not set: this replica signs page cursors and event ids with the secret in its CURSOR_SECRET_FILE, which replicas on other machines do not have, so they refuse them; give every replica the same CURSOR_SECRET",
  );
}
// The key generated above, and the secret kept in CURSOR_SECRET_FILE when CURSOR_SECRET is unset.
const settings = { ...config, auth: { ...config.auth, apiKeys }, cursorSecret: cursors.secret };
const service = createService(
  settings,
  {
    engine,
    catalog,
    cache: {},
    redis,
    dataIdentity: redis && (await dataIdentity()),
    // A kept result holds this dataset's rows: another deployment's cursor is read by its position.
    deployment:
      config.engine.kind === "bigquery"
        ? `${config.engine.projectId}.${config.engine.dataset}`
        : undefined,
    alertRules,
  },
  log,
);
const app = await buildApp(service, settings, {
  keysFile,
  tokens,
  pressure: {},
  reloads: reload.counts,
  logger: log,
});

const management =
  config.managementPort === undefined
    ? undefined
    : await buildManagementApp({ engine, registry: app.metricsRegistry, logger: log });

closeWithGrace({ delay: config.shutdownGraceMs, skip: ["SIGHUP"] }, async ({ signal, err }) => {
  if (err) log.error({ err }, "closing after an uncaught error");
  else log.info({ signal }, "closing");
  reload.close();
  await app.close();
  await management?.close();
  await redis?.close();
  await engine.close();
  await stopTracing?.();
});

await management
  ?.listen({ port: config.managementPort, host: config.host })
  .catch(cannotListen("MANAGEMENT_PORT", config.managementPort ?? 0));
await app.listen({ port: config.port, host: config.host }).catch(cannotListen("PORT", config.port));
