-- usage.api-counts in DuckDB: the same rows as queries/bigquery/usage.api-counts.sql. $now is the
-- query's CURRENT_TIMESTAMP, bound by the engine. regexp_matches is RE2's partial match, as is
-- BigQuery's REGEXP_CONTAINS.
-- Lists are unnested in the select list: a lateral join (FROM t, unnest(...)) is decorrelated into
-- a hash join that is ten times slower.
-- Buckets are epoch microseconds, floored by arithmetic: date_trunc on a TIMESTAMPTZ goes through
-- the ICU calendar for every row (most of the daily query's time at 10 M rows), and UTC units up
-- to a day have fixed lengths. Only the buckets become timestamps, as DATETIME(bucket, 'UTC').
WITH elements AS (
  SELECT
    epoch_us(t.timestamp) AS us,
    CASE $interval
      WHEN 'minutely' THEN 60000000
      WHEN 'hourly' THEN 3600000000
      WHEN 'daily' THEN 86400000000
    END AS step_us,
    unnest(t.metadata) AS m
  FROM edge_logs AS t
  -- No upper bound (DESIGN.md); an interval outside the table matches nothing.
  WHERE t.timestamp >= $now - CASE $interval
      WHEN 'minutely' THEN INTERVAL 60 MINUTE
      WHEN 'hourly' THEN INTERVAL 1 HOUR
      WHEN 'daily' THEN INTERVAL 7 DAY
    END
),

requests AS (
  SELECT us - (us % step_us + step_us) % step_us AS bucket, unnest(m.request) AS r
  FROM elements
)

SELECT
  make_timestamp(bucket) AS timestamp,
  count(*) FILTER (WHERE contains(r.path, '/rest')) AS total_rest_requests,
  count(*) FILTER (WHERE contains(r.path, '/storage')) AS total_storage_requests,
  count(*) FILTER (WHERE contains(r.path, '/auth')) AS total_auth_requests,
  count(*) FILTER (WHERE contains(r.path, '/realtime')) AS total_realtime_requests
FROM requests
WHERE regexp_matches(r.url, $project)
GROUP BY bucket
ORDER BY bucket
