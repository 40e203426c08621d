-- functions.invocation-stats in DuckDB: the same rows as queries/bigquery/functions.invocation-stats.sql.
-- $now is the query's CURRENT_TIMESTAMP, bound by the engine. The bucket series
-- trunc(now - window) ... trunc(now) is a time range here: a record's truncated timestamp is an
-- element exactly when first <= timestamp < trunc(now) + one bucket, and a constant range lets
-- DuckDB skip row groups by timestamp.
-- Metadata elements are unnested in the select list: a lateral join (FROM t, unnest(...)) is
-- decorrelated into a hash join that is ten times slower.
WITH elements AS (
  SELECT t.timestamp, t.id, unnest(t.metadata) AS m
  FROM function_edge_logs AS t
  WHERE t.timestamp >= CASE $interval
      WHEN '5min' THEN date_trunc('second', $now - INTERVAL 5 MINUTE)
      WHEN '15min' THEN date_trunc('minute', $now - INTERVAL 15 MINUTE)
      WHEN '1hr' THEN date_trunc('minute', $now - INTERVAL 1 HOUR)
      WHEN '7day' THEN date_trunc('day', $now - INTERVAL 7 DAY)
      ELSE date_trunc('hour', $now - INTERVAL 1 DAY)
    END
    AND t.timestamp < CASE $interval
      WHEN '5min' THEN date_trunc('second', $now) + INTERVAL 1 SECOND
      WHEN '15min' THEN date_trunc('minute', $now) + INTERVAL 1 MINUTE
      WHEN '1hr' THEN date_trunc('minute', $now) + INTERVAL 1 MINUTE
      WHEN '7day' THEN date_trunc('day', $now) + INTERVAL 1 DAY
      ELSE date_trunc('hour', $now) + INTERVAL 1 HOUR
    END
),

invocations AS (
  SELECT
    date_trunc(CASE $interval
        WHEN '5min' THEN 'second'
        WHEN '15min' THEN 'minute'
        WHEN '1hr' THEN 'minute'
        WHEN '7day' THEN 'day'
        ELSE 'hour'
      END, timestamp) AS bucket,
    id,
    m.execution_time_ms,
    -- A lambda per row is slow; one response element, the usual case, needs none.
    CASE len(m.response)
      WHEN 0 THEN FALSE
      WHEN 1 THEN m.response[1].status_code >= 400
      ELSE len(list_filter(m.response, r -> r.status_code >= 400)) > 0
    END AS failed
  FROM elements
  WHERE m.project_ref = $project
    AND (coalesce($function_id, '') = '' OR m.function_id = $function_id)
),

-- BigQuery's APPROX_QUANTILES(x, 100)[OFFSET(i)], taken as the value of rank floor(i·(n−1)/100)
-- among the n sorted non-null values (the rule the differential test holds both engines to).
stats AS (
  SELECT
    bucket,
    min(execution_time_ms) AS min_execution_time,
    max(execution_time_ms) AS max_execution_time,
    avg(execution_time_ms) AS avg_execution_time,
    list_sort(list(execution_time_ms) FILTER (WHERE execution_time_ms IS NOT NULL)) AS sorted,
    count(id) AS count,
    count(id) FILTER (WHERE failed) AS error_count
  FROM invocations
  GROUP BY bucket
)

SELECT
  bucket AS timestamp,
  min_execution_time,
  max_execution_time,
  avg_execution_time,
  sorted[(95 * (len(sorted) - 1)) // 100 + 1] AS p95_execution_time,
  sorted[(99 * (len(sorted) - 1)) // 100 + 1] AS p99_execution_time,
  count,
  error_count
FROM stats
ORDER BY bucket
