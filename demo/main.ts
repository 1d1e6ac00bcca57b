// npm run demo — the same read workload, offered at the same open-loop rate,
// through plain @azure/cosmos, through each hedging mode and (on the
// emulator) through the oracle, side by side, while the preferred region
// first straggles and then browns out. Prints a table and writes SVG charts.
import { resolve } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { percentileBarsChart, servingRegionChart, timeSeriesChart, writeCharts } from "../bench/support/charts.js";
import { ms } from "../bench/support/stats.js";
import { markdownTable } from "../bench/support/table.js";
import { describeLoad, runOpenLoop } from "../bench/support/openLoop.js";
import type { OfferedLoad } from "../bench/support/openLoop.js";
import { faultWindows, perSecond, perSecondPercentile, runTimeline } from "../bench/support/timeline.js";
import type { FinishedTimeline, ModeTimeline, Phase, TimelineMode } from "../bench/support/timeline.js";
import type { DemoAccount } from "./account.js";
import { emulatorAccount, realAccount } from "./account.js";
import { ChargeLedger } from "../bench/support/chargeLedger.js";
import { chargeOf, describeRead, disposeAll, fixedMode, modeClientOptions, oracleMode, plainMode } from "../bench/support/modes.js";
import type { ModeSpec } from "../bench/support/modes.js";
import { adaptiveMode, thompsonMode } from "../bench/support/benchModes.js";
import { onsetLine, secondP99s, sweepMode } from "../bench/support/hindsight.js";

/**
 * The fixed threshold (one hedge) that the bench's straggler case found best
 * in hindsight (bench/results/adaptive.md: 25 ms in run 1, 35 ms in run 2): the demo cannot sweep, so it
 * shows that line as the yardstick beside the learner.
 */
const hindsightBestMs = 25;

const outputFolder = resolve(process.env["DEMO_OUTPUT"] ?? "demo-output");

/**
 * Every mode is offered the same open-loop load, so a slow mode does not send
 * fewer reads exactly while it is slow; 30 reads a second per mode keeps the
 * process well inside what a busy 2-core machine gives it (an open loop that
 * falls behind never catches up).
 */
const load: OfferedLoad = { ratePerSecond: 30, arrivals: "poisson", seed: 11, maxInFlight: 256 };
const warmUpMs = 2000;

/** Plain @azure/cosmos and each hedging mode of the package, side by side; on the emulator also the oracle, the yardstick. */
function demoModes(account: DemoAccount): ModeSpec[] {
  const modes = [plainMode, fixedMode(100), { ...sweepMode(hindsightBestMs), name: `fixed ${hindsightBestMs} ms, one hedge (hindsight-best in the bench)` }, adaptiveMode(), thompsonMode];
  return account.emulator === undefined ? modes : [...modes, oracleMode];
}

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
    const answered = timeline.reads.filter((read) => read.second + read.latencyMs / 1000 >= second - 1);
    const worst = answered.reduce((max, read) => Math.max(max, read.latencyMs), 0);
    return `${timeline.name}: ${answered.length} answered, max ${ms(worst)} ms`;
  });
  return `[${second.toFixed(0).padStart(3)} s | ${phase.padEnd(32)}] ${recent.join(" | ")}`;
}

function summaryTable(
  timelines: readonly FinishedTimeline[],
  charges: readonly number[],
  oracleName: string | undefined,
  seconds: number,
): string {
  const oracle = timelines.find((timeline) => timeline.name === oracleName)?.load.latencies.summary();
  const ratio = (value: number, yardstick: number | undefined): string =>
    yardstick === undefined || !(yardstick > 0) ? "-" : (value / yardstick).toFixed(2);
  return markdownTable(
    [
      "mode",
      "offered",
      "reads",
      "p50",
      "p95",
      "p99",
      "p99.9",
      "max",
      "÷ oracle p50 / p99",
      "requests/read",
      "RU/read",
      "RU/s",
      "start lag p99",
      "bound hits",
      "errors",
    ],
    timelines.map((timeline, m) => {
      const summary = timeline.load.latencies.summary();
      const reads = Math.max(1, timeline.reads.length);
      const extra = timeline.reads.reduce((sum, read) => sum + read.extraRequests, 0);
      const charge = charges[m] ?? 0;
      return [
        timeline.name,
        `${timeline.load.ratePerSecond}/s`,
        String(summary.count),
        ...[summary.p50, summary.p95, summary.p99, summary.p999, summary.max].map((value) => `${ms(value)} ms`),
        `${ratio(summary.p50, oracle?.p50)} / ${ratio(summary.p99, oracle?.p99)}`,
        (1 + extra / reads).toFixed(3),
        (charge / reads).toFixed(2),
        (charge / seconds).toFixed(1),
        `${ms(timeline.load.startLag.valueAt(99))} ms`,
        String(timeline.load.boundHits),
        String(timeline.load.errors),
      ];
    }),
  );
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
  else console.log("(No oracle on a real account: only the emulator can say in advance which region will answer first.)");
  const timeline = phases(account);
  const specs = demoModes(account);
  const oracleName = specs.find((mode) => mode.kind === "oracle")?.name;
  const ledgers = specs.map((mode) => (mode.kind === "hedging" ? new ChargeLedger() : undefined));
  const clients = specs.map((mode, m) => new CosmosClient(modeClientOptions(mode, account.baseOptions, account.emulator, ledgers[m])));
  try {
    const modes: TimelineMode[] = specs.map((mode, m) => {
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
    // Warm each client at the offered rate (connections, caches, learned thresholds) before anything is timed.
    await Promise.all(modes.map((mode) => runOpenLoop({ ...load, durationMs: warmUpMs }, mode.read)));
    for (const ledger of ledgers) ledger?.clear();
    const total = timeline.reduce((sum, phase) => sum + phase.seconds, 0);
    console.log(`${modes.length} modes side by side for ${total} s, ${describeLoad(load)}:`);
    const results = await runTimeline(modes, timeline, {
      load,
      onSecond: (second, phase, timelines) => console.log(progressLine(second, phase, timelines)),
    });
    const reads = results[0]?.load.latencies.summary().count ?? 0;
    console.log(
      `\n${describeLoad(load)}; latency from each read's scheduled start (start lag: how late the generator ` +
        `started reads, the machine's own stalls). ${reads} reads per mode: p99 rests on the slowest ` +
        `${Math.round(reads / 100)} reads, p99.9 on the slowest ${(reads / 1000).toFixed(1)}.\n`,
    );
    const charges = await Promise.all(results.map((result, m) => chargeOf(ledgers[m], result.reads)));
    console.log(`${summaryTable(results, charges, oracleName, total)}\n`);
    const stragglersFrom = timeline[0]?.seconds ?? 0;
    const episode = (result: FinishedTimeline) => ({
      mode: result.name,
      secondP99s: secondP99s(
        result.reads.map((read) => ({ scheduledMs: read.second * 1000, latencyMs: read.latencyMs })),
        stragglersFrom * 1000,
        (stragglersFrom + (timeline[1]?.seconds ?? 0)) * 1000,
      ),
    });
    const fixed100 = results.find((result) => result.name === fixedMode(100).name);
    console.log(`${onsetLine(results.filter((result) => result.name.startsWith("adaptive")).map(episode), fixed100 === undefined ? undefined : episode(fixed100))}\n`);
    const windows = faultWindows(timeline);
    const reference = oracleName === undefined ? {} : { reference: oracleName };
    const written = await writeCharts(outputFolder, {
      "latency-over-time": timeSeriesChart({
        title: `p99 latency per second (about ${load.ratePerSecond} reads each), from each read's scheduled start`,
        yTitle: "p99 latency (ms, log)",
        values: perSecondPercentile(results, 99),
        windows,
        logScale: true,
        ...reference,
      }),
      "serving-region-over-time": servingRegionChart({ values: servingShares(results), windows }),
      "request-charge-over-time": timeSeriesChart({
        title: `Request charge per second (arms answered by the time each read returned), every mode offered ${load.ratePerSecond} reads/s`,
        yTitle: "RU per second",
        values: perSecond(results, (read) => read.charge, "sum"),
        windows,
        ...reference,
      }),
      "request-units-per-read-over-time": timeSeriesChart({
        title: "Request units per read (arms answered by the time the read returned; the table adds drained losers)",
        yTitle: "RU per read",
        values: perSecond(results, (read) => read.charge, "mean"),
        windows,
        ...reference,
      }),
      "requests-per-read-over-time": timeSeriesChart({
        title: "Requests sent per read (every arm, losers included)",
        yTitle: "requests per read",
        values: perSecond(results, (read) => 1 + read.extraRequests, "mean"),
        windows,
        ...reference,
      }),
      "percentiles-per-mode": percentileBarsChart(
        results.flatMap((result) => {
          const summary = result.load.latencies.summary();
          return (
            [
              ["p50", summary.p50],
              ["p75", summary.p75],
              ["p95", summary.p95],
              ["p99", summary.p99],
              ["p99.9", summary.p999],
            ] as const
          ).map(([percentile, value]) => ({ mode: `${result.name} (${summary.count} reads)`, percentile, ms: Math.max(0.1, value) }));
        }),
        oracleName === undefined ? undefined : `${oracleName} (${results.find((result) => result.name === oracleName)?.load.latencies.summary().count ?? 0} reads)`,
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
