-- function_invocation_values of the hours [$from, $to) (whole hours), from function_invocations:
-- the execution times of each hour, project, function and value bin, sorted.
SELECT
  date_trunc('hour', timestamp) AS hour,
  project_ref,
  function_id,
  value_bin,
  list(execution_time_ms ORDER BY execution_time_ms) AS execution_times
FROM function_invocations
WHERE timestamp >= $from AND timestamp < $to
  AND execution_time_ms IS NOT NULL
GROUP BY ALL
ORDER BY hour, value_bin
