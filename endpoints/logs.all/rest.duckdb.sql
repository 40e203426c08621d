-- The rest of a page walk of logs.all in DuckDB: the same rows as
-- rest.bigquery.sql, with the window the engine binds (src/endpoints/window.ts).
SELECT
  t.id,
  t.timestamp,
  t.event_message,
  t.metadata
FROM edge_logs AS t
WHERE t.project = $project
  AND t.timestamp > CAST($window_start AS TIMESTAMPTZ)
  AND t.timestamp <= CAST($window_end AS TIMESTAMPTZ)
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
  -- A substring, not a LIKE pattern: % _ and \ in it are plain characters. Lowered as BigQuery
  -- lowers (queries/duckdb/macros.sql): İ and a final Σ lower differently in DuckDB's lower().
  AND ($search IS NULL OR contains(bigquery_lower(t.event_message), bigquery_lower($search)))
  AND ($search_regex IS NULL OR regexp_matches(t.event_message, $search_regex))
  AND (t.timestamp < CAST($cursor_timestamp AS TIMESTAMPTZ)
    OR coalesce(t.id, '') < $cursor_id)
ORDER BY t.timestamp DESC, coalesce(t.id, '') DESC
