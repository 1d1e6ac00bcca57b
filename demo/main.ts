// npm run demo — the same read workload through plain @azure/cosmos and
// through each hedging mode, side by side, while the preferred region first
// straggles and then browns out. Prints a table and writes SVG charts.
import { resolve } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { percentileBarsChart, servingRegionChart, timeSeriesChart, writeCharts } from "../bench/support/charts.js";
import { ms, percent } from "../bench/support/stats.js";
import { markdownTable } from "../bench/support/table.js";
import { faultWindows, perSecondPercentile, runTimeline } from "../bench/support/timeline.js";
import type { ModeTimeline, Phase, TimelineMode } from "../bench/support/timeline.js";
import type { DemoAccount } from "./account.js";
import { emulatorAccount, realAccount } from "./account.js";
import { describeRead, disposeAll, fixedMode, modeClientOptions, plainMode } from "../bench/support/modes.js";
import type { ModeSpec } from "../bench/support/modes.js";
import { adaptiveMode, thompsonMode } from "../bench/support/benchModes.js";

const outputFolder = resolve(process.env["DEMO_OUTPUT"] ?? "demo-output");
const concurrencyPerMode = 4;

/** Plain @azure/cosmos and each hedging mode of the package, side by side. */
const demoModes: readonly ModeSpec[] = [plainMode, fixedMode(100), adaptiveMode(), thompsonMode];

function phases(account: DemoAccount): Phase[] {
  return [
    { label: "healthy", seconds: 4 },
    { label: "stragglers: 10% of reads +1 s", seconds: 12, fault: true, begin: () => account.degrader.stragglers(0.1, 1000) },
    { label: "healthy", seconds: 4 },
    { label: "brown-out: every read +300 ms", seconds: 12, fault: true, begin: () => account.degrader.brownOut(300) },
    { label: "recovered", seconds: 8 },
  ];
}

function progressLine(second: number, phase: string, timelines: readonly ModeTimeline[]): string {
  const recent = timelines.map((timeline) => {
    const last = timeline.reads.filter((read) => read.second >= second - 1);
    const worst = last.reduce((max, read) => Math.max(max, read.latencyMs), 0);
    return `${timeline.name}: ${last.length} reads, max ${ms(worst)} ms`;
  });
  return `[${second.toFixed(0).padStart(3)} s | ${phase.padEnd(32)}] ${recent.join(" | ")}`;
}

function summaryTable(timelines: readonly ModeTimeline[]): string {
  return markdownTable(
    ["mode", "reads", "p50", "p75", "p95", "p99", "p99.9", "max", "extra requests", "request charge (arms that answered)", "errors"],
    timelines.map((timeline) => {
      const summary = timeline.latencies.summary();
      const extra = timeline.reads.reduce((sum, read) => sum + read.extraRequests, 0);
      const charge = timeline.reads.reduce((sum, read) => sum + read.charge, 0);
      return [
        timeline.name,
        String(timeline.reads.length),
        ...[summary.p50, summary.p75, summary.p95, summary.p99, summary.p999, summary.max].map((value) => `${ms(value)} ms`),
        percent(extra / Math.max(1, timeline.reads.length)),
        `${charge.toFixed(0)} RU`,
        String(timeline.reads.filter((read) => read.failed).length),
      ];
    }),
  );
}

function perSecondSums(timelines: readonly ModeTimeline[], value: (read: ModeTimeline["reads"][number]) => number) {
  return timelines.flatMap((timeline) => {
    const sums = new Map<number, number>();
    for (const read of timeline.reads) sums.set(Math.floor(read.second), (sums.get(Math.floor(read.second)) ?? 0) + value(read));
    return [...sums].sort((a, b) => a[0] - b[0]).map(([second, sum]) => ({ second, series: timeline.name, value: sum }));
  });
}

function servingShares(timelines: readonly ModeTimeline[]) {
  return timelines.flatMap((timeline) => {
    const counts = new Map<string, number>();
    for (const read of timeline.reads) {
      const key = `${Math.floor(read.second)}|${read.region ?? "failed"}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].map(([key, count]) => {
      const [second, region] = key.split("|") as [string, string];
      return { second: Number(second), mode: timeline.name, region, share: count };
    });
  });
}

async function main(): Promise<void> {
  const endpoint = process.env["COSMOS_ENDPOINT"];
  const key = process.env["COSMOS_KEY"];
  const account = endpoint && key ? await realAccount(endpoint, key) : await emulatorAccount();
  console.log(`Running against ${account.description}.`);
  if (!(endpoint && key)) console.log("(Set COSMOS_ENDPOINT and COSMOS_KEY to run against a real account instead.)");
  const timeline = phases(account);
  const clients = demoModes.map((mode) => new CosmosClient(modeClientOptions(mode, account.baseOptions)));
  try {
    const modes: TimelineMode[] = demoModes.map((mode, m) => {
      const container = account.container(clients[m]!);
      return {
        name: mode.name,
        read: async (index) => {
          const id = index % account.itemCount;
          const response = await container.item(`item-${id}`, `pk-${id % 20}`).read();
          return describeRead(response, account.regionOfEndpoint);
        },
      };
    });
    for (const mode of modes) await mode.read(0);
    const total = timeline.reduce((sum, phase) => sum + phase.seconds, 0);
    console.log(`${modes.length} modes side by side, ${concurrencyPerMode} reads in flight each, for ${total} s:`);
    const results = await runTimeline(modes, timeline, {
      concurrencyPerMode,
      onSecond: (second, phase, timelines) => console.log(progressLine(second, phase, timelines)),
    });
    console.log(`\n${summaryTable(results)}\n`);
    const windows = faultWindows(timeline);
    const written = await writeCharts(outputFolder, {
      "latency-over-time": timeSeriesChart({
        title: "p99 latency per second (fault windows shaded)",
        yTitle: "p99 latency (ms, log)",
        values: perSecondPercentile(results, 99),
        windows,
        logScale: true,
      }),
      "serving-region-over-time": servingRegionChart({ values: servingShares(results), windows }),
      "request-charge-over-time": timeSeriesChart({
        title: "Request charge per second (every arm that answered)",
        yTitle: "RU per second",
        values: perSecondSums(results, (read) => read.charge),
        windows,
      }),
      "percentiles-per-mode": percentileBarsChart(
        results.flatMap((result) => {
          const summary = result.latencies.summary();
          return (
            [
              ["p50", summary.p50],
              ["p75", summary.p75],
              ["p95", summary.p95],
              ["p99", summary.p99],
              ["p99.9", summary.p999],
            ] as const
          ).map(([percentile, value]) => ({ mode: result.name, percentile, ms: Math.max(0.1, value) }));
        }),
      ),
    });
    console.log(`Charts written to ${outputFolder}:`);
    for (const path of written) console.log(`  ${path}`);
  } finally {
    disposeAll(clients);
    await account.close();
  }
}

await main();
