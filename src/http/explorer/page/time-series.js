// Which endpoints are time series: one time column, as the listing names them (`time_columns`), and
// every other column a number, as the row's schema in the OpenAPI document types it. Nothing here
// knows an endpoint: a definition's columns decide.

/** A column's JSON type, nullability aside. */
const typeOf = (column) => (Array.isArray(column.type) ? column.type[0] : column.type);

const isNumber = (column) => ["integer", "number"].includes(typeOf(column));

// Statistics of one quantity (min_execution_time … p99_execution_time): their tail (p99, max) would
// flatten the rest on a linear axis.
const STATISTIC = /^(min|max|avg|mean|median|p\d+)_/;

/** The words of a column's name, split at underscores. */
const words = (name) => name.split("_");

/** The words the names of `columns` end in alike: `execution_time` of its min_ … max_. */
function sharedEnding(columns) {
  const [first, ...rest] = columns.map(words);
  let length = 0;
  while (
    length < first.length &&
    rest.every((other) => other.at(-1 - length) === first.at(-1 - length))
  ) {
    length++;
  }
  return first.slice(first.length - length).join("_");
}

/**
 * How `row` (the JSON Schema of one row, whose time columns are `timeColumns`) is charted: `time`,
 * its time column, and `charts`, its
 * numeric columns grouped by the last word of their names, their `unit` (count and error_count,
 * the *_execution_time statistics, total_*_requests), each group a chart titled by the words its
 * columns end in alike, on a log-like axis when they are statistics of one quantity. Null when the
 * row is not one time and numbers: such an endpoint is shown as a table.
 */
export function timeSeriesOf(row, timeColumns) {
  const columns = Object.entries(row?.properties ?? {});
  const times = columns.filter(([name]) => timeColumns.includes(name));
  const values = columns.filter(
    ([name, column]) => !timeColumns.includes(name) && isNumber(column),
  );
  if (times.length !== 1 || values.length === 0 || values.length !== columns.length - 1) {
    return null;
  }
  const groups = Map.groupBy(
    values.map(([name]) => name),
    (name) => words(name).at(-1),
  );
  const charts = [...groups].map(([word, names]) => ({
    title: sharedEnding(names),
    unit: word,
    columns: names,
    statistics: names.length > 1 && names.every((name) => STATISTIC.test(name)),
  }));
  return { time: times[0][0], charts };
}
