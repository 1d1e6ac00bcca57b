// npm run demo — the same read workload, offered at the same open-loop rate,
// through plain @azure/cosmos, through each hedging mode and (on the
// emulator) through the oracle, side by side, while the preferred region
// first straggles and then browns out. Ends with a sentence per mode and a
// ranking that holds from run to run, and writes SVG charts.
import { resolve } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { percentileBarsChart, servingRegionChart, timeSeriesChart, writeCharts } from "../bench/support/charts.js";
import { ms } from "../bench/support/stats.js";
import { markdownTable } from "../bench/support/table.js";
import { describeLoad, runOpenLoop } from "../bench/support/openLoop.js";
import type { OfferedLoad } from "../bench/support/openLoop.js";
import { faultWindows, perSecondPercentile, runTimeline } from "../bench/support/timeline.js";
import type { FinishedTimeline, ModeTimeline, Phase, TimedRead, TimelineMode } from "../bench/support/timeline.js";
import type { DemoAccount } from "./account.js";
import { emulatorAccount, realAccount } from "./account.js";
import { ChargeLedger } from "../bench/support/chargeLedger.js";
import { describeRead, disposeAll, fixedMode, modeClientOptions, oracleMode, plainMode } from "../bench/support/modes.js";
import type { ModeSpec } from "../bench/support/modes.js";
import { adaptiveMode, thompsonMode } from "../bench/support/benchModes.js";
import { describeOutcome, excessOver, latenciesBetween, percentileEstimate, ranking } from "./summary.js";
import type { ModeOutcome } from "./summary.js";
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

/**
 * A generator starting reads this late (its p99) means the machine, not the
 * account, decides the latencies: a fixed threshold of 100 ms and a hedge
 * region 30 ms away are drowned in such stalls.
 */
const busyStartLagMs = 50;

/** Plain @azure/cosmos and each hedging mode of the package, side by side; on the emulator also the oracle, the yardstick. */
function demoModes(account: DemoAccount): ModeSpec[] {
  const modes = [plainMode, fixedMode(100), { ...sweepMode(hindsightBestMs), name: `fixed ${hindsightBestMs} ms, one hedge (hindsight-best in the bench)` }, adaptiveMode(), thompsonMode];
  return account.emulator === undefined ? modes : [...modes, oracleMode];
}

const stragglers = "stragglers: 10% of reads +1 s";
const brownOut = "brown-out: every read +300 ms";

/**
 * 20 s of each fault, 600 reads per mode: a p99 then rests on 6 reads, and
 * its interval is narrow enough to tell the modes apart that differ.
 */
function phases(account: DemoAccount): Phase[] {
  return [
    { label: "healthy", seconds: 4 },
    { label: stragglers, seconds: 20, fault: true, begin: () => account.degrader.stragglers(0.1, 1000) },
    { label: "healthy", seconds: 4 },
    { label: brownOut, seconds: 20, fault: true, begin: () => account.degrader.brownOut(300) },
    { label: "recovered", seconds: 6 },
  ];
}

/** Progress on one line, rewritten in place on a terminal; elsewhere (a log, CI) one line per phase. */
function progressReporter(totalSeconds: number): { update: (second: number, phase: string) => void; end: () => void } {
  let lastPhase: string | undefined;
  const interactive = process.stdout.isTTY === true;
  return {
    update: (second, phase) => {
      const line = `  ${second.toFixed(0).padStart(3)} s of ${totalSeconds} s: ${phase}`;
      if (interactive) process.stdout.write(`\r${line.padEnd(60)}`);
      else if (phase !== lastPhase) console.log(line);
      lastPhase = phase;
    },
    end: () => {
      if (interactive) process.stdout.write("\n");
    },
  };
}

/** The second (from the timeline's start) in which a read was answered. */
function answeredSecond(read: TimedRead): number {
  return Math.floor(read.second + read.latencyMs / 1000);
}

/**
 * Request units per read answered in each second, drained losers counted:
 * for a hedging mode from its ledger (a loser's charge arrives after its read
 * returned), else as each read reported it.
 */
function costPerReadBySecond(timeline: ModeTimeline, ledger: ChargeLedger | undefined, startedAt: number): { second: number; series: string; value: number }[] {
  const reads = new Map<number, number>();
  const charges = new Map<number, number>();
  for (const read of timeline.reads) {
    const second = answeredSecond(read);
    reads.set(second, (reads.get(second) ?? 0) + 1);
    if (ledger === undefined) charges.set(second, (charges.get(second) ?? 0) + read.charge);
  }
  const charged = ledger?.chargeBySecond(startedAt) ?? charges;
  return [...reads]
    .sort((a, b) => a[0] - b[0])
    .map(([second, count]) => ({ second, series: timeline.name, value: (charged.get(second) ?? 0) / count }));
}

/** Requests sent per read answered in each second, every arm counted. */
function requestsPerReadBySecond(timeline: ModeTimeline): { second: number; series: string; value: number }[] {
  const buckets = new Map<number, { reads: number; requests: number }>();
  for (const read of timeline.reads) {
    const bucket = buckets.get(answeredSecond(read)) ?? { reads: 0, requests: 0 };
    bucket.reads += 1;
    bucket.requests += 1 + read.extraRequests;
    buckets.set(answeredSecond(read), bucket);
  }
  return [...buckets].sort((a, b) => a[0] - b[0]).map(([second, { reads, requests }]) => ({ second, series: timeline.name, value: requests / reads }));
}

function summaryTable(timelines: readonly FinishedTimeline[], outcomes: readonly ModeOutcome[]): string {
  return markdownTable(
    ["mode", "reads", "p50", "p99", "p99.9", "stragglers: p99", "excess p99 (95 % interval)", "brown-out p50", "requests/read", "RU/read", "errors"],
    timelines.map((timeline, m) => {
      const summary = timeline.load.latencies.summary();
      const outcome = outcomes[m]!;
      const excess = outcome.stragglersExcessP99;
      return [
        timeline.name,
        String(summary.count),
        ...[summary.p50, summary.p99, summary.p999].map((value) => `${ms(value)} ms`),
        `${ms(outcome.stragglersP99.value)} ms`,
        `${ms(excess.value)} ms (${ms(excess.low)}-${ms(excess.high)})`,
        `${ms(outcome.brownOutP50.value)} ms`,
        outcome.requestsPerRead.toFixed(3),
        outcome.requestUnitsPerRead.toFixed(2),
        String(outcome.errors),
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
    const progress = progressReporter(total);
    const startedAt = performance.now();
    const results = await runTimeline(modes, timeline, { load, onSecond: (second, phase) => progress.update(second, phase) });
    progress.end();
    const settled = await Promise.all(ledgers.map((ledger) => ledger?.settledCharge()));

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
    const windowOf = (label: string) => windows.find((window) => window.label === label)!;
    // The oracle is the yardstick where there is one; on a real account, plain @azure/cosmos.
    const yardstickIndex = Math.max(0, results.findIndex((result) => result.name === (oracleName ?? plainMode.name)));
    const yardstickReads = results[yardstickIndex]!.reads;
    const straggling = windowOf(stragglers);
    const outcomes: ModeOutcome[] = results.map((result, m) => {
      const reads = Math.max(1, result.reads.length);
      const charge = settled[m]?.charge ?? result.reads.reduce((sum, read) => sum + read.charge, 0);
      return {
        name: result.name,
        stragglersP99: percentileEstimate(latenciesBetween(result.reads, straggling.fromSeconds, straggling.toSeconds), 0.99),
        stragglersExcessP99: percentileEstimate(excessOver(result.reads, yardstickReads, straggling.fromSeconds, straggling.toSeconds), 0.99),
        brownOutP50: percentileEstimate(latenciesBetween(result.reads, windowOf(brownOut).fromSeconds, windowOf(brownOut).toSeconds), 0.5),
        requestsPerRead: result.reads.reduce((sum, read) => sum + 1 + read.extraRequests, 0) / reads,
        requestUnitsPerRead: charge / reads,
        errors: result.load.errors,
      };
    });
    const yardstick = outcomes[yardstickIndex]!;
    const oracle = outcomes.find((outcome) => outcome.name === oracleName);
    const startLag = Math.max(...results.map((result) => result.load.startLag.valueAt(99)));
    console.log(`\n${summaryTable(results, outcomes)}\n`);
    console.log("What happened:");
    for (const outcome of outcomes) console.log(`- ${describeOutcome(outcome, yardstick, oracle)}`);
    console.log(
      `\nWith stragglers, best first by the p99 of each read's excess over the ${yardstick.name} read started with it ` +
        `(≈: 95 % intervals overlap, so this run cannot tell them apart):\n  ` +
        ranking(outcomes.filter((outcome) => outcome !== yardstick).map((outcome) => ({ name: outcome.name, estimate: outcome.stragglersExcessP99 }))),
    );
    console.log(
      `\nLatency runs from each read's scheduled start. The machine started reads up to ${ms(startLag)} ms late (p99 of the ` +
        `generator's start lag): its own stalls, which land on every mode at the same moment, so the read-by-read excess leaves them out.` +
        (settled.some((ledger) => (ledger?.drainsRunning ?? 0) > 0) ? " Some drains were still running when the charges were summed." : ""),
    );
    if (startLag > busyStartLagMs) {
      console.log(
        `\nThe machine was too busy for these figures to say much: reads started up to ${ms(startLag)} ms late, more than the ` +
          `${busyStartLagMs} ms a hedge's head start is measured in. Run it again when the machine is quieter.`,
      );
    }

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
      "serving-region-over-time": servingRegionChart({ values: servingShares(results), windows, modes: results.map((result) => result.name), seconds: total }),
      "cost-per-read-over-time": timeSeriesChart({
        title: "Request units per read, by the second each read was answered (drained losers counted)",
        yTitle: "RU per read",
        values: results.flatMap((result, m) => costPerReadBySecond(result, ledgers[m], startedAt)),
        windows,
        ...reference,
      }),
      "requests-per-read-over-time": timeSeriesChart({
        title: "Requests sent per read, by the second each read was answered (every arm, losers included)",
        yTitle: "requests per read",
        values: results.flatMap((result) => requestsPerReadBySecond(result)),
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
    console.log(`\nCharts written to ${outputFolder}:`);
    for (const path of written) console.log(`  ${path}`);
  } finally {
    disposeAll(clients);
    await account.close();
  }
}

await main();
