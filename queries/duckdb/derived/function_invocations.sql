-- function_invocations from a batch of function_edge_logs records (the relation `batch`).
-- value_bin: 8 bins per power of two of |x|, ordered as x is (negative values below 0, NaN last),
-- so the rank of a value among a bucket's values is found from bin counts plus one bin's values.
SELECT
  t.timestamp,
  t.id IS NOT NULL AS counted,
  m.project_ref,
  m.function_id,
  m.execution_time_ms,
  CASE
    WHEN m.execution_time_ms IS NULL THEN NULL
    WHEN isnan(m.execution_time_ms) THEN 30000
    WHEN m.execution_time_ms > 0
      THEN 20000 + CAST(least(greatest(floor(log2(m.execution_time_ms) * 8), -9000), 9000) AS INTEGER)
    WHEN m.execution_time_ms < 0
      THEN -20000 - CAST(least(greatest(floor(log2(-m.execution_time_ms) * 8), -9000), 9000) AS INTEGER)
    ELSE 0
  END AS value_bin,
  -- A lambda per row is slow; one response element, the usual case, needs none.
  CASE len(m.response)
    WHEN 0 THEN FALSE
    WHEN 1 THEN m.response[1].status_code >= 400
    ELSE len(list_filter(m.response, r -> r.status_code >= 400)) > 0
  END AS failed
FROM (SELECT timestamp, id, unnest(metadata) AS m FROM batch WHERE timestamp IS NOT NULL) AS t
ORDER BY t.timestamp
