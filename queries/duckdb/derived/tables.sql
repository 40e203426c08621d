-- Tables derived from the BigQuery-shaped source tables at load, shaped for the three queries
-- (docs/benchmarks.md, "Embedded DuckDB at scale"). Rows are appended in timestamp order, so a time window
-- reads only the row groups it overlaps. A record without a timestamp is in no window: not here.

-- One row per function_edge_logs metadata element (an invocation).
CREATE TABLE IF NOT EXISTS function_invocations (
  "timestamp" TIMESTAMPTZ,
  -- Whether the record has an id: BigQuery's COUNT(id) counts only those.
  counted BOOLEAN,
  project_ref VARCHAR,
  function_id VARCHAR,
  execution_time_ms DOUBLE,
  -- A monotone bin of execution_time_ms (8 per power of two): see function_invocations.sql.
  value_bin SMALLINT,
  failed BOOLEAN
);

-- function_invocations summed per hour, project, function and value bin: the 1day and 7day
-- intervals (hour and day buckets) read these instead of every invocation.
CREATE TABLE IF NOT EXISTS function_invocation_hours (
  hour TIMESTAMPTZ,
  project_ref VARCHAR,
  function_id VARCHAR,
  value_bin SMALLINT,
  "values" BIGINT,
  total DOUBLE,
  smallest DOUBLE,
  largest DOUBLE,
  invocations BIGINT,
  errors BIGINT
);

-- The execution times of function_invocations per hour, project, function and value bin, sorted:
-- an exact p95/p99 of the 1day and 7day intervals reads the lists of the one bin holding its
-- rank instead of every invocation of the window.
CREATE TABLE IF NOT EXISTS function_invocation_values (
  hour TIMESTAMPTZ,
  project_ref VARCHAR,
  function_id VARCHAR,
  value_bin SMALLINT,
  execution_times DOUBLE[]
);

-- One row per edge_logs request element, with the API areas its path contains.
CREATE TABLE IF NOT EXISTS edge_requests (
  "timestamp" TIMESTAMPTZ,
  url VARCHAR,
  rest BOOLEAN,
  storage BOOLEAN,
  auth BOOLEAN,
  realtime BOOLEAN
);

-- edge_requests counted per hour, URL and areas: the daily interval matches the project regex
-- once per distinct URL of an hour instead of once per request.
CREATE TABLE IF NOT EXISTS edge_request_hours (
  hour TIMESTAMPTZ,
  url VARCHAR,
  rest BOOLEAN,
  storage BOOLEAN,
  auth BOOLEAN,
  realtime BOOLEAN,
  requests BIGINT
);
