-- functions.invocation-stats in DuckDB: the same rows as bigquery.sql,
-- read from the tables derived at load (queries/duckdb/derived). The engine binds the first bucket
-- (window_start) and the last (last_bucket) as on BigQuery (src/endpoints/window.ts), and $now, from
-- the same reading of now; a time range binds its bucket size (bucket_seconds), its first and last
-- buckets aligned to it (src/endpoints/time-range.ts). The bucket series first ... last is a
-- time range here: a record's truncated timestamp is an element exactly when
-- first <= timestamp < last + one bucket.
-- Buckets shorter than an hour (windows of an hour at most, or a range's) are computed from the
-- invocations themselves; buckets of whole hours (1day, 7day, or a range's) are sums of whole hours
-- of function_invocation_hours, and their p95/p99 read only the sorted execution times of one value
-- bin (function_invocation_values).
-- Buckets are epoch microseconds, truncated by arithmetic: UTC units up to a day have fixed lengths.
WITH series AS (
  SELECT
    CAST($window_start AS TIMESTAMPTZ) AS first,
    CAST($last_bucket AS TIMESTAMPTZ) + to_microseconds(step_us) AS stop,
    step_us,
    step_us % 3600000000 = 0 AS by_hour
  FROM (
    SELECT
      CASE
        WHEN $bucket_seconds IS NOT NULL THEN CAST($bucket_seconds AS BIGINT) * 1000000
        WHEN $interval = '5min' THEN 1000000
        WHEN $interval = '15min' THEN 60000000
        WHEN $interval = '1hr' THEN 60000000
        WHEN $interval = '7day' THEN 86400000000
        ELSE 3600000000
      END AS step_us
  )
),

invocations AS (
  SELECT
    epoch_us(t.timestamp) - (epoch_us(t.timestamp) - epoch_us(first)) % step_us AS bucket,
    t.counted,
    t.execution_time_ms,
    t.failed,
    t.execution_time_ms AS p95_input,
    t.execution_time_ms AS p99_input
  FROM function_invocations AS t, series
  -- The widest window of an interval, or the range's start, as a constant bound, which skips older
  -- row groups unread.
  WHERE t.timestamp >= CASE
      WHEN $bucket_seconds IS NULL THEN $now - INTERVAL 61 MINUTE
      ELSE CAST($window_start AS TIMESTAMPTZ)
    END
    AND NOT by_hour
    AND t.timestamp >= first AND t.timestamp < stop
    AND t.project_ref = $project
    AND (coalesce($function_id, '') = '' OR t.function_id = $function_id)
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
  WHERE NOT by_hour
),

small_buckets AS (
  SELECT
    bucket,
    min(execution_time_ms) AS min_execution_time,
    max(execution_time_ms) AS max_execution_time,
    avg(execution_time_ms) AS avg_execution_time,
    CASE WHEN count(execution_time_ms) > 0 THEN quantile_disc(p95_input, 0.95) END AS p95_execution_time,
    CASE WHEN count(execution_time_ms) > 0 THEN quantile_disc(p99_input, 0.99) END AS p99_execution_time,
    count(*) FILTER (WHERE counted) AS count,
    count(*) FILTER (WHERE counted AND failed) AS error_count
  FROM (FROM invocations UNION ALL BY NAME FROM padding)
  GROUP BY bucket
  -- Only buckets with invocations: more rows than their 98 pads.
  HAVING count(*) > 98
),

-- The window's hour rows, read more than once: computed once.
hours AS MATERIALIZED (
  SELECT
    epoch_us(h.hour) - (epoch_us(h.hour) - epoch_us(first)) % step_us AS bucket,
    h.*
  FROM function_invocation_hours AS h, series
  WHERE by_hour
    AND h.hour >= first AND h.hour < stop
    AND h.project_ref = $project
    AND (coalesce($function_id, '') = '' OR h.function_id = $function_id)
),

bins AS MATERIALIZED (
  SELECT bucket, value_bin, CAST(sum("values") AS BIGINT) AS n
  FROM hours
  GROUP BY ALL
),

hour_buckets AS MATERIALIZED (
  SELECT
    bucket,
    CAST(sum("values") AS BIGINT) AS n,
    min(smallest) AS smallest,
    max(largest) AS largest,
    -- Floats summed in a fixed order: in whatever order parallel threads met them, the last digits
    -- of an average would change from one run to the next, and with them the answer's ETag.
    sum(total ORDER BY hour, function_id, value_bin) / nullif(sum("values"), 0) AS average,
    sum(invocations) AS invocations,
    sum(errors) AS errors
  FROM hours
  GROUP BY bucket
),

-- The value of rank k = floor(q·(n−1)) of a bucket lies in the bin where the running count of
-- values passes k; it is the (k − values in lower bins)-th smallest value of that bin, read from
-- the bin's lists of the bucket's hours.
targets AS MATERIALIZED (
  SELECT r.bucket, q.percent, r.value_bin, q.percent * (b.n - 1) // 100 - r.below AS k
  FROM (
    SELECT
      bucket,
      value_bin,
      n,
      CAST(sum(n) OVER (PARTITION BY bucket ORDER BY value_bin) AS BIGINT) - n AS below
    FROM bins
    WHERE value_bin IS NOT NULL
  ) AS r
  JOIN hour_buckets AS b USING (bucket),
  (VALUES (95), (99)) AS q(percent)
  WHERE q.percent * (b.n - 1) // 100 >= r.below
    AND q.percent * (b.n - 1) // 100 < r.below + r.n
),

picked AS (
  SELECT t.bucket, t.percent, list_sort(flatten(list(v.execution_times)))[t.k + 1] AS value
  FROM targets AS t
  JOIN (
    SELECT
      epoch_us(v.hour) - (epoch_us(v.hour) - epoch_us(first)) % step_us AS bucket,
      v.value_bin,
      v.execution_times
    FROM function_invocation_values AS v, series
    WHERE by_hour
      AND v.hour >= first AND v.hour < stop
      AND v.project_ref = $project
      AND (coalesce($function_id, '') = '' OR v.function_id = $function_id)
      -- A range of scalars, not a join: the planner would hash every list of the window.
      AND v.value_bin BETWEEN (SELECT min(value_bin) FROM targets) AND (SELECT max(value_bin) FROM targets)
  ) AS v USING (bucket, value_bin)
  GROUP BY t.bucket, t.percent, t.k
)

SELECT
  make_timestamptz(bucket) AS timestamp,
  min_execution_time,
  max_execution_time,
  avg_execution_time,
  p95_execution_time,
  p99_execution_time,
  count,
  error_count
FROM (
  FROM small_buckets
  UNION ALL
  SELECT
    bucket,
    b.smallest,
    b.largest,
    b.average,
    p.p95,
    p.p99,
    b.invocations,
    b.errors
  FROM hour_buckets AS b
  LEFT JOIN (
    SELECT
      bucket,
      any_value(value) FILTER (WHERE percent = 95) AS p95,
      any_value(value) FILTER (WHERE percent = 99) AS p99
    FROM picked
    GROUP BY bucket
  ) AS p USING (bucket)
)
ORDER BY bucket
