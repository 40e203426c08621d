// How far back logs.all reaches, by project_tier, as its SQL applies it (queries/*/logs.all.sql,
// held to these figures by test/sql/logs-all.test.ts). A settled follow stream checks a cursor
// against it before any query: a checkpoint older than the retention means dropped records.
const RETENTION_DAYS: Readonly<Record<string, number>> = {
  FREE: 1,
  PRO: 7,
  PAYG: 90,
  ENTERPRISE: 90,
};

/** Days of retention of a tier; any other value (tiers are case-sensitive) gets a day. */
export function retentionDays(tier: string | null | undefined): number {
  return (tier && Object.hasOwn(RETENTION_DAYS, tier) && RETENTION_DAYS[tier]) || 1;
}
