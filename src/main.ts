// Process entry: config → engine → app → listen; closes gracefully on SIGTERM/SIGINT.
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import closeWithGrace from "close-with-grace";
import { pino } from "pino";
import { buildApp } from "./app.ts";
import { type AuthSettings, ConfigError, loadConfig } from "./config.ts";
import { KeysFile } from "./credentials/keys-file.ts";
import { createTokenVerifier } from "./credentials/tokens.ts";
import { openEngine } from "./engines/open-engine.ts";

function readConfig() {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

/** One line naming the setting when the listen address cannot be had, then stop. */
function cannotListen(error: NodeJS.ErrnoException): never {
  const address = `${config.host}:${config.port}`;
  const reason =
    error.code === "EADDRINUSE"
      ? `PORT: ${address} is already in use`
      : error.code === "EADDRNOTAVAIL" || error.code === "ENOTFOUND"
        ? `HOST: ${config.host} is not an address of this machine`
        : `PORT: cannot listen on ${address} (${error.code ?? error.message})`;
  process.stderr.write(`Configuration error: ${reason}\n`);
  process.exit(1);
}

/** Claims the listen address for a moment, so a taken port stops startup before any key or data. */
async function checkListenAddress(): Promise<void> {
  if (config.port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", reject).listen(config.port, config.host, resolve);
  }).catch(cannotListen);
  await new Promise((resolve) => probe.close(resolve));
}

const config = readConfig();
await checkListenAddress();
const log = pino({ level: config.logLevel });

/** The keys file and token keys, read now: a bad one stops startup with one line naming it. */
function openCredentialSources(auth: AuthSettings) {
  try {
    return {
      keysFile: auth.keysFile === undefined ? undefined : new KeysFile(auth.keysFile),
      tokens: auth.tokens && createTokenVerifier(auth.tokens),
    };
  } catch (error) {
    process.stderr.write(`Configuration error: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

const { keysFile, tokens } = openCredentialSources(config.auth);
let apiKeys = config.auth.apiKeys;
if (apiKeys.length === 0 && !keysFile && !tokens) {
  apiKeys = [randomBytes(24).toString("base64url")];
  // Printed once, outside the log stream: keys never appear in logs.
  process.stderr.write(
    `\nNo API_KEYS set; this process accepts the generated key:\n\n  X-API-KEY: ${apiKeys[0]}\n\n`,
  );
  log.info("generated an API key for this process (printed above, once)");
}
keysFile?.watch(log);

const engine = await openEngine(config.engine, log).catch((error: Error) => {
  // A bad data file or an unreachable engine: one line saying which, then stop.
  process.stderr.write(`Startup error: ${error.message}\n`);
  process.exit(1);
});
const app = await buildApp({
  engine,
  apiKeys,
  keysFile,
  tokens,
  authFailuresPerMinute: config.auth.failuresPerMinute,
  admission: config.admission,
  shutdownGraceMs: config.shutdownGraceMs,
  cache: config.cache,
  rateLimitPerMinute: config.rateLimitPerMinute,
  logger: log,
});

closeWithGrace({ delay: config.shutdownGraceMs }, async ({ signal, err }) => {
  if (err) log.error({ err }, "closing after an uncaught error");
  else log.info({ signal }, "closing");
  keysFile?.close();
  await app.close();
  await engine.close();
});

await app.listen({ port: config.port, host: config.host }).catch(cannotListen);
