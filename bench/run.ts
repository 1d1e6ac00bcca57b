// npm run bench — every benchmark in one run, all modes side by side, so that
// ratios hold on a noisy machine. Every latency case offers each mode the same
// open-loop load; the overhead suite (throughput) and the WAN suite (the
// connections losers cost, at a fixed concurrency) run closed-loop. Prints
// the tables and writes
// bench/results/latest.json (raw, not committed) and latest.md (committed).
// Every latency case also runs a sweep of fixed thresholds on the same seeded
// workload and prints the hindsight-best one beside the adaptive modes.
// `-- --only latency,wan --out bench/results/run.md` runs those suites alone
// into another file (latency: the count-based cases and the brown-out).
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { adaptiveMode, benchModes } from "./support/benchModes.js";
import type { ModeSpec } from "./support/modes.js";
import { coldStartTable, defaultColdStartSettings, runColdStartSuite } from "./suites/coldStart.js";
import { clientMemoryTable, defaultOverheadSettings, measureClientMemory, overheadTable, runOverheadSuite } from "./suites/overhead.js";
import { defaultSdkOverheadSettings, runSdkOverheadSuite, sdkOverheadTables } from "./suites/sdkOverhead.js";
import { brownOutTable, countScenarios, mixedTail, stragglers, defaultBrownOut, defaultTailLoad, runBrownOut, runCountScenario, tailCaption, tailTable } from "./suites/tail.js";
import type { CountScenario, TailRow } from "./suites/tail.js";
import type { BrownOutRow } from "./suites/tail.js";
import { defaultWanSettings, runWanSuite, wanSection, wanSweepModes } from "./suites/wan.js";
import type { WanRow } from "./suites/wan.js";
import { hindsightSection, onsetLine, sweepModes, sweepPasses, sweepStepMs, sweepThresholdsMs } from "./support/hindsight.js";
import type { SweepPass, YardstickPoint } from "./support/hindsight.js";

const suites = ["latency", "coldStart", "overhead", "wan"] as const;
const { values } = parseArgs({ options: { only: { type: "string" }, out: { type: "string" } } });
const only = values.only === undefined ? suites : values.only.split(",").map((name) => name.trim());
for (const name of only) {
  if (!(suites as readonly string[]).includes(name)) throw new RangeError(`--only takes ${suites.join(", ")}; got ${name}`);
}
const runs = (suite: (typeof suites)[number]): boolean => only.includes(suite);

const resultsFolder = join("bench", "results");

function section(title: string, body: string): string {
  console.log(`\n## ${title}\n\n${body}`);
  return `## ${title}\n\n${body}\n`;
}

const sweepCaption = (what: string): string =>
  `The same case, the same seed and the same offered load, run again with a fixed threshold per mode ` +
  `(${sweepThresholdsMs.join(", ")} ms; thresholdStep ${sweepStepMs} ms, so one hedge per read), in two passes of four ` +
  `thresholds, each beside the learner (${sweepLearner.name}), ${what}. The hindsight-best fixed threshold is the point with ` +
  `the lowest p99 among those that spent no more extra requests than the learner in the same pass, and the learner's ratio ` +
  `is to it in that pass; its 95 % interval comes from resampling both modes' reads (2000 bootstrap rounds), so a ratio ` +
  `whose interval holds 1.0 is one the pass cannot tell from the hindsight-best. That best is the lowest of four p99s of ` +
  `the same reads, so it is biased low; the cross-validated best is free of that: the threshold with the lowest p99 on ` +
  `one half of the reads (alternate blocks of 50 reads) is measured on the other half, and the other way round.`;

const isLearner = (mode: string): boolean => mode.startsWith("adaptive");

/** The cases whose fault is a straggler episode, whose onset the bench times (the brown-out is timed too). */
const stragglerEpisodes: readonly CountScenario[] = [stragglers, mixedTail];

/** The learner every sweep pass runs beside its fixed thresholds. */
const sweepLearner = adaptiveMode();
const sweepGroups: ModeSpec[][] = sweepPasses(sweepLearner, sweepModes);

/** The passes of a sweep as the yardstick reads them: the learner's row of each pass and its fixed thresholds. */
function passesOf<R>(passes: readonly (readonly R[])[], point: (row: R) => YardstickPoint): SweepPass[] {
  return passes.map((rows) => {
    const points = rows.map(point);
    return { learner: points.find((each) => each.mode === sweepLearner.name)!, sweep: points.filter((each) => each.mode !== sweepLearner.name) };
  });
}

function tailPoint(row: TailRow): YardstickPoint {
  return { mode: row.mode, p50: row.latency.p50, p99: row.latency.p99, p999: row.latency.p999, extra: row.extraRequests, samples: row.latencySamples };
}

function brownOutPoint(row: BrownOutRow): YardstickPoint {
  return { mode: row.mode, p50: row.brownOutP50, p99: row.brownOutP99, extra: row.extraRequests, samples: row.brownOutSamples };
}

function wanPoint(row: WanRow): YardstickPoint {
  return { mode: row.mode, p50: row.latency.p50, p99: row.latency.p99, p999: row.latency.p999, extra: row.requestsPerRead - 1, samples: row.latencySamples };
}

const started = new Date();
const loadAverages: string[] = [`start ${loadavg().map((value) => value.toFixed(2)).join(" ")}`];
const noteLoad = (label: string): void => {
  loadAverages.push(`${label} ${loadavg().map((value) => value.toFixed(2)).join(" ")}`);
};
const parts: string[] = [];
const tail: TailRow[] = [];
const tailSweeps: TailRow[] = [];
let brownOut: BrownOutRow[] = [];
const brownOutSweep: BrownOutRow[] = [];
if (runs("latency")) {
  for (const scenario of countScenarios) {
    console.log(`Running "${scenario.name}" (${scenario.reads} point reads per mode at ${defaultTailLoad.ratePerSecond}/s)...`);
    const rows = await runCountScenario(scenario, benchModes);
    tail.push(...rows);
    console.log(`  ...and its sweep of fixed thresholds`);
    const sweep: TailRow[][] = [];
    for (const group of sweepGroups) sweep.push(await runCountScenario(scenario, group));
    tailSweeps.push(...sweep.flat());
    noteLoad(scenario.name);
    const learners = rows.filter((row) => isLearner(row.mode));
    const oracle = rows.find((row) => row.kind === "oracle");
    const yardstick = hindsightSection(
      passesOf(sweep, tailPoint),
      oracle === undefined ? undefined : tailPoint(oracle),
      sweepCaption(`each mode again on its own emulator, ${scenario.reads} reads per mode`),
    );
    const onset = !stragglerEpisodes.includes(scenario) ? "" : `\n\n${onsetLine(learners, rows.find((row) => row.mode === "fixed 100 ms"))}`;
    parts.push(section(`Tail latency: ${scenario.name}`, `${tailCaption(rows)}\n\n${tailTable(rows)}\n\n${yardstick}${onset}`));
  }

  console.log("Running the brown-out (every mode at once)...");
  brownOut = await runBrownOut(benchModes);
  console.log("  ...and its sweep of fixed thresholds");
  const brownOutPasses: BrownOutRow[][] = [];
  for (const group of sweepGroups) brownOutPasses.push(await runBrownOut(group));
  brownOutSweep.push(...brownOutPasses.flat());
  noteLoad("brown-out");
  const brownOutOracle = brownOut.find((row) => row.kind === "oracle");
  const brownOutLearners = brownOut.filter((row) => isLearner(row.mode));
  const brownOutYardstick = hindsightSection(
    passesOf(brownOutPasses, brownOutPoint),
    brownOutOracle === undefined ? undefined : brownOutPoint(brownOutOracle),
    sweepCaption("every mode of a pass at once on a fresh emulator; p50 and p99 over the reads from 5 s into the brown-out, extra requests over the whole run"),
  );
  const brownOutOnset = onsetLine(brownOutLearners, brownOut.find((row) => row.mode === "fixed 100 ms"));
  parts.push(section("Brown-out of the preferred region", `${brownOutTable(brownOut, defaultBrownOut)}\n\n${brownOutYardstick}\n\n${brownOutOnset}`));
}

let coldStart: Awaited<ReturnType<typeof runColdStartSuite>> | undefined;
if (runs("coldStart")) {
  console.log("Running the metadata cold start...");
  coldStart = await runColdStartSuite(defaultColdStartSettings);
  parts.push(section("Metadata cold start: time to first read of fresh clients", coldStartTable(coldStart)));
}

let overhead: Awaited<ReturnType<typeof runOverheadSuite>> | undefined;
let clientMemory: Awaited<ReturnType<typeof measureClientMemory>> | undefined;
let sdkOverhead: Awaited<ReturnType<typeof runSdkOverheadSuite>> | undefined;
if (runs("overhead")) {
  console.log("Running the overhead microbenchmark...");
  overhead = await runOverheadSuite(defaultOverheadSettings);
  parts.push(section("Overhead of the pass-through path (in-process, instant fake transport)", overheadTable(overhead, defaultOverheadSettings)));
  clientMemory = await measureClientMemory();
  parts.push(section("Memory per hedging client (in-process)", clientMemoryTable(clientMemory)));

  console.log("Running the overhead suite through the real @azure/cosmos client...");
  sdkOverhead = await runSdkOverheadSuite(defaultSdkOverheadSettings);
  parts.push(section("Client CPU per read through the real @azure/cosmos client", sdkOverheadTables(sdkOverhead, defaultSdkOverheadSettings)));
}

let wan: WanRow[] = [];
let wanSweep: WanRow[] = [];
if (runs("wan")) {
  console.log("Running the WAN suite...");
  wan = await runWanSuite(defaultWanSettings);
  console.log("  ...and its sweep of fixed thresholds");
  const wanLearner = wan.find((row) => row.mode === "adaptive, losers drained");
  wanSweep = await runWanSuite(defaultWanSettings, wanSweepModes);
  noteLoad("WAN");
  const wanOracle = wan.find((row) => row.mode.startsWith("oracle"));
  const wanYardstick =
    wanLearner === undefined
      ? ""
      : hindsightSection(
          [{ learner: wanPoint(wanLearner), sweep: wanSweep.map(wanPoint) }],
          wanOracle === undefined ? undefined : wanPoint(wanOracle),
          `The same suite with a fixed threshold per mode (${sweepThresholdsMs.join(", ")} ms; thresholdStep ${sweepStepMs} ms, so one hedge per read), ` +
            `losers drained, each mode on a fresh emulator with the same seed, one after the other as above (${defaultWanSettings.reads} reads after ` +
            `${defaultWanSettings.warmupReads} warm-up reads); the learner is the suite's "adaptive, losers drained" row. The hindsight-best fixed ` +
            `threshold is the point with the lowest p99 among those that spent no more extra requests than the learner.`,
        );
  parts.push(section("Over a WAN: the connections losers cost, aborted vs drained", `${wanSection(wan, defaultWanSettings)}\n${wanYardstick}\n`));
}

const machine = `${cpus().length} cores, Node ${process.version}, ${started.toISOString().slice(0, 10)}`;
const loadLine = `Load average (1, 5, 15 min) at the start and after each suite: ${loadAverages.join("; ")}.`;
console.log(`\n${loadLine}`);
const out = values.out ?? join(resultsFolder, "latest.md");
mkdirSync(resultsFolder, { recursive: true });
writeFileSync(
  out.replace(/\.md$/, ".json"),
  JSON.stringify({ machine, started, loadAverages, tail, tailSweeps, brownOut, brownOutSweep, coldStart, overhead, clientMemory, sdkOverhead, wan, wanSweep }, null, 2),
);
writeFileSync(
  out,
  `# Benchmark results\n\n\`npm run bench\` on ${machine}; the multi-region emulator on loopback. ` +
    `Each table compares its modes in one run; the latency cases offer every mode the same open-loop load ` +
    `and time each read from its scheduled start (see CONTRIBUTING.md, "How the benchmarks and the demo measure"). ${loadLine}\n\n${parts.join("\n")}`,
);
console.log(`\nWrote ${out} and its raw JSON beside it.`);
