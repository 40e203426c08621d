-- usage.api-counts in DuckDB: the same rows as bigquery.sql, read from the
-- tables derived at load (queries/duckdb/derived). window_start (now − the interval's window) and
-- window_end are bound by the engine, as on BigQuery (src/endpoints/window.ts), and a time range's
-- bucket size, bucket_seconds (src/endpoints/time-range.ts). regexp_matches is RE2's partial
-- match, as is BigQuery's REGEXP_CONTAINS.
-- Buckets of whole hours (daily, or a range's) read edge_request_hours for the whole hours of the
-- window (requests counted per URL and hour), and edge_requests only for the part before the first
-- whole hour.
-- Buckets are epoch microseconds, floored by arithmetic: UTC units up to a day have fixed lengths.
-- Only the buckets become timestamps, as DATETIME(bucket, 'UTC').
WITH requests AS MATERIALIZED (
  SELECT epoch_us(t.timestamp) AS us, t.url, t.rest, t.storage, t.auth, t.realtime, 1 AS requests
  FROM edge_requests AS t
  -- No upper bound but a range's (docs/api.md); an interval outside the table matches nothing.
  WHERE t.timestamp >= CAST($window_start AS TIMESTAMPTZ)
    AND t.timestamp <= CAST($window_end AS TIMESTAMPTZ)
    -- by hour: the first whole hour at or after the window's start, where edge_request_hours take over.
    AND (NOT coalesce($interval = 'daily', CAST($bucket_seconds AS BIGINT) % 3600 = 0)
      OR t.timestamp < date_trunc('hour', CAST($window_start AS TIMESTAMPTZ) - INTERVAL 1 MICROSECOND) + INTERVAL 1 HOUR)
  UNION ALL
  SELECT epoch_us(h.hour), h.url, h.rest, h.storage, h.auth, h.realtime, h.requests
  FROM edge_request_hours AS h
  WHERE coalesce($interval = 'daily', CAST($bucket_seconds AS BIGINT) % 3600 = 0)
    AND h.hour >= date_trunc('hour', CAST($window_start AS TIMESTAMPTZ) - INTERVAL 1 MICROSECOND) + INTERVAL 1 HOUR
    AND h.hour <= CAST($window_end AS TIMESTAMPTZ)
),

-- The regex runs once per distinct URL: a pattern bound as a parameter is compiled for every row
-- it is matched against, so a costly pattern costs in proportion to the rows it sees.
urls AS MATERIALIZED (
  SELECT DISTINCT url FROM requests
),

matching_urls AS (
  SELECT url FROM urls WHERE regexp_matches(url, $project)
),

buckets AS (
  SELECT
    us - (us % step_us + step_us) % step_us AS bucket,
    rest,
    storage,
    auth,
    realtime,
    requests
  FROM requests
  SEMI JOIN matching_urls USING (url),
  (
    SELECT CASE
      WHEN $bucket_seconds IS NOT NULL THEN CAST($bucket_seconds AS BIGINT) * 1000000
      WHEN $interval = 'minutely' THEN 60000000
      WHEN $interval = 'hourly' THEN 3600000000
      WHEN $interval = 'daily' THEN 86400000000
    END AS step_us
  )
)

SELECT
  make_timestamp(bucket) AS timestamp,
  coalesce(sum(requests) FILTER (WHERE rest), 0) AS total_rest_requests,
  coalesce(sum(requests) FILTER (WHERE storage), 0) AS total_storage_requests,
  coalesce(sum(requests) FILTER (WHERE auth), 0) AS total_auth_requests,
  coalesce(sum(requests) FILTER (WHERE realtime), 0) AS total_realtime_requests
FROM buckets
GROUP BY bucket
ORDER BY bucket
