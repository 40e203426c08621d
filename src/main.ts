// Process entry: config → engine → app → listen; closes gracefully on SIGTERM/SIGINT.
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import closeWithGrace from "close-with-grace";
import { pino } from "pino";
import { buildApp } from "./app.ts";
import { ConfigError, loadConfig } from "./config.ts";
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

let apiKeys = config.apiKeys;
if (apiKeys.length === 0) {
  apiKeys = [randomBytes(24).toString("base64url")];
  // Printed once, outside the log stream: keys never appear in logs.
  process.stderr.write(
    `\nNo API_KEYS set; this process accepts the generated key:\n\n  X-API-KEY: ${apiKeys[0]}\n\n`,
  );
  log.info("generated an API key for this process (printed above, once)");
}

const engine = await openEngine(config.engine, log).catch((error: Error) => {
  // A bad data file or an unreachable engine: one line saying which, then stop.
  process.stderr.write(`Startup error: ${error.message}\n`);
  process.exit(1);
});
const app = await buildApp({
  engine,
  apiKeys,
  cache: config.cache,
  rateLimitPerMinute: config.rateLimitPerMinute,
  logger: log,
});

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) log.error({ err }, "closing after an uncaught error");
  else log.info({ signal }, "closing");
  await app.close();
  await engine.close();
});

await app.listen({ port: config.port, host: config.host }).catch(cannotListen);
