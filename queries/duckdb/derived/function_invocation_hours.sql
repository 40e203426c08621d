-- function_invocation_hours of the hours [$from, $to) (whole hours), from function_invocations.
SELECT
  date_trunc('hour', timestamp) AS hour,
  project_ref,
  function_id,
  value_bin,
  count(execution_time_ms) AS "values",
  sum(execution_time_ms) AS total,
  min(execution_time_ms) AS smallest,
  max(execution_time_ms) AS largest,
  count(*) FILTER (WHERE counted) AS invocations,
  count(*) FILTER (WHERE counted AND failed) AS errors
FROM function_invocations
WHERE timestamp >= $from AND timestamp < $to
GROUP BY ALL
ORDER BY hour
