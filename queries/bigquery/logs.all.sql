-- logs.all: the newest edge request records of one project, within the retention of
-- its tier and the optional range (iso_timestamp_start, iso_timestamp_end]. Records sharing a
-- timestamp are ordered by id, so a page ends at a definite record: the cursor (cursor_timestamp,
-- cursor_id) of the last record of a page makes the next page the records after it in this order.
SELECT
  t.id,
  t.timestamp,
  t.event_message,
  t.metadata
FROM edge_logs AS t
WHERE t.project = @project
  AND t.timestamp > TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL CASE @project_tier
      WHEN 'PRO' THEN 7
      WHEN 'PAYG' THEN 90
      WHEN 'ENTERPRISE' THEN 90
      ELSE 1
    END DAY)
  -- An empty or absent bound compares as NULL, which IFNULL turns into "no bound".
  AND IFNULL(t.timestamp > CAST(NULLIF(@iso_timestamp_start, '') AS TIMESTAMP), TRUE)
  AND IFNULL(t.timestamp <= CAST(NULLIF(@iso_timestamp_end, '') AS TIMESTAMP), TRUE)
  -- No cursor compares as NULL: no narrowing. A NULL id sorts as '' (last among equal timestamps).
  AND IFNULL(
    t.timestamp < CAST(@cursor_timestamp AS TIMESTAMP)
      OR (t.timestamp = CAST(@cursor_timestamp AS TIMESTAMP) AND IFNULL(t.id, '') < @cursor_id),
    TRUE)
ORDER BY t.timestamp DESC, IFNULL(t.id, '') DESC
LIMIT 100
