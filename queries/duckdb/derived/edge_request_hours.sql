-- edge_request_hours of the hours [$from, $to) (whole hours), from edge_requests.
SELECT
  date_trunc('hour', timestamp) AS hour,
  url,
  rest,
  storage,
  auth,
  realtime,
  count(*) AS requests
FROM edge_requests
WHERE timestamp >= $from AND timestamp < $to
GROUP BY ALL
ORDER BY hour
