// Scripts more than one part of the service runs on Redis.

/** Extends a key's expiry (ARGV[2] ms) while it holds the caller's token (ARGV[1]); 0 when it does not. */
export const EXTEND_IF_HELD = {
  numberOfKeys: 1,
  lua: `
      if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
      return 0`,
} as const;
