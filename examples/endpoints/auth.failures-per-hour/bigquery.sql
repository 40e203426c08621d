-- auth.failures-per-hour: one project's requests to /auth/v1/ answered 401 or 403, counted per
-- hour from window_start on (bound by the service: now − the period, truncated to the hour).
SELECT
  TIMESTAMP_TRUNC(t.timestamp, HOUR) AS hour,
  COUNT(*) AS failures
FROM edge_logs AS t
WHERE t.project = @project
  AND t.timestamp >= CAST(@window_start AS TIMESTAMP)
  AND EXISTS (
    SELECT 1
    FROM UNNEST(t.metadata) AS m, UNNEST(m.request) AS q, UNNEST(m.response) AS r
    WHERE STARTS_WITH(q.path, '/auth/v1/') AND r.status_code IN (401, 403))
GROUP BY hour
ORDER BY hour
