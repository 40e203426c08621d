// The redis-server of one test file (see redis-process.ts).
import { afterAll, beforeAll } from "vitest";
import { type RedisServer, redisOnFreePort } from "./redis-process.ts";

export type { RedisServer };

/**
 * A redis-server for the current test file: started before its tests, killed after them. Call at the
 * top level of the file; the returned object is filled in before the tests run.
 */
export function redisServer(): RedisServer {
  const server = {} as RedisServer;
  beforeAll(async () => {
    Object.assign(server, await redisOnFreePort());
    await server.start();
  });
  afterAll(() => server.kill?.());
  return server;
}
