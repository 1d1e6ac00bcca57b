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

function windowLayer(windows: readonly TimeWindow[]): object {
  return {
    data: { values: windows.map((window) => ({ ...window })) },
    mark: { type: "rect", opacity: 0.12, color: "#d62728" },
    encoding: {
      x: { field: "fromSeconds", type: "quantitative" },
      x2: { field: "toSeconds" },
    },
  };
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
      windowLayer(options.windows),
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

/** One stacked-area panel per mode: the share of requests each region served, over time. */
export function servingRegionChart(options: {
  values: readonly { second: number; mode: string; region: string; share: number }[];
  windows: readonly TimeWindow[];
}): TopLevelSpec {
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: "Serving region over time",
    data: { values: options.values.map((value) => ({ ...value })) },
    facet: { row: { field: "mode", type: "nominal", title: null } },
    spec: {
      width: 720,
      height: 90,
      mark: "area",
      encoding: {
        x: { field: "second", type: "quantitative", title: "time (s)" },
        y: { field: "share", type: "quantitative", stack: "normalize", title: "share", axis: { format: "%" } },
        color: { field: "region", type: "nominal", title: "region" },
      },
    },
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
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: "Latency percentiles per mode",
    width: 120,
    height: 260,
    data: { values: values.map((value) => ({ ...value, ms: Math.max(1, value.ms) })) },
    mark: "bar",
    encoding: {
      column: { field: "percentile", type: "ordinal", sort: ["p50", "p75", "p95", "p99", "p99.9"], title: null },
      x: { field: "mode", type: "nominal", axis: { labels: false, title: null }, sort: colors.domain },
      // Bars on a log scale need an explicit base; 1 ms sits below every figure worth showing.
      y: { field: "ms", type: "quantitative", title: "latency (ms, log)", scale: { type: "log", domainMin: 1 } },
      y2: { datum: 1 },
      color: { field: "mode", type: "nominal", title: "mode", scale: colors, sort: colors.domain, legend: { labelLimit: 320 } },
    },
  } as TopLevelSpec;
}
