// Which endpoints are time series, from their row's schema in the OpenAPI document: one time column
// (a TIMESTAMP, format date-time, or a DATETIME, format date-time-local: UTC without a zone) and
// every other column a number. Nothing here knows an endpoint: a definition's columns decide.

const TIME_FORMATS = ["date-time", "date-time-local"];

/** A column's JSON type, nullability aside. */
const typeOf = (column) => (Array.isArray(column.type) ? column.type[0] : column.type);

/** The forms a column's schema allows: one, or each of its anyOf/oneOf (a time also as a number). */
const formsOf = (column) => column.anyOf ?? column.oneOf ?? [column];

const isTime = (column) =>
  formsOf(column).some((form) => typeOf(form) === "string" && TIME_FORMATS.includes(form.format));
const isNumber = (column) =>
  !isTime(column) && formsOf(column).every((form) => ["integer", "number"].includes(typeOf(form)));

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
 * How `row` (the JSON Schema of one row) is charted: `time`, its time column, and `charts`, its
 * numeric columns grouped by the last word of their names, their `unit` (count and error_count,
 * the *_execution_time statistics, total_*_requests), each group a chart titled by the words its
 * columns end in alike, on a log-like axis when they are statistics of one quantity. Null when the
 * row is not one time and numbers: such an endpoint is shown as a table.
 */
export function timeSeriesOf(row) {
  const columns = Object.entries(row?.properties ?? {});
  const times = columns.filter(([, column]) => isTime(column));
  const values = columns.filter(([, column]) => isNumber(column));
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
