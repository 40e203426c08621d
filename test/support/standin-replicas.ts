// Replicas of the service behind one (simulated) load balancer: each its own app, cache, gate and
// Redis connection, all on one BigQuery stand-in (so they serve the same data) and one Redis
// namespace of their own, their engine queries counted together. Closed after the test.
import type { FastifyInstance } from "fastify";
import { afterEach, expect, inject } from "vitest";
import { type AppDeps, serviceApp } from "../../src/app.ts";
import { RedisLink } from "../../src/redis/link.ts";
import { startBigQueryStandIn } from "./bigquery-standin.ts";
import { countingEngine } from "./cached-service.ts";
import { type ConfigOverrides, configFrom } from "./config-from.ts";
import type { Row } from "./googlesql.ts";
import { API_KEY, engineOn } from "./service.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

let namespaces = 0;

/** `count` replicas over `tables` at the stand-in's `now`; their caches read `clock`. */
export async function replicasOnStandIn(options: {
  redisUrl: string;
  now: string;
  clock: { ms: number };
  tables: Record<string, Row[]>;
  config?: ConfigOverrides;
  deps?: Partial<AppDeps>;
  count?: number;
}) {
  const standIn = await startBigQueryStandIn({
    googleSqlPort: inject("googleSqlPort"),
    tables: options.tables,
    now: options.now,
  });
  closers.push(() => standIn.close());
  const engine = engineOn(standIn);
  closers.push(() => engine.close());
  const counting = countingEngine();
  const prefix = `replicas-${process.pid}-${++namespaces}:`;
  const apps: FastifyInstance[] = [];
  const bases: string[] = [];
  /** One more replica, as a restarted one comes back; its index. */
  const startOne = async () => {
    const link = new RedisLink({ url: options.redisUrl, prefix, timeoutMs: 1_000 });
    expect(await link.waitUntilUp(5_000)).toBe(true);
    const app = await serviceApp(
      configFrom({
        auth: { apiKeys: [API_KEY] },
        cache: { maxEntries: 100, maxBytes: 1_000_000 },
        follow: { maxPerCredential: 100 },
        streams: { maxPerAddress: 100 },
        rateLimitPerMinute: 100_000,
        shutdownGraceMs: 1_000,
        ...options.config,
      }),
      {
        engine: counting.wrap(engine),
        cache: { now: () => options.clock.ms },
        redis: link,
        ...options.deps,
      },
    );
    const close = async () => {
      await app.close();
      await link.close();
    };
    closers.push(close);
    apps.push(app);
    bases.push(await app.listen({ host: "127.0.0.1", port: 0 }));
    return apps.length - 1;
  };
  for (let i = 0; i < (options.count ?? 3); i++) await startOne();
  const setTable = (name: string, rows: Row[]) => {
    standIn.tables = { ...standIn.tables, [name]: rows };
  };
  return { apps, bases, queries: counting.counts, standIn, setTable, startOne };
}
