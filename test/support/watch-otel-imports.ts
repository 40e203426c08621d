// Preloaded with --import: writes "imported <package>" to stderr whenever the service imports the
// OpenTelemetry SDK or Fastify's instrumentation, so a test can tell whether they were loaded.
import { registerHooks } from "node:module";

const WATCHED = /^(@opentelemetry\/sdk-[\w-]+|@fastify\/otel)$/;

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (WATCHED.test(specifier)) process.stderr.write(`imported ${specifier}\n`);
    return nextResolve(specifier, context);
  },
});
