-- A window of the records queries/duckdb/logs.all.sql would return, oldest first, as
-- queries/bigquery/window/logs.all.sql.
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
  -- A class's x stands for any digit: 5xx is LIKE '5__', which a 3-digit code of 500-599 matches.
  -- Lists are searched with lambdas rather than unnested: one pass over each record's elements.
  AND ($status IS NULL OR len(list_filter(
    flatten(list_transform(t.metadata, m -> m.response)),
    r -> len(list_filter(string_split($status, ','), term -> CAST(r.status_code AS VARCHAR) LIKE replace(term, 'x', '_'))) > 0
  )) > 0)
  AND ($method IS NULL OR list_has_any(
    list_transform(flatten(list_transform(t.metadata, m -> m.request)), q -> upper(q.method)),
    string_split($method, ',')))
  AND ($path IS NULL OR len(list_filter(
    flatten(list_transform(t.metadata, m -> m.request)), q -> starts_with(q.path, $path))) > 0)
  -- A substring, not a LIKE pattern: % _ and \ in it are plain characters.
  AND ($search IS NULL OR contains(lower(t.event_message), lower($search)))
  AND ($search_regex IS NULL OR regexp_matches(t.event_message, $search_regex))
  -- A resumed stream: only records after its position (after_timestamp, after_id) in this order.
  -- No position compares as NULL: no narrowing.
  AND coalesce(
    t.timestamp > CAST($after_timestamp AS TIMESTAMPTZ)
      OR (t.timestamp = CAST($after_timestamp AS TIMESTAMPTZ) AND coalesce(t.id, '') > $after_id),
    TRUE)
ORDER BY t.timestamp, coalesce(t.id, '')
