-- logs.all: the newest edge request records of one project, within the retention of
-- its tier (1 day; 7 for PRO; 90 for PAYG and ENTERPRISE; counted back from now) and the optional
-- range (iso_timestamp_start, iso_timestamp_end], bound as (window_start, window_end]. Records sharing a
-- timestamp are ordered by id, so a page ends at a definite record: the cursor (cursor_timestamp,
-- cursor_id) of the last record of a page makes the next page the records after it in this order.
-- The filters (status, method, path, search, search_regex) only narrow; NULL is no filter. A record
-- matches a metadata filter when any of its metadata elements does. The service gives status and
-- method as comma-separated terms, each once: status codes (404) or classes (5xx), methods in upper
-- case.
SELECT
  t.id,
  t.timestamp,
  t.event_message,
  t.metadata
FROM edge_logs AS t
WHERE t.project = @project
  -- The window first: bounds the service computes from one reading of now and binds
  -- (src/endpoints/window.ts), each compared with the column itself in the top-level AND, the form
  -- BigQuery prunes partitions by. window_start is the latest of the tier's retention edge and
  -- iso_timestamp_start; window_end the earliest of iso_timestamp_end and the cursor's timestamp.
  -- The filters below then read only the rows in the window, so their cost follows the window asked.
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
  -- No cursor compares as NULL: no narrowing. A NULL id sorts as '' (last among equal timestamps).
  AND IFNULL(
    t.timestamp < CAST(@cursor_timestamp AS TIMESTAMP)
      OR (t.timestamp = CAST(@cursor_timestamp AS TIMESTAMP) AND IFNULL(t.id, '') < @cursor_id),
    TRUE)
ORDER BY t.timestamp DESC, IFNULL(t.id, '') DESC
LIMIT 100
