-- A window of logs.all's history, read by a follow stream's catch-up and a settled run: every record
-- that bigquery.sql would return for these parameters, oldest first (timestamp,
-- then id), after a resumed stream's position. No LIMIT: the window is read with one query and its
-- result paged (BigQuery keeps it in the job), so a stretch without records costs nothing more and a
-- long window is not scanned again per page. Conditions as in logs.all.sql, which holds the rules; a
-- differential test holds the two dialects to the same records.
SELECT
  t.id,
  t.timestamp,
  t.event_message,
  t.metadata
FROM edge_logs AS t
WHERE t.project = @project
  -- The window, as in logs.all.sql; a resumed stream's window starts at its position's instant
  -- (window_start is then no earlier than 1 µs before after_timestamp).
  AND t.timestamp > CAST(@window_start AS TIMESTAMP)
  AND t.timestamp <= CAST(@window_end AS TIMESTAMP)
  -- A class's x stands for any digit: 5xx is LIKE '5__', which a 3-digit code of 500-599 matches.
  AND (@status IS NULL OR EXISTS (
    SELECT 1
    FROM UNNEST(t.metadata) AS m, UNNEST(m.response) AS r, UNNEST(SPLIT(@status, ',')) AS term
    WHERE CAST(r.status_code AS STRING) LIKE REPLACE(term, 'x', '_')))
  AND (@method IS NULL OR EXISTS (
    SELECT 1
    FROM UNNEST(t.metadata) AS m, UNNEST(m.request) AS q
    WHERE UPPER(q.method) IN UNNEST(SPLIT(@method, ','))))
  AND (@path IS NULL OR EXISTS (
    SELECT 1
    FROM UNNEST(t.metadata) AS m, UNNEST(m.request) AS q
    WHERE STARTS_WITH(q.path, @path)))
  -- A substring, not a LIKE pattern: % _ and \ in it are plain characters.
  AND (@search IS NULL OR STRPOS(LOWER(t.event_message), LOWER(@search)) > 0)
  AND (@search_regex IS NULL OR REGEXP_CONTAINS(t.event_message, @search_regex))
  -- A resumed stream: only records after its position (after_timestamp, after_id) in this order.
  -- No position compares as NULL: no narrowing.
  AND IFNULL(
    t.timestamp > CAST(@after_timestamp AS TIMESTAMP)
      OR (t.timestamp = CAST(@after_timestamp AS TIMESTAMP) AND IFNULL(t.id, '') > @after_id),
    TRUE)
ORDER BY t.timestamp, IFNULL(t.id, '')
