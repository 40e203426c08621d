-- logs.all in DuckDB: the same rows as queries/bigquery/logs.all.sql. $now is the query's
-- CURRENT_TIMESTAMP, bound by the engine; bounds cast to TIMESTAMPTZ so a zone offset counts.
SELECT
  t.id,
  t.timestamp,
  t.event_message,
  t.metadata
FROM edge_logs AS t
WHERE t.project = $project
  AND t.timestamp > $now - to_days(CASE $project_tier
      WHEN 'PRO' THEN 7
      WHEN 'PAYG' THEN 90
      WHEN 'ENTERPRISE' THEN 90
      ELSE 1
    END)
  AND coalesce(t.timestamp > CAST(nullif($iso_timestamp_start, '') AS TIMESTAMPTZ), TRUE)
  AND coalesce(t.timestamp <= CAST(nullif($iso_timestamp_end, '') AS TIMESTAMPTZ), TRUE)
  AND coalesce(
    t.timestamp < CAST($cursor_timestamp AS TIMESTAMPTZ)
      OR (t.timestamp = CAST($cursor_timestamp AS TIMESTAMPTZ) AND coalesce(t.id, '') < $cursor_id),
    TRUE)
ORDER BY t.timestamp DESC, coalesce(t.id, '') DESC
LIMIT 100
