-- edge_requests from a batch of edge_logs records (the relation `batch`).
SELECT
  timestamp,
  r.url,
  contains(r.path, '/rest') AS rest,
  contains(r.path, '/storage') AS storage,
  contains(r.path, '/auth') AS auth,
  contains(r.path, '/realtime') AS realtime
FROM (
  SELECT timestamp, unnest(m.request) AS r
  FROM (SELECT timestamp, unnest(metadata) AS m FROM batch WHERE timestamp IS NOT NULL)
)
ORDER BY timestamp
