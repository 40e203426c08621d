-- functions.invocation-stats: execution-time statistics of one project's function
-- invocations per time bucket. The window is the series of truncated timestamps from
-- trunc(now - window) to trunc(now) (window: 5 minutes, 15 minutes, 1 hour, 7 days or 1 day; bucket:
-- a second, minute, minute, day or hour); a record counts in the bucket its truncated timestamp equals.
-- A time range (from/to) instead gives the series of buckets of @bucket_seconds from window_start
-- to last_bucket, both aligned to it (src/endpoints/time-range.ts), and window_end, the last
-- instant the last bucket covers; without one, bucket_seconds is null and window_end the last
-- instant a TIMESTAMP holds.
-- Each metadata element of the project (and function, when given) is one invocation.
WITH buckets AS (
  -- window_start is the first bucket and last_bucket the last, which the service computes from one
  -- reading of now and binds (src/endpoints/window.ts).
  SELECT bucket
  FROM UNNEST(CASE
    WHEN @bucket_seconds IS NOT NULL THEN GENERATE_TIMESTAMP_ARRAY(
      CAST(@window_start AS TIMESTAMP), CAST(@last_bucket AS TIMESTAMP),
      INTERVAL CAST(@bucket_seconds AS INT64) SECOND)
    WHEN @interval = '5min' THEN GENERATE_TIMESTAMP_ARRAY(
      CAST(@window_start AS TIMESTAMP), CAST(@last_bucket AS TIMESTAMP), INTERVAL 1 SECOND)
    WHEN @interval = '15min' THEN GENERATE_TIMESTAMP_ARRAY(
      CAST(@window_start AS TIMESTAMP), CAST(@last_bucket AS TIMESTAMP), INTERVAL 1 MINUTE)
    WHEN @interval = '1hr' THEN GENERATE_TIMESTAMP_ARRAY(
      CAST(@window_start AS TIMESTAMP), CAST(@last_bucket AS TIMESTAMP), INTERVAL 1 MINUTE)
    WHEN @interval = '7day' THEN GENERATE_TIMESTAMP_ARRAY(
      CAST(@window_start AS TIMESTAMP), CAST(@last_bucket AS TIMESTAMP), INTERVAL 1 DAY)
    ELSE GENERATE_TIMESTAMP_ARRAY(
      CAST(@window_start AS TIMESTAMP), CAST(@last_bucket AS TIMESTAMP), INTERVAL 1 HOUR)
  END) AS bucket
),

invocations AS (
  SELECT
    CASE
      -- Buckets of a range are aligned to the epoch, as the service aligns the range.
      WHEN @bucket_seconds IS NOT NULL THEN TIMESTAMP_SECONDS(
        DIV(UNIX_SECONDS(t.timestamp), CAST(@bucket_seconds AS INT64)) * CAST(@bucket_seconds AS INT64))
      WHEN @interval = '5min' THEN TIMESTAMP_TRUNC(t.timestamp, SECOND)
      WHEN @interval = '15min' THEN TIMESTAMP_TRUNC(t.timestamp, MINUTE)
      WHEN @interval = '1hr' THEN TIMESTAMP_TRUNC(t.timestamp, MINUTE)
      WHEN @interval = '7day' THEN TIMESTAMP_TRUNC(t.timestamp, DAY)
      ELSE TIMESTAMP_TRUNC(t.timestamp, HOUR)
    END AS bucket,
    t.id,
    m.execution_time_ms,
    EXISTS (SELECT 1 FROM UNNEST(m.response) AS r WHERE r.status_code >= 400) AS failed
  FROM function_edge_logs AS t
  CROSS JOIN UNNEST(t.metadata) AS m
  -- The first bucket and the last instant, each compared with the column alone: BigQuery prunes
  -- partitions by them.
  WHERE t.timestamp >= CAST(@window_start AS TIMESTAMP)
    AND t.timestamp <= CAST(@window_end AS TIMESTAMP)
    AND m.project_ref = @project
    AND (IFNULL(@function_id, '') = '' OR m.function_id = @function_id)
),

stats AS (
  SELECT
    bucket,
    MIN(execution_time_ms) AS min_execution_time,
    MAX(execution_time_ms) AS max_execution_time,
    AVG(execution_time_ms) AS avg_execution_time,
    APPROX_QUANTILES(execution_time_ms, 100) AS quantiles,
    COUNT(id) AS count,
    COUNT(IF(failed, id, NULL)) AS error_count
  FROM invocations
  JOIN buckets USING (bucket)
  GROUP BY bucket
)

SELECT
  bucket AS timestamp,
  min_execution_time,
  max_execution_time,
  avg_execution_time,
  quantiles[OFFSET(95)] AS p95_execution_time,
  quantiles[OFFSET(99)] AS p99_execution_time,
  count,
  error_count
FROM stats
ORDER BY timestamp
