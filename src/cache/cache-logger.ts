// Where the cache and its Redis part report what they find wrong without failing a request.

/** The part of a pino logger the cache uses. */
export interface CacheLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}
