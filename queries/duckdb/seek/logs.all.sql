-- The oldest record queries/duckdb/logs.all.sql would return, as queries/bigquery/seek/logs.all.sql.
SELECT
  t.id,
  t.timestamp
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
ORDER BY t.timestamp, coalesce(t.id, '')
LIMIT 1
