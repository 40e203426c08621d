-- Where a follow stream of logs.all starts reading history: the oldest record that
-- queries/bigquery/logs.all.sql would return for these parameters, in its order (timestamp, then
-- id), or no row. One query skips any stretch without records, however long, so that a start far
-- in the past costs no more than one that is near. Conditions as in logs.all.sql, which holds the
-- rules; a differential test holds the two to the same records.
SELECT
  t.id,
  t.timestamp
FROM edge_logs AS t
WHERE t.project = @project
  AND t.timestamp > TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL CASE @project_tier
      WHEN 'PRO' THEN 7
      WHEN 'PAYG' THEN 90
      WHEN 'ENTERPRISE' THEN 90
      ELSE 1
    END DAY)
  AND IFNULL(t.timestamp > CAST(NULLIF(@iso_timestamp_start, '') AS TIMESTAMP), TRUE)
  AND IFNULL(t.timestamp <= CAST(NULLIF(@iso_timestamp_end, '') AS TIMESTAMP), TRUE)
ORDER BY t.timestamp, IFNULL(t.id, '')
LIMIT 1
