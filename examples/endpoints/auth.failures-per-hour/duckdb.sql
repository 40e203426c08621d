-- auth.failures-per-hour on the embedded engine: the same rows as bigquery.sql.
SELECT
  date_trunc('hour', t.timestamp) AS hour,
  count(*) AS failures
FROM edge_logs AS t
WHERE t.project = $project
  AND t.timestamp >= CAST($window_start AS TIMESTAMPTZ)
  AND len(list_filter(t.metadata, m ->
    len(list_filter(m.request, q -> starts_with(q.path, '/auth/v1/'))) > 0
    AND len(list_filter(m.response, r -> r.status_code IN (401, 403))) > 0)) > 0
GROUP BY hour
ORDER BY hour
