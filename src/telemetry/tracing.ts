// OpenTelemetry traces when the standard variables ask for them. The SDK and Fastify's official
// instrumentation are imported only then: a service without a collector loads neither.
import { type Attributes, type Span, SpanStatusCode, trace } from "@opentelemetry/api";
import type { FastifyRequest } from "fastify";
import { credentialLabels } from "./attribution.ts";

let tracing = false;

const PROBES = new Set(["/health", "/ready", "/metrics"]);

/** Whether spans are being recorded and exported (so that work for them is worth doing). */
export const isTracing = (): boolean => tracing;

/**
 * Starts the SDK when OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) is set, configured by the
 * standard OTEL_* variables; returns its shutdown, which flushes spans not yet exported.
 */
export async function startTracing(
  env: NodeJS.ProcessEnv = process.env,
): Promise<(() => Promise<void>) | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  // Traces only: metrics are /metrics' job and logs pino's, unless asked for explicitly.
  env.OTEL_METRICS_EXPORTER ??= "none";
  env.OTEL_LOGS_EXPORTER ??= "none";
  env.OTEL_SERVICE_NAME ??= "log-usage-query-service";
  const [{ NodeSDK }, { FastifyOtelInstrumentation }] = await Promise.all([
    import("@opentelemetry/sdk-node"),
    import("@fastify/otel"),
  ]);
  const sdk = new NodeSDK({
    instrumentations: [
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        // One server span per request, the cache lookup and engine queries its children: a span per
        // hook and one for the handler would cost every cached hit and tell an operator little.
        instrumentHooks: false,
        instrumentHandler: false,
        // Probes and scrapes every few seconds would bury the requests.
        ignorePaths: ({ url }) => PROBES.has(url),
        // The instrumentation records the URL with its query string: parameter values stay out.
        requestHook: (span, request) => span.setAttribute("url.path", pathOf(request.url)),
      }),
    ],
  });
  sdk.start();
  tracing = true;
  return async () => {
    tracing = false;
    await sdk.shutdown();
  };
}

/** Names the endpoint and the credential's label on the request's server span, when tracing. */
export function annotateRequestSpan(request: FastifyRequest, endpoint: string): void {
  if (!tracing) return;
  const context = (request as { opentelemetry?: () => { span?: Span } }).opentelemetry?.();
  context?.span?.setAttributes({
    "query_service.endpoint": endpoint,
    "query_service.credential": credentialLabels.of(request.credential.name),
  });
}

function pathOf(url: string): string {
  const queryAt = url.indexOf("?");
  return queryAt === -1 ? url : url.slice(0, queryAt);
}

const tracer = trace.getTracer("log-usage-query-service");

/**
 * Runs `work` in a span (a child of the active one, or a trace of its own with `root`) when tracing;
 * `describe` adds attributes from its result. Without tracing it only runs `work`.
 */
// Not async itself: without tracing, a cached hit gets `work`'s promise with no wrapper around it.
export function inSpan<T>(
  name: string,
  options: { attributes: Attributes; root?: boolean },
  work: () => Promise<T>,
  describe?: (result: T) => Attributes,
): Promise<T> {
  if (!tracing) return work();
  return tracer.startActiveSpan(name, options, async (span) => {
    try {
      const result = await work();
      if (describe) span.setAttributes(describe(result));
      return result;
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).name });
      throw error;
    } finally {
      span.end();
    }
  });
}
