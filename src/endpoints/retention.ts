// How far back a paged endpoint reaches, by the value of a parameter, as its paging contract
// declares it (and its SQL's window applies it). A settled follow stream checks a cursor against it
// before any query: a checkpoint older than the retention means dropped records.
import type { PagingContract } from "./catalog.ts";

/** Days of retention for a value; any other value (values are case-sensitive) gets `otherwise`. */
export function retentionDays(
  { days, otherwise }: PagingContract["retention"],
  value: string | null | undefined,
): number {
  return (value && Object.hasOwn(days, value) && days[value]) || otherwise;
}
