// Scripts more than one part of the service runs on Redis, and how a part defines its own.
import type { Redis } from "ioredis";

/** A Lua script and how many of its arguments are keys. */
interface Script {
  numberOfKeys: number;
  lua: string;
}

/** Defines `scripts` as commands of `client`, by name, once per connection whoever asks first. */
export function defineScripts(client: Redis, scripts: Record<string, Script>): void {
  for (const [name, script] of Object.entries(scripts)) {
    if (!(name in client)) client.defineCommand(name, script);
  }
}

/** Extends a key's expiry (ARGV[2] ms) while it holds the caller's token (ARGV[1]); 0 when it does not. */
export const EXTEND_IF_HELD = {
  numberOfKeys: 1,
  lua: `
      if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
      return 0`,
} as const;
