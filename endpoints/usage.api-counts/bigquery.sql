-- usage.api-counts: requests of one project per time bucket, by API area. Each request
-- element whose URL matches the project regex counts once in every area its path contains.
-- A time range (from/to, src/endpoints/time-range.ts) is counted in epoch-aligned buckets of
-- @bucket_seconds up to window_end; without one, bucket_seconds is null and window_end unbounded.
WITH requests AS (
  SELECT
    CASE
      -- A range's bucket.
      WHEN @bucket_seconds IS NOT NULL THEN TIMESTAMP_SECONDS(
        DIV(UNIX_SECONDS(t.timestamp), CAST(@bucket_seconds AS INT64)) * CAST(@bucket_seconds AS INT64))
      WHEN @interval = 'minutely' THEN TIMESTAMP_TRUNC(t.timestamp, MINUTE)
      WHEN @interval = 'hourly' THEN TIMESTAMP_TRUNC(t.timestamp, HOUR)
      WHEN @interval = 'daily' THEN TIMESTAMP_TRUNC(t.timestamp, DAY)
    END AS bucket,
    r.path
  FROM edge_logs AS t
  CROSS JOIN UNNEST(t.metadata) AS m
  CROSS JOIN UNNEST(m.request) AS r
  -- From now minus the interval's window (60 minutes, 1 hour, 7 days), which the service computes
  -- from one reading of now and binds (src/endpoints/window.ts): the column compared with it alone
  -- is the form BigQuery prunes partitions by. No upper bound but a range's (docs/api.md).
  WHERE t.timestamp >= CAST(@window_start AS TIMESTAMP)
    AND t.timestamp <= CAST(@window_end AS TIMESTAMP)
    AND REGEXP_CONTAINS(r.url, @project)
)

SELECT
  DATETIME(bucket, 'UTC') AS timestamp,
  COUNTIF(STRPOS(path, '/rest') > 0) AS total_rest_requests,
  COUNTIF(STRPOS(path, '/storage') > 0) AS total_storage_requests,
  COUNTIF(STRPOS(path, '/auth') > 0) AS total_auth_requests,
  COUNTIF(STRPOS(path, '/realtime') > 0) AS total_realtime_requests
FROM requests
GROUP BY bucket
ORDER BY bucket
