// Timestamps travel as epoch microseconds (bigint): BigQuery's precision, which a JS Date (ms) loses.

const ISO_WITH_ZONE =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** BigQuery's TIMESTAMP range, 0001-01-01T00:00:00Z … 9999-12-31T23:59:59.999999Z, in epoch µs. */
const MIN_MICROS = -62_135_596_800_000_000n;
const MAX_MICROS = 253_402_300_799_999_999n;

/**
 * Parses ISO 8601 / RFC 3339 with a zone (`Z` or `±hh:mm`); undefined if not one, or if the instant
 * falls outside BigQuery's TIMESTAMP range once the offset is applied. Sub-µs digits are dropped.
 */
export function parseIsoTimestamp(text: string): bigint | undefined {
  const m = ISO_WITH_ZONE.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, fraction = "", z, sign, zh, zm] = m;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  date.setUTCFullYear(year);
  const valid =
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    hour < 24 &&
    minute < 60 &&
    second < 60 &&
    (z !== undefined || (Number(zh) < 24 && Number(zm) < 60));
  if (!valid) return undefined;
  const offsetMinutes = z ? 0 : (sign === "-" ? -1 : 1) * (Number(zh) * 60 + Number(zm));
  const micros =
    (BigInt(date.getTime()) - BigInt(offsetMinutes) * 60_000n) * 1000n +
    BigInt(fraction.padEnd(6, "0").slice(0, 6));
  return inTimestampRange(micros) ? micros : undefined;
}

/**
 * The instant of a TIMESTAMP as rows carry it (formatTimestamp's form, whichever engine read it),
 * read without the checks a caller's text needs: a catch-up reads one per record it sends.
 */
export function wireTimestampMicros(text: string): bigint | undefined {
  if (text.length !== 27 || text[19] !== "." || text[26] !== "Z") return parseIsoTimestamp(text);
  const millis = Date.parse(`${text.slice(0, 19)}Z`);
  return BigInt(millis) * 1000n + BigInt(text.slice(20, 26));
}

/** Whether epoch µs fall within BigQuery's TIMESTAMP range. */
export function inTimestampRange(micros: bigint): boolean {
  return micros >= MIN_MICROS && micros <= MAX_MICROS;
}

/** RFC 3339 in UTC with exactly six fraction digits: `2026-11-21T05:00:00.000000Z`. */
export function formatTimestamp(micros: bigint): string {
  const [seconds, fraction] = secondsAndFraction(micros);
  return `${seconds}.${fraction}Z`;
}

/** A UTC wall-clock time without zone, `2026-11-21T05:00:00`; fraction digits only when non-zero. */
export function formatDatetime(micros: bigint): string {
  const [seconds, fraction] = secondsAndFraction(micros);
  return fraction === "000000" ? seconds : `${seconds}.${fraction}`;
}

export function dateToMicros(date: Date): bigint {
  return BigInt(date.getTime()) * 1000n;
}

/** `2026-11-21T05:00:00` and the six-digit microseconds past it (positive before 1970 too). */
function secondsAndFraction(micros: bigint): [string, string] {
  const fraction = ((micros % 1_000_000n) + 1_000_000n) % 1_000_000n;
  const seconds = new Date(Number((micros - fraction) / 1000n)).toISOString().slice(0, 19);
  return [seconds, String(fraction).padStart(6, "0")];
}
