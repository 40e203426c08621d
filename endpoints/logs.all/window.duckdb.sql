-- A window of the records duckdb.sql would return, oldest first, as
-- window.bigquery.sql.
-- Each row whole, as the JSON object the service sends, in one JSON column named row (its keys the
-- columns of duckdb.sql, in order, the timestamp as the service writes one): DuckDB writes a
-- window's JSON in its own threads, many times faster than the service would convert and write it
-- value by value.
SELECT
  to_json(struct_pack(
    id := t.id,
    "timestamp" := strftime(t.timestamp, '%Y-%m-%dT%H:%M:%S.%fZ'),
    event_message := t.event_message,
    metadata := t.metadata)) AS "row"
FROM edge_logs AS t
WHERE t.project = $project
  -- The window first, each bound a comparison of the column itself, which the scan applies: the
  -- filters below then read only the rows in the window, so their cost follows the window asked.
  -- A resumed stream's window starts at its position's instant.
  AND t.timestamp > CAST($window_start AS TIMESTAMPTZ)
  AND t.timestamp <= CAST($window_end AS TIMESTAMPTZ)
  -- A class's x stands for any digit: 5xx is LIKE '5__', which a 3-digit code of 500-599 matches.
  -- So a response matches when the list holds its code or its class: one lookup per response, not
  -- a LIKE per term (a 20-term list took twice as long that way).
  -- Lists are searched with lambdas rather than unnested: one pass over each record's elements.
  AND ($status IS NULL OR len(list_filter(
    flatten(list_transform(t.metadata, m -> m.response)),
    r -> list_has_any(string_split($status, ','), [
      CAST(r.status_code AS VARCHAR),
      CASE WHEN r.status_code BETWEEN 100 AND 999 THEN CAST(r.status_code // 100 AS VARCHAR) || 'xx' END])
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
  -- A resumed stream: only records after its position (after_timestamp, after_id) in this order.
  -- No position compares as NULL: no narrowing.
  AND coalesce(
    t.timestamp > CAST($after_timestamp AS TIMESTAMPTZ)
      OR (t.timestamp = CAST($after_timestamp AS TIMESTAMPTZ) AND coalesce(t.id, '') > $after_id),
    TRUE)
ORDER BY t.timestamp, coalesce(t.id, '')
