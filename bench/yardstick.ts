// npm run bench:yardstick [-- --cases stragglers,mixed,brownout,healthy,noisy,wan --repeats 3 --first-seed 7 --reads 3000 --rate 100 --wan-warmup 3000 --warmup-ms 1000 --stand-in MS --out FILE]
//
// Issue 24's verdict, repeated until it means something. `npm run bench`
// measures the learner against the hindsight-best fixed threshold in two
// passes of a thousand reads, each p99 resting on its slowest ten, and the
// learner's own p99 moved by 1.5x between passes of one seed: wider than any
// gap it was asked to show. Here the emulators run in a host process of
// their own, so that the client can be offered several times the load
// (100 reads/s per mode, five modes at once, against 30 in process), each
// pass holds several times the reads, and every case runs again with other
// seeds (fault draws and arrivals). It prints every pass's ratio, how they
// spread, and the verdict over every seed pooled: in each pass, the
// learner's p99 over every read it served against each fixed threshold's
// over every read that threshold served beside it.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { adaptiveMode } from "./support/benchModes.js";
import { hindsightVerdicts, nearestRankP99, onsetSeconds, seedsInterval, sweepHedging, sweepModes, sweepPasses, sweepStepMs, sweepThresholdsMs, verdictOf, worstSecondRatio } from "./support/hindsight.js";
import type { HindsightVerdict, YardstickPoint } from "./support/hindsight.js";
import { startEmulatorHost } from "./support/remoteEmulator.js";
import { ms, percent } from "./support/stats.js";
import { markdownTable } from "./support/table.js";
import { defaultBrownOut, defaultWarmUpMs, healthy, mixedTail, noisyHealthy, runBrownOut, runCountScenario, stragglers } from "./suites/tail.js";
import { defaultWanSettings, runWanSuite, wanPreferredOrder } from "./suites/wan.js";
import type { WanRow } from "./suites/wan.js";
import type { BrownOutRow, CountScenario, TailRow } from "./suites/tail.js";
import type { EmulatorHost } from "./support/remoteEmulator.js";
import type { OfferedLoad } from "./support/openLoop.js";
import type { ModeSpec } from "./support/modes.js";

/** One mode's figures in one pass, as the yardstick reads them, whichever kind of case measured them. */
interface PassRow {
  mode: string;
  /** The latencies the case's percentiles are over. */
  samples: readonly number[];
  p99: number;
  extraRequests: number;
  /** The share of reads the case's faults were applied to, where the case counts them (see `TailRow.faultedShare`). */
  faultedShare?: number;
  secondP99s: readonly (number | undefined)[];
  thresholds: TailRow["thresholds"];
  /** `undefined` where reads are not offered at a rate (the WAN case's closed loop). */
  startLagP99: number | undefined;
  errors: number;
  /** The learner's p99 in each of its runs of the pass, where it ran more than once (the WAN case). */
  runP99s?: readonly number[];
}

function fromTail(row: TailRow): PassRow {
  const { mode, latencySamples: samples, extraRequests, faultedShare, secondP99s, thresholds, startLagP99, errors } = row;
  return { mode, samples, p99: row.latency.p99, extraRequests, faultedShare, secondP99s, thresholds, startLagP99, errors };
}

function fromBrownOut(row: BrownOutRow): PassRow {
  const { mode, brownOutSamples: samples, extraRequests, secondP99s, thresholds, startLagP99, errors } = row;
  return { mode, samples, p99: row.brownOutP99, extraRequests, secondP99s, thresholds, startLagP99, errors };
}

function fromWan(row: WanRow): PassRow {
  const { mode, latencySamples: samples, thresholds, errors } = row;
  return { mode, samples, p99: row.latency.p99, extraRequests: row.requestsPerRead - 1, secondP99s: [], thresholds, startLagP99: undefined, errors };
}

/** One mode's runs of a pass as one row: their reads pooled, their extra averaged, each run's p99 kept. */
function pooledRuns(runs: readonly PassRow[]): PassRow {
  const samples = runs.flatMap((run) => run.samples);
  return {
    ...runs[0]!,
    samples,
    p99: nearestRankP99(samples),
    extraRequests: runs.reduce((sum, run) => sum + run.extraRequests, 0) / runs.length,
    thresholds: runs.flatMap((run) => run.thresholds),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    runP99s: runs.map((run) => run.p99),
  };
}

/** A case of the yardstick: its title, and one pass of it over a group of modes. */
interface YardstickCase {
  readonly name: string;
  /** How the case differs from the header's description, printed under its title. */
  readonly caption?: string;
  /** The passes of a seed, each the modes it runs; the shared two of {@link sweepPasses} when not given. */
  readonly passes?: readonly (readonly ModeSpec[])[];
  run(group: readonly ModeSpec[], host: EmulatorHost, seed: number, load: OfferedLoad): Promise<PassRow[]>;
}

function countCase(scenario: CountScenario): YardstickCase {
  return {
    name: scenario.name,
    run: async (group, host, seed, load) => (await runCountScenario({ ...scenario, reads }, group, { host, seed, load, warmUpMs })).map(fromTail),
  };
}

/**
 * The brown-out of `npm run bench` (every read of the preferred region +300 ms for 20 s), every mode of a pass
 * on one emulator; its percentiles over the reads from 5 s into the brown-out, as there. Its length is set in
 * seconds, not reads: `--reads` does not apply.
 */
const brownOut: YardstickCase = {
  name: `brown-out: every read of the preferred region +${defaultBrownOut.delayMs} ms for ${defaultBrownOut.brownOutSeconds} s`,
  caption:
    `${defaultBrownOut.healthySeconds} s healthy, ${defaultBrownOut.brownOutSeconds} s of brown-out, ${defaultBrownOut.recoverySeconds} s healthy; ` +
    "every mode of a pass at once on one emulator (in the host process); p99 over the reads scheduled from 5 s into the brown-out to its end, " +
    "extra requests over the whole pass, onset over the seconds of the brown-out. The seed draws the arrivals.",
  run: async (group, host, _seed, load) => (await runBrownOut(group, { ...defaultBrownOut, load }, host)).map(fromBrownOut),
};

const { values } = parseArgs({
  options: {
    "stand-in": { type: "string" },
    cases: { type: "string", default: "stragglers,mixed" },
    repeats: { type: "string", default: "3" },
    "first-seed": { type: "string", default: "7" },
    reads: { type: "string", default: "3000" },
    rate: { type: "string", default: "100" },
    "wan-warmup": { type: "string", default: String(defaultWanSettings.warmupReads) },
    "warmup-ms": { type: "string", default: String(defaultWarmUpMs) },
    out: { type: "string" },
  },
});

function wholeNumber(option: string, text: string, least: number): number {
  const value = Number(text);
  if (!(Number.isInteger(value) && value >= least)) throw new RangeError(`--${option} takes a whole number >= ${least}; got ${text}`);
  return value;
}

const repeats = wholeNumber("repeats", values.repeats, 1);
const firstSeed = wholeNumber("first-seed", values["first-seed"], 1);
const reads = wholeNumber("reads", values.reads, 200);
const rate = wholeNumber("rate", values.rate, 1);
// The WAN case measures a learner a few seconds old by default (its closed loop runs about 550 reads a second); a longer
// warm-up measures it once its whole window holds the workload.
const wanWarmupReads = wholeNumber("wan-warmup", values["wan-warmup"], 0);
// The count cases' clients, the learner among them, are a second old when their faults begin; a longer warm-up measures
// a learner whose survival no longer holds the client's first reads (the learner's delay sat at 19 to 20 ms for the
// first 5 to 8 s of some passes, where it settles at 5 to 12 ms).
const warmUpMs = wholeNumber("warmup-ms", values["warmup-ms"], 1);

/**
 * `--stand-in MS` runs a fixed threshold of MS ms (one hedge a read) in the learner's place: the yardstick's verdict on
 * a policy that is one of the sweep's own points, whose expected p99 is that point's. The hindsight-best is the least
 * of several noisy p99s, so even a policy as good as the best point in expectation scores above 1.0 against it; the
 * stand-in's score is how far above, the bar a learner's own score is read against.
 */
const standInMs = values["stand-in"] === undefined ? undefined : wholeNumber("stand-in", values["stand-in"], 1);
const learner: ModeSpec = standInMs === undefined ? adaptiveMode() : { name: `stand-in: fixed ${standInMs} ms`, kind: "hedging", hedging: sweepHedging(standInMs) };
const groups = sweepPasses(learner, sweepModes);

/**
 * The WAN suite's case (`npm run bench:wan`): HTTPS with each round trip charged, East US 2 ms away with 10 % of its
 * reads a second late, West US 30 ms, North Europe 90 ms. Its emulator and WAN fronts run in a host process of their
 * own, a fresh one for each mode (from run 46; before, in this process), and each mode runs alone after the other (a closed loop of ten, after the suite's warm-up), each with the seed's
 * straggler draws; `--rate` does not apply, `--reads` sets the measured reads a mode. Since no two modes share a
 * moment of the machine, one pass a seed runs every fixed threshold (none is left out for running beside a low one,
 * as in the shared passes), and the learner both first and last: its two runs pooled, and how far they differ, the
 * noise floor of the case's ratios (the learner first alone moved 3 to 7 % between passes of one seed).
 */
/** Whether this process has run the WAN case's warm-up (see the case's `run`). */
let wanProcessWarm = false;

const wan: YardstickCase = {
  name: `WAN: ${defaultWanSettings.stragglerShare * 100}% of East US reads +${defaultWanSettings.stragglerDelayMs / 1000} s, HTTPS with per-round-trip RTT`,
  caption:
    `East US ${defaultWanSettings.rttMs["East US"]} ms away, West US ${defaultWanSettings.rttMs["West US"]} ms, North Europe ${defaultWanSettings.rttMs["North Europe"]} ms; ` +
    `the emulator and its fronts in a process of their own, fresh for each mode; one pass a seed: the learner, every fixed threshold, the learner again, one after the other, ` +
    `each on a fresh emulator with the seed's straggler draws, ${wanWarmupReads} warm-up reads then the measured ones, ` +
    `${defaultWanSettings.concurrency} in flight (closed loop: no start lag, no onset), after one run of the learner that nobody measures warms the process. ` +
    "The learner's row pools its two runs.",
  passes: [[learner, ...sweepModes]],
  run: async (group, _host, seed) => {
    const modes = [...group, group[0]!].map((mode) => {
      if (mode.kind !== "hedging") throw new TypeError(`the WAN case runs hedging modes only; got ${mode.name}`);
      return { name: mode.name, preferred: wanPreferredOrder, hedging: mode.hedging };
    });
    if (!wanProcessWarm) {
      // The client's first mode would meet cold code, and that mode is always the learner's first run of the first seed.
      // One run of the first mode, measured by nobody, warms this process for every mode (each mode's emulator process is
      // warmed by its own warm-up reads). It did not remove the spread of seed 7's two learner runs: 1.26 in run 37.
      console.log("  warming the process (one run of the first mode, not measured)...");
      await runWanSuite({ ...defaultWanSettings, warmupReads: wanWarmupReads, reads, seed }, [modes[0]!]);
      wanProcessWarm = true;
    }
    const rows = (await runWanSuite({ ...defaultWanSettings, warmupReads: wanWarmupReads, reads, seed }, modes)).map(fromWan);
    return [pooledRuns([rows[0]!, rows[rows.length - 1]!]), ...rows.slice(1, -1)];
  },
};


const cases: Readonly<Record<string, YardstickCase>> = {
  healthy: countCase(healthy),
  noisy: countCase(noisyHealthy),
  stragglers: countCase(stragglers),
  mixed: countCase(mixedTail),
  brownout: brownOut,
  wan,
};
const chosen = values.cases.split(",").map((name) => name.trim());
for (const name of chosen) {
  if (cases[name] === undefined) throw new RangeError(`--cases takes ${Object.keys(cases).join(", ")}; got ${name}`);
}


function point(mode: string, rows: readonly PassRow[]): YardstickPoint {
  const samples = rows.flatMap((row) => row.samples);
  const sorted = Float64Array.from(samples).sort();
  return {
    mode,
    p50: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN,
    p99: nearestRankP99(samples),
    extra: rows.reduce((sum, row) => sum + row.extraRequests, 0) / rows.length,
    samples,
  };
}

const interval = (value: readonly [number, number] | undefined): string => (value === undefined ? "-" : `${value[0].toFixed(2)}-${value[1].toFixed(2)}`);
const bare = (mode: string): string => mode.replace(/^sweep: /, "").replace(/, one hedge$/, "");

function verdictCells(verdict: HindsightVerdict): string[] {
  return [
    ms(verdict.learner.p99),
    percent(verdict.learner.extra),
    verdict.best === undefined ? "none spends so little" : `${bare(verdict.best.mode)}: ${ms(verdict.best.p99)} at ${percent(verdict.best.extra)}`,
    verdict.ratio === undefined ? "-" : verdict.ratio.toFixed(2),
    interval(verdict.interval),
    verdict.crossValidated === undefined ? "-" : verdict.crossValidated.ratio.toFixed(2),
    interval(verdict.crossValidated?.interval),
  ];
}

const verdictHeader = ["learner p99 ms", "learner extra", "best fixed at no more extra: p99 ms at extra", "÷ it", "95 % interval", "÷ cross-validated best", "95 % interval"];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const shownOnset = (seconds: number | undefined): string => (seconds === undefined ? "never" : `${seconds} s`);

/** The per-second p99s of a pass's fixed 100 ms, the onset's reference, where the pass ran it. */
function onsetReference(rows: readonly PassRow[]): PassRow["secondP99s"] | undefined {
  const reference = rows.find((row) => bare(row.mode) === "fixed 100 ms")?.secondP99s;
  return reference === undefined || reference.length === 0 ? undefined : reference;
}

/** Issue 24's onset (see `onsetSeconds`) in a pass that ran fixed 100 ms beside the learner, else a dash. */
function onset(rows: readonly PassRow[]): string {
  const own = rows.find((row) => row.mode === learner.name)!.secondP99s;
  const reference = onsetReference(rows);
  if (reference === undefined) return "-";
  const worst = worstSecondRatio(own, reference);
  return `${shownOnset(onsetSeconds(own, reference, 100))} / ${shownOnset(onsetSeconds(own, reference))} (worst second from 2 s above 100 ms: ${worst === 0 ? "none" : `${worst.toFixed(2)}x`})`;
}

/**
 * The same onset for each other fixed threshold of a pass that ran fixed 100 ms: what the measure gives a policy that is
 * not the learner. Where every threshold hedges alike (a brown-out whose every read outlasts them all, the budget
 * refusing the same share), it is the noise floor of the learner's onset: an onset later than 2 s there is no lag.
 */
function sweepOnsets(rows: readonly PassRow[]): string | undefined {
  const reference = onsetReference(rows);
  if (reference === undefined) return undefined;
  return rows
    .filter((row) => row.mode !== learner.name && bare(row.mode) !== "fixed 100 ms")
    .map((row) => {
      const worst = worstSecondRatio(row.secondP99s, reference);
      return `${bare(row.mode)} ${shownOnset(onsetSeconds(row.secondP99s, reference, 100))} / ${shownOnset(onsetSeconds(row.secondP99s, reference))} (${worst === 0 ? "none" : `${worst.toFixed(2)}x`})`;
    })
    .join(", ");
}

/** The share of reads the learner's emulator faulted in a pass, where the case counts it. */
function faultedShareOf(rows: readonly PassRow[]): number | undefined {
  return rows.find((row) => row.mode === learner.name)!.faultedShare;
}

/** A row of the verdict over the seeds (see `seedsInterval`): the seeds' geometric mean, its interval and the verdict. */
function overSeedsRow(label: string, bySeed: readonly (readonly number[])[]): string[] {
  const over = seedsInterval(bySeed);
  const range = over === undefined ? undefined : ([over.low, over.high] as const);
  return [label, over === undefined ? "-" : `${over.seeds} (${over.passes})`, over === undefined ? "-" : over.mean.toFixed(3), interval(range), verdictOf(range)];
}

const geometricMean = (values: readonly number[]): number => Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length);

const started = new Date();
const loads: string[] = [`start ${loadavg().map((value) => value.toFixed(2)).join(" ")}`];
const parts: string[] = [
  `# Yardstick: the learner against the hindsight-best fixed threshold, repeated\n\n` +
    (standInMs === undefined ? "" : `**The learner's place is taken by a stand-in, fixed ${standInMs} ms (see \`--stand-in\`): every "learner" below is that stand-in.**\n\n`) +
    `Started ${started.toISOString()}; ${repeats} seeds a case (from seed ${firstSeed}), ${reads} reads a mode a pass at ${rate} reads/s a mode (Poisson), ` +
    `five modes at once (${learner.name} beside four of the fixed thresholds ${sweepThresholdsMs.join(", ")} ms, thresholdStep ${sweepStepMs} ms, ` +
    `so one hedge a read), two passes a seed, each after ${warmUpMs} ms of healthy reads at the same rate; every mode on its own emulator, all emulators in one host process. Seed s draws the ` +
    `faults and the arrivals of every mode of both passes of that seed. The WAN case runs otherwise: see its caption.`,
];
const host = await startEmulatorHost();
try {
  for (const name of chosen) {
    const scenario = cases[name]!;
    const passes: { seed: number; pass: number; rows: PassRow[] }[] = [];
    for (let repeat = 0; repeat < repeats; repeat++) {
      const seed = firstSeed + repeat;
      for (const [pass, group] of (scenario.passes ?? groups).entries()) {
        console.log(`${scenario.name}: seed ${seed}, pass ${pass + 1}...`);
        const rows = await scenario.run(group, host, seed, { ratePerSecond: rate, arrivals: "poisson", seed, maxInFlight: 512 });
        passes.push({ seed, pass: pass + 1, rows });
      }
    }
    loads.push(`${name} ${loadavg().map((value) => value.toFixed(2)).join(" ")}`);
    const verdicts = passes.map(({ rows }) => {
      const learnerRow = rows.find((row) => row.mode === learner.name)!;
      const sweep = rows.filter((row) => row.mode !== learner.name).map((row) => point(row.mode, [row]));
      return hindsightVerdicts(sweep, [point(learner.name, [learnerRow])])[0]!;
    });
    const passTable = markdownTable(
      ["seed", "pass", ...verdictHeader, "stragglers drawn", "onset vs fixed 100 ms, tolerant / strict", "start lag p99 ms (worst mode)", "errors"],
      passes.map(({ seed, pass, rows }, p) => [
        String(seed),
        String(pass),
        ...verdictCells(verdicts[p]!),
        ((share) => (share === undefined || share === 0 ? "-" : percent(share)))(faultedShareOf(rows)),
        onset(rows),
        rows.some((row) => row.startLagP99 === undefined) ? "-" : ms(Math.max(...rows.map((row) => row.startLagP99 ?? 0))),
        String(rows.reduce((sum, row) => sum + row.errors, 0)),
      ]),
    );
    const thresholdTable = markdownTable(
      ["seed", "pass", "reads with a threshold", "benefit", "noBenefit", "adaptive", "adaptiveWarmup", "p10 ms", "p50 ms", "p90 ms", "p99 ms"],
      passes.map(({ seed, pass, rows }) => {
        const thresholds = rows.find((row) => row.mode === learner.name)!.thresholds;
        const share = (source: string): string => percent(thresholds.filter((each) => each.source === source).length / Math.max(1, thresholds.length));
        const sorted = Float64Array.from(thresholds.map((each) => each.ms)).sort();
        const at = (q: number): string => ms(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN);
        return [String(seed), String(pass), String(thresholds.length), share("benefit"), share("noBenefit"), share("adaptive"), share("adaptiveWarmup"), at(0.1), at(0.5), at(0.9), at(0.99)];
      }),
    );
    const sweepOnsetLines = passes.flatMap(({ seed, pass, rows }) => {
      const line = sweepOnsets(rows);
      return line === undefined ? [] : [`seed ${seed} pass ${pass}: ${line}`];
    });
    const sweepOnsetText =
      sweepOnsetLines.length === 0
        ? ""
        : `\n\nThe onset of each other fixed threshold against fixed 100 ms, measured the same way (tolerant / strict, worst second from 2 s above 100 ms): ${sweepOnsetLines.join("; ")}.`;
    // Issue 24's bound on a straggler case's extra is the straggler share plus two points: the share this pass drew.
    const drawn = passes.flatMap(({ rows }, p) => {
      const share = faultedShareOf(rows);
      return share === undefined || share === 0 ? [] : [{ share, extra: verdicts[p]!.learner.extra }];
    });
    const drawnText =
      drawn.length === 0
        ? ""
        : ` Stragglers drawn a pass: ${percent(Math.min(...drawn.map((each) => each.share)))} to ${percent(Math.max(...drawn.map((each) => each.share)))}; ` +
          `the learner's extra above them by ${(100 * Math.min(...drawn.map((each) => each.extra - each.share))).toFixed(1)} to ${(100 * Math.max(...drawn.map((each) => each.extra - each.share))).toFixed(1)} points, ` +
          `more than 2 points in ${drawn.filter((each) => each.extra - each.share > 0.02).length} of ${drawn.length} passes.`;
    const ratios = verdicts.flatMap((verdict) => (verdict.ratio === undefined ? [] : [verdict.ratio]));
    const above = verdicts.filter((verdict) => verdict.ratio !== undefined && verdict.ratio > 1).length;
    const wholly = verdicts.filter((verdict) => verdict.interval !== undefined && verdict.interval[0] > 1).length;
    // The learner's runs of one seed: its passes, or its runs within the one pass of a case that runs it twice.
    const spreads = Array.from({ length: repeats }, (_, repeat) => {
      const own = passes
        .filter((each) => each.seed === firstSeed + repeat)
        .flatMap((each) => {
          const row = each.rows.find((candidate) => candidate.mode === learner.name)!;
          return row.runP99s ?? [row.p99];
        });
      return Math.max(...own) / Math.min(...own);
    });
    const spread =
      ratios.length === 0
        ? "No pass had a fixed threshold that spent no more than the learner."
        : `Per pass, learner ÷ best: min ${Math.min(...ratios).toFixed(2)}, median ${median(ratios).toFixed(2)}, max ${Math.max(...ratios).toFixed(2)}, ` +
          `geometric mean ${geometricMean(ratios).toFixed(3)}; ${above} of ${verdicts.length} passes above 1.0, ${wholly} with the interval wholly above 1.0. ` +
          `The learner's p99 in its two runs of one seed (pass 1 against pass 2; in a case of one pass, run first against run last), the larger ÷ the smaller: ${spreads.map((each) => each.toFixed(2)).join(", ")}.`;
    // A fixed threshold is pooled only with the learner's reads of the passes it ran in: passes differ more than modes do.
    const pooledGroups = (scenario.passes ?? groups).map((_, g) => {
      const own = passes.filter((each) => each.pass === g + 1);
      const learnerPoint = point(learner.name, own.map(({ rows }) => rows.find((row) => row.mode === learner.name)!));
      const sweep = sweepModes
        .filter((mode) => own.some(({ rows }) => rows.some((row) => row.mode === mode.name)))
        .map((mode) => point(mode.name, own.flatMap(({ rows }) => rows.filter((row) => row.mode === mode.name))));
      return { pass: g + 1, learner: learnerPoint, sweep, verdict: hindsightVerdicts(sweep, [learnerPoint])[0]! };
    });
    const pooledTable = markdownTable(
      ["pass", "mode", "reads", "p50 ms", "p99 ms", "extra requests"],
      pooledGroups.flatMap(({ pass, learner: own, sweep }) =>
        [own, ...sweep].map((each) => [String(pass), bare(each.mode), String(each.samples!.length), ms(each.p50), ms(each.p99), percent(each.extra)]),
      ),
    );
    const pooledVerdict = markdownTable(
      ["", ...verdictHeader, "verdict (interval against 1.0)"],
      pooledGroups.map(({ pass, verdict }) => [`pass ${pass}, every seed pooled`, ...verdictCells(verdict), verdictOf(verdict.interval)]),
    );
    // Each seed one replicate, so that the verdict sees how runs differ, which the reads' bootstrap of one run does not.
    const seeds = [...new Set(passes.map((each) => each.seed))];
    const bySeed = (pick: (verdict: HindsightVerdict) => number | undefined): number[][] =>
      seeds.map((seed) => passes.flatMap((each, p) => (each.seed === seed ? [pick(verdicts[p]!)] : [])).filter((ratio): ratio is number => ratio !== undefined));
    const overSeeds = markdownTable(
      ["learner ÷", "seeds (passes)", "geometric mean", "95 % interval over the seeds", "verdict"],
      [overSeedsRow("best fixed at no more extra", bySeed((verdict) => verdict.ratio)), overSeedsRow("cross-validated best", bySeed((verdict) => verdict.crossValidated?.ratio))],
    );
    const unmatched = verdicts.filter((verdict) => verdict.ratio === undefined).length;
    const overSeedsText =
      "Over the seeds, each one replicate (the geometric mean of its passes; see `seedsInterval`)" +
      (unmatched === 0 ? ":" : `; ${unmatched} of ${verdicts.length} passes had no fixed threshold that spent no more than the learner, and count for nothing:`);
    parts.push(`## ${scenario.name}\n\n${scenario.caption === undefined ? "" : `${scenario.caption}\n\n`}### Pass by pass\n\n${passTable}${sweepOnsetText}\n\n${spread}${drawnText}\n\n${overSeedsText}\n\n${overSeeds}\n\nThe learner's thresholds, read by read (where each came from, and its percentiles):\n\n${thresholdTable}\n\n### Every seed pooled, pass by pass\n\n${pooledTable}\n\n${pooledVerdict}`);
    console.log(parts[parts.length - 1]);
  }
} finally {
  await host.close();
}
parts.push(`Load averages (1, 5, 15 min): ${loads.join("; ")}. Took ${((Date.now() - started.getTime()) / 60_000).toFixed(1)} min.`);
const report = `${parts.join("\n\n")}\n`;
if (values.out !== undefined) writeFileSync(values.out, report);
console.log(`\n${parts[parts.length - 1]}`);
