// datetime-local inputs read as UTC: the page's times are the service's, in UTC, whatever the
// browser's zone. An input gives "2026-11-21T05:00" or "2026-11-21T05:00:30".

/** An input's value as an RFC 3339 UTC timestamp. */
export const asUtcTimestamp = (value) => `${value.length === 16 ? `${value}:00` : value}Z`;

/** An RFC 3339 timestamp as an input's value (its UTC wall time). */
export const asInputTimestamp = (iso) => iso.replace(/(\.\d+)?(Z|[+-]\d\d:\d\d)$/, "");
