-- functions.invocation-stats in DuckDB: the same rows as queries/bigquery/functions.invocation-stats.sql.
-- $now is the query's CURRENT_TIMESTAMP, bound by the engine. The bucket series
-- trunc(now - window) ... trunc(now) is a time range here: a record's truncated timestamp is an
-- element exactly when first <= timestamp < trunc(now) + one bucket, and a constant range lets
-- DuckDB skip row groups by timestamp.
WITH series AS (
  SELECT
    date_trunc(unit, $now - span) AS first,
    date_trunc(unit, $now) + to_microseconds(step_us) AS stop,
    step_us
  FROM (
    SELECT
      CASE $interval
        WHEN '5min' THEN 'second'
        WHEN '15min' THEN 'minute'
        WHEN '1hr' THEN 'minute'
        WHEN '7day' THEN 'day'
        ELSE 'hour'
      END AS unit,
      CASE $interval
        WHEN '5min' THEN INTERVAL 5 MINUTE
        WHEN '15min' THEN INTERVAL 15 MINUTE
        WHEN '1hr' THEN INTERVAL 1 HOUR
        WHEN '7day' THEN INTERVAL 7 DAY
        ELSE INTERVAL 1 DAY
      END AS span,
      CASE unit
        WHEN 'second' THEN 1000000
        WHEN 'minute' THEN 60000000
        WHEN 'hour' THEN 3600000000
        ELSE 86400000000
      END AS step_us
  )
),

-- Buckets are epoch microseconds, truncated by arithmetic: date_trunc on a TIMESTAMPTZ goes
-- through the ICU calendar for every row (most of the 7day query's time at 10 M rows), and UTC
-- units up to a day have fixed lengths. Metadata elements are unnested in the select list: a
-- lateral join (FROM t, unnest(...)) is decorrelated into a hash join that is ten times slower.
elements AS (
  SELECT
    epoch_us(t.timestamp) - (epoch_us(t.timestamp) - epoch_us(first)) % step_us AS bucket,
    t.id,
    unnest(t.metadata) AS m
  FROM function_edge_logs AS t, series
  WHERE t.timestamp >= first AND t.timestamp < stop
),

invocations AS (
  SELECT
    bucket,
    id,
    m.execution_time_ms,
    -- A lambda per row is slow; one response element, the usual case, needs none.
    CASE len(m.response)
      WHEN 0 THEN FALSE
      WHEN 1 THEN m.response[1].status_code >= 400
      ELSE len(list_filter(m.response, r -> r.status_code >= 400)) > 0
    END AS failed,
    m.execution_time_ms AS p95_input,
    m.execution_time_ms AS p99_input
  FROM elements
  WHERE m.project_ref = $project
    AND (coalesce($function_id, '') = '' OR m.function_id = $function_id)
),

-- BigQuery's APPROX_QUANTILES(x, 100)[OFFSET(i)] is taken as the value of rank floor(q·(n−1)),
-- q = i/100, among the n sorted non-null values (the rule the differential test holds both
-- engines to). DuckDB's quantile_disc(x, q) takes rank ceil(q·n)−1 but, unlike sorting a list per
-- bucket, needs no sort. For q = 1 − 1/d, adding d − 2 values below every x moves its rank among
-- the x to ceil(q·(n + d − 2)) − 1 − (d − 2) = floor(q·(n−1)), q·n being a multiple of 1/d:
-- 18 pads (-infinity) per bucket for p95, 98 for p99; NULL inputs are skipped.
padding AS (
  SELECT
    epoch_us(first) + b * step_us AS bucket,
    CASE WHEN pad < 18 THEN '-infinity'::DOUBLE END AS p95_input,
    '-infinity'::DOUBLE AS p99_input
  FROM series, range((epoch_us(stop) - epoch_us(first)) // step_us) AS buckets(b), range(98) AS pads(pad)
)

SELECT
  make_timestamptz(bucket) AS timestamp,
  min(execution_time_ms) AS min_execution_time,
  max(execution_time_ms) AS max_execution_time,
  avg(execution_time_ms) AS avg_execution_time,
  CASE WHEN count(execution_time_ms) > 0 THEN quantile_disc(p95_input, 0.95) END AS p95_execution_time,
  CASE WHEN count(execution_time_ms) > 0 THEN quantile_disc(p99_input, 0.99) END AS p99_execution_time,
  count(id) AS count,
  count(id) FILTER (WHERE failed) AS error_count
FROM (FROM invocations UNION ALL BY NAME FROM padding)
GROUP BY bucket
-- Only buckets with invocations: more rows than their 98 pads.
HAVING count(*) > 98
ORDER BY bucket
