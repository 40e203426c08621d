// Time series drawn with uPlot (index.html loads its build as the global `uPlot`): any endpoint
// whose row is one time and numbers (time-series.js), a chart per group of its columns. Axes and
// legends are in UTC. Each chart element carries data-points (the points drawn).
import { h } from "./dom.js";

const { uPlot } = globalThis;
const HEIGHT = 220;
const UTC = (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC");

/** Epoch seconds of a TIMESTAMP ("…00.000000Z") or a DATETIME (UTC, no zone). */
function epochSeconds(value) {
  const millis = value.replace(/(\.\d{3})\d+/, "$1");
  return Date.parse(/(Z|[+-]\d\d:\d\d)$/.test(millis) ? millis : `${millis}Z`) / 1000;
}

const MINUTE = 60;
const HOUR = 3_600;
const DAY = 86_400;

// The steps a time axis may take, in seconds, each a round one at its scale; ticks fall on their
// multiples since the epoch (UTC midnights for steps of days).
const TIME_STEPS = [
  ...[1, 2, 5, 10, 15, 30],
  ...[1, 2, 5, 10, 15, 30].map((n) => n * MINUTE),
  ...[1, 2, 3, 4, 6, 8, 12].map((n) => n * HOUR),
  ...[1, 2, 3, 4, 5, 7, 10, 15, 30, 60, 90, 180, 365].map((n) => n * DAY),
];

/**
 * Ticks at the multiples of the step uPlot picked that fall in the window. The step is the first
 * that leaves room for a label, so on a narrow chart it may be more than half the window and give
 * one tick only; then the window's two ends, which are the first and last points, are the ticks.
 */
function timeSplits(_plot, _axis, min, max, step) {
  const ticks = [];
  for (let tick = Math.ceil(min / step) * step; tick <= max; tick += step) ticks.push(tick);
  return ticks.length >= 2 || max <= min ? ticks : [min, max];
}

/**
 * Tick labels in UTC, 24-hour, as fine as the ticks: dates for steps of a day or more on midnights,
 * else the time of day (with seconds where a tick is not on a minute), with the date under a tick
 * that starts a new day.
 */
function utcTicks(_plot, ticks, _axis, _space, step) {
  const seconds = ticks.some((tick) => tick % MINUTE !== 0);
  const dates = step >= DAY && ticks.every((tick) => tick % DAY === 0);
  return ticks.map((tick, i) => {
    const iso = new Date(tick * 1000).toISOString();
    const date = iso.slice(0, 10);
    if (dates) return date;
    const time = seconds ? iso.slice(11, 19) : iso.slice(11, 16);
    const newDay = i === 0 || date !== new Date(ticks[i - 1] * 1000).toISOString().slice(0, 10);
    return newDay ? `${time}\n${date}` : time;
  });
}

// uPlot's default font (its first choices), named so that the labels can be measured in it.
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
// Between two labels at least, so that they read as two.
const LABEL_GAP = 16;

/**
 * The width of the widest label utcTicks makes: a date, or a time with seconds, in the widest digit
 * of the font. uPlot draws labels on a canvas and knows their widths only once it has drawn them.
 */
function widestTimeLabel() {
  const context = document.createElement("canvas").getContext("2d");
  context.font = AXIS_FONT;
  const width = (text) => context.measureText(text).width;
  const digit = [..."0123456789"].reduce((widest, d) => (width(d) > width(widest) ? d : widest));
  return Math.ceil(
    Math.max(width("0000-00-00".replaceAll("0", digit)), width("00:00:00".replaceAll("0", digit))),
  );
}

// Values are drawn from 0 (or from below it, when some are negative): an axis starting higher would
// misstate the areas under them.
const FROM_ZERO = {
  range: (_plot, min, max) => uPlot.rangeNum(Math.min(0, min), max, 0.1, true),
};

/**
 * One uPlot chart, made on its first draw and given new data after that. `y`: the y axis's options
 * (its label at least), `yScale`: the y scale's.
 */
function chart(title, series, { y, yScale = FROM_ZERO }) {
  const element = h("div", { class: "chart", "data-title": title });
  let plot;
  const resize = new ResizeObserver(() =>
    plot?.setSize({ width: element.clientWidth, height: HEIGHT }),
  );
  resize.observe(element);
  const draw = (data) => {
    element.dataset.points = String(data[0].length);
    if (plot) return plot.setData(data);
    const widestLabel = widestTimeLabel();
    plot = new uPlot(
      {
        title,
        width: element.clientWidth || 800,
        height: HEIGHT,
        tzDate: UTC,
        // A time label is centred on its tick, and the last tick may fall on the plot's right edge:
        // half the widest label past it stays on the canvas. (uPlot's own padding there is half
        // the y axis's default width, narrower than a date.) The other sides keep uPlot's.
        padding: [null, Math.ceil(widestLabel / 2), null, null],
        scales: { x: { time: true }, y: yScale },
        axes: [
          {
            label: "UTC",
            values: utcTicks,
            font: AXIS_FONT,
            // The least room between two ticks: uPlot picks the step from it alone, so it holds
            // the widest label at any interval and chart width, and a gap.
            space: widestLabel + LABEL_GAP,
            incrs: TIME_STEPS,
            splits: timeSplits,
          },
          { size: 60, ...y },
        ],
        series: [{ label: "UTC", value: "{YYYY}-{MM}-{DD} {HH}:{mm}:{ss}" }, ...series],
      },
      data,
      element,
    );
  };
  return { element, draw };
}

// Execution times have a long tail (p99, max) that flattens the rest on a linear axis. asinh is
// log-like and takes 0; ticks at 0 and the powers of ten, the top at the next one.
const POWERS_OF_TEN = [0, 1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7];
const LOG_LIKE_SCALE = {
  distr: 4,
  range: (_plot, _min, max) => [0, POWERS_OF_TEN.find((power) => power >= max) ?? max],
};
const LOG_LIKE_AXIS = {
  splits: (_plot, _axis, _min, max) => POWERS_OF_TEN.filter((power) => power <= max),
  // Every power labelled: uPlot's log-axis default would label only some of them.
  filter: (_plot, splits) => splits,
};

// One colour per series of a chart, in column order; a ninth series takes the first again.
const COLOURS = [
  "#2563eb",
  "#dc2626",
  "#16a34a",
  "#d97706",
  "#7c3aed",
  "#0891b2",
  "#db2777",
  "#4b5563",
];

/**
 * A time series (time-series.js's `timeSeriesOf`): one chart per group of its numeric columns,
 * each column a line (the first filled), x its time column read as UTC.
 */
export function timeSeriesView({ time, charts }) {
  const drawn = charts.map(({ title, unit, columns, statistics }) => {
    const series = columns.map((column, i) => ({
      label: column,
      stroke: COLOURS[i % COLOURS.length],
      width: 1.5,
      ...(i === 0 && columns.length > 1 && { fill: `${COLOURS[0]}14` }),
    }));
    // The y axis says the unit only, one word: a longer label may not fit the axis's height.
    const options = statistics
      ? { y: { label: unit, ...LOG_LIKE_AXIS }, yScale: LOG_LIKE_SCALE }
      : { y: { label: unit } };
    const heading = `${title} per bucket${statistics ? " (asinh scale)" : ""}`;
    return { columns, chart: chart(heading, series, options) };
  });
  const element = h("div", { class: "charts" }, ...drawn.map(({ chart }) => chart.element));
  const draw = (rows) => {
    const x = rows.map((row) => epochSeconds(row[time]));
    for (const { columns, chart } of drawn) {
      chart.draw([x, ...columns.map((column) => rows.map((row) => row[column]))]);
    }
  };
  return { element, draw };
}
