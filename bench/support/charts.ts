import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as vega from "vega";
import { compile } from "vega-lite";
import type { TopLevelSpec } from "vega-lite";

/** A span of the run to shade on time charts, such as a fault window. */
export interface TimeWindow {
  label: string;
  fromSeconds: number;
  toSeconds: number;
}

/**
 * Renders a Vega-Lite spec to SVG without a browser. Vega-Lite is a
 * well-kept grammar of graphics whose SVG renderer runs headless in Node, so
 * the charts need neither canvas bindings nor hand-drawn SVG.
 */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Writes each chart as `<name>.svg` into the folder and returns the paths. */
export async function writeCharts(folder: string, charts: Record<string, TopLevelSpec>): Promise<string[]> {
  mkdirSync(folder, { recursive: true });
  const paths: string[] = [];
  for (const [name, spec] of Object.entries(charts)) {
    const path = join(folder, `${name}.svg`);
    writeFileSync(path, await renderSvg(spec));
    paths.push(path);
  }
  return paths;
}

const faultColor = "#d62728";

/** The fault windows shaded, each with its label along the top of the plot. */
function windowLayers(windows: readonly TimeWindow[]): object[] {
  const values = windows.map((window) => ({ ...window, middle: (window.fromSeconds + window.toSeconds) / 2 }));
  return [
    {
      data: { values },
      mark: { type: "rect", opacity: 0.1, color: faultColor },
      encoding: {
        x: { field: "fromSeconds", type: "quantitative" },
        x2: { field: "toSeconds" },
      },
    },
    {
      data: { values },
      mark: { type: "text", baseline: "top", dy: 4, fontSize: 11, color: "#8c1d1d" },
      encoding: {
        x: { field: "middle", type: "quantitative" },
        y: { value: 0 },
        text: { field: "label" },
      },
    },
  ];
}

// Red is left out: it shades the fault windows.
const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];

/** One colour per series in order of appearance; the reference series (the oracle) in black. */
function seriesColors(names: readonly string[], reference: string | undefined): { domain: string[]; range: string[] } {
  const domain = [...new Set(names)];
  let next = 0;
  return { domain, range: domain.map((name) => (name === reference ? "#000000" : palette[next++ % palette.length]!)) };
}

/**
 * A line per series over time (seconds), with the fault windows shaded; the
 * reference series, when given, is a dashed black line over the others.
 */
export function timeSeriesChart(options: {
  title: string;
  yTitle: string;
  values: readonly { second: number; series: string; value: number }[];
  windows: readonly TimeWindow[];
  logScale?: boolean;
  reference?: string;
}): TopLevelSpec {
  const colors = seriesColors(
    options.values.map((value) => value.series),
    options.reference,
  );
  const encoding = {
    x: { field: "second", type: "quantitative", title: "time (s)" },
    y: {
      field: "value",
      type: "quantitative",
      title: options.yTitle,
      ...(options.logScale ? { scale: { type: "log" } } : {}),
    },
    color: { field: "series", type: "nominal", title: null, scale: colors, sort: colors.domain, legend: { labelLimit: 320 } },
  };
  const isReference = (value: { series: string }): boolean => value.series === options.reference;
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: options.title,
    width: 720,
    height: 300,
    layer: [
      ...windowLayers(options.windows),
      {
        data: { values: options.values.filter((value) => !isReference(value)).map((value) => ({ ...value })) },
        mark: { type: "line", point: false, strokeWidth: 1.5 },
        encoding,
      },
      {
        data: { values: options.values.filter(isReference).map((value) => ({ ...value })) },
        mark: { type: "line", point: false, strokeWidth: 2, strokeDash: [6, 3] },
        encoding,
      },
    ],
  } as TopLevelSpec;
}

// No red among the regions either: the strip above the panels is red.
const regionPalette = ["#4c78a8", "#54a24b", "#b279a2", "#f58518", "#72b7b2", "#9d755d", "#bab0ac"];

/**
 * The shares with each mode's last second repeated one second later: a
 * step drawn from a point reaches the next point only, so without it the
 * last second of every panel would not show.
 */
function closedSteps<T extends { second: number; mode: string }>(values: readonly T[]): T[] {
  const last = new Map<string, number>();
  for (const value of values) last.set(value.mode, Math.max(last.get(value.mode) ?? value.second, value.second));
  return [...values, ...values.filter((value) => value.second === last.get(value.mode)).map((value) => ({ ...value, second: value.second + 1 }))];
}

/**
 * One stacked panel per mode, in the order given: the share of reads each
 * region answered, second by second. A strip above the panels names the
 * fault windows (the panels are filled, so shading them would hide the
 * regions' colours); dashed rules carry the windows' edges down every panel.
 */
export function servingRegionChart(options: {
  values: readonly { second: number; mode: string; region: string; share: number }[];
  windows: readonly TimeWindow[];
  modes: readonly string[];
  seconds: number;
}): TopLevelSpec {
  const x = { type: "quantitative", scale: { domain: [0, options.seconds], nice: false } };
  const edges = options.modes.flatMap((mode) =>
    options.windows.flatMap((window) => [window.fromSeconds, window.toSeconds].map((edge) => ({ kind: "edge", mode, edge }))),
  );
  const windows = options.windows.map((window) => ({ ...window, middle: (window.fromSeconds + window.toSeconds) / 2 }));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: "Which region answered each read, per second",
    vconcat: [
      {
        width: 720,
        height: 24,
        data: { values: windows },
        layer: [
          {
            mark: { type: "rect", color: faultColor, opacity: 0.25 },
            encoding: { x: { ...x, field: "fromSeconds", axis: null }, x2: { field: "toSeconds" } },
          },
          {
            mark: { type: "text", fontSize: 11, color: "#8c1d1d" },
            encoding: { x: { ...x, field: "middle", axis: null }, text: { field: "label" } },
          },
        ],
      },
      {
        data: { values: [...closedSteps(options.values).map((value) => ({ ...value, kind: "share" })), ...edges] },
        facet: {
          row: {
            field: "mode",
            type: "nominal",
            title: null,
            sort: [...options.modes],
            header: { labelAngle: 0, labelOrient: "top", labelAnchor: "start", labelFontSize: 12, labelFontWeight: "bold", labelPadding: 2 },
          },
        },
        spacing: 14,
        spec: {
          width: 720,
          height: 60,
          layer: [
            {
              transform: [{ filter: "datum.kind === 'share'" }],
              mark: { type: "area", interpolate: "step-after" },
              encoding: {
                x: { ...x, field: "second", title: "time (s)" },
                y: { field: "share", type: "quantitative", stack: "normalize", title: null, axis: { format: "%", values: [0, 0.5, 1] } },
                color: { field: "region", type: "nominal", title: "answered by", scale: { range: regionPalette } },
              },
            },
            {
              transform: [{ filter: "datum.kind === 'edge'" }],
              mark: { type: "rule", strokeDash: [4, 3], color: "#333333" },
              encoding: { x: { ...x, field: "edge" } },
            },
          ],
        },
      },
    ],
  } as TopLevelSpec;
}

/** Grouped bars: each percentile per mode, the reference mode (the oracle) in black. */
export function percentileBarsChart(
  values: readonly { mode: string; percentile: string; ms: number }[],
  reference?: string,
): TopLevelSpec {
  const colors = seriesColors(
    values.map((value) => value.mode),
    reference,
  );
  const top = 10 ** Math.ceil(Math.log10(Math.max(10, ...values.map((value) => value.ms)) * 1.2));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: "Latency percentiles per mode, over the whole run",
    width: 120,
    height: 260,
    data: { values: values.map((value) => ({ ...value, ms: Math.max(1, value.ms) })) },
    mark: "bar",
    encoding: {
      column: { field: "percentile", type: "ordinal", sort: ["p50", "p75", "p95", "p99", "p99.9"], title: null },
      x: { field: "mode", type: "nominal", axis: { labels: false, ticks: false, title: null }, sort: colors.domain },
      // Bars on a log scale need an explicit base; 1 ms sits below every figure worth showing. The top is set
      // above the tallest bar: a log scale's nice top can fall just under it (1000 for 1006) and cut it off.
      y: { field: "ms", type: "quantitative", title: "latency (ms, log)", scale: { type: "log", domainMin: 1, domainMax: top, nice: false } },
      y2: { datum: 1 },
      color: { field: "mode", type: "nominal", title: "mode", scale: colors, sort: colors.domain, legend: { labelLimit: 320 } },
    },
  } as TopLevelSpec;
}
