-- usage.api-counts in DuckDB: the same rows as queries/bigquery/usage.api-counts.sql. $now is the
-- query's CURRENT_TIMESTAMP, bound by the engine. regexp_matches is RE2's partial match, as is
-- BigQuery's REGEXP_CONTAINS. GROUP BY 1: DuckDB would bind `timestamp` to the column, not the alias.
-- Lists are unnested in the select list: a lateral join (FROM t, unnest(...)) is decorrelated into
-- a hash join that is ten times slower.
WITH elements AS (
  SELECT t.timestamp, unnest(t.metadata) AS m
  FROM edge_logs AS t
  -- No upper bound (DESIGN.md); an interval outside the table matches nothing.
  WHERE t.timestamp >= $now - CASE $interval
      WHEN 'minutely' THEN INTERVAL 60 MINUTE
      WHEN 'hourly' THEN INTERVAL 1 HOUR
      WHEN 'daily' THEN INTERVAL 7 DAY
    END
),

requests AS (
  SELECT timestamp, unnest(m.request) AS r
  FROM elements
)

SELECT
  timezone('UTC', date_trunc(CASE $interval
      WHEN 'minutely' THEN 'minute'
      WHEN 'hourly' THEN 'hour'
      WHEN 'daily' THEN 'day'
    END, timestamp)) AS timestamp,
  count(*) FILTER (WHERE contains(r.path, '/rest')) AS total_rest_requests,
  count(*) FILTER (WHERE contains(r.path, '/storage')) AS total_storage_requests,
  count(*) FILTER (WHERE contains(r.path, '/auth')) AS total_auth_requests,
  count(*) FILTER (WHERE contains(r.path, '/realtime')) AS total_realtime_requests
FROM requests
WHERE regexp_matches(r.url, $project)
GROUP BY 1
ORDER BY 1
