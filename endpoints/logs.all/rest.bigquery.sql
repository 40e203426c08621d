-- The rest of a page walk of logs.all: every record bigquery.sql would page
-- through after the cursor (cursor_timestamp, cursor_id), in its order, with no LIMIT. The service
-- runs it once for a walk's second page and reads the later pages from the job's kept result, which
-- BigQuery serves without a new query or new bytes. Conditions as in logs.all.sql, which holds the
-- rules; the cursor is always given, so the window's end is at or before it and narrows the
-- partitions read.
SELECT
  t.id,
  t.timestamp,
  t.event_message,
  t.metadata
FROM edge_logs AS t
WHERE t.project = @project
  -- The window, as in logs.all.sql: window_end is at or before the cursor's timestamp.
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
  -- After the cursor in this order: an older record, or one at its instant with a lower id. A NULL
  -- id sorts as '' (last among equal timestamps).
  AND (t.timestamp < CAST(@cursor_timestamp AS TIMESTAMP)
    OR IFNULL(t.id, '') < @cursor_id)
ORDER BY t.timestamp DESC, IFNULL(t.id, '') DESC
