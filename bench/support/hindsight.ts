import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import type { ModeSpec } from "./modes.js";
import { ms, percent } from "./stats.js";
import { markdownTable } from "./table.js";
import { seededRandom } from "../../src/testing/seededRandom.js";

/**
 * The fixed thresholds every latency case also runs, to find the best one
 * in hindsight: from below the healthy tail of the emulator's preferred
 * region (a few ms) to the package's usual 100 ms. Eight, so that a sweep
 * costs about as much as the case's own modes.
 */
export const sweepThresholdsMs: readonly number[] = [5, 10, 15, 20, 25, 35, 50, 100];

/**
 * A step far above any threshold of the sweep, so that only one hedge goes
 * per read: a sweep point is one delay, the policy SingleR chooses among.
 */
export const sweepStepMs = 10_000;

/** The hedging options of one sweep point. */
export function sweepHedging(thresholdMs: number): HedgingOptions {
  return { crossRegion: { threshold: thresholdMs, thresholdStep: sweepStepMs } };
}

/** One sweep point as a mode of the count-based cases and the brown-out. */
export function sweepMode(thresholdMs: number): ModeSpec {
  return { name: `sweep: fixed ${thresholdMs} ms, one hedge`, kind: "hedging", hedging: sweepHedging(thresholdMs) };
}

/** Every sweep point as a mode. */
export const sweepModes: readonly ModeSpec[] = sweepThresholdsMs.map(sweepMode);

/**
 * The sweep's passes: four thresholds each, the low ones beside the high
 * ones, each pass beside the learner. All eight at once, beside a low
 * threshold that hedges one read in seven, loaded a shared 2-core machine
 * until every point's reads queued behind the event loop (p50 12 ms
 * against 2 ms in the case's own pass); and a pass run apart from the
 * learner meets other stalls than the learner did.
 */
export function sweepPasses<T>(learner: T, points: readonly T[]): T[][] {
  return [0, 1].map((pass) => [learner, ...points.filter((_, i) => i % 2 === pass)]);
}

/** What a row of a case says for the yardstick: its tail and what it cost. */
export interface YardstickPoint {
  readonly mode: string;
  readonly p50: number;
  readonly p99: number;
  readonly p999?: number | undefined;
  /** Requests beyond one per read, as a share of the reads. */
  readonly extra: number;
  /** Every latency the p99 is taken from, for the interval of a ratio (see {@link ratioInterval}). */
  readonly samples?: readonly number[] | undefined;
}

/** The nearest-rank p99 of a sorted sample. */
function p99OfSorted(sorted: Float64Array): number {
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)] ?? Number.NaN;
}

/**
 * A 95 % bootstrap interval of `p99(a) / p99(b)`: both samples are drawn
 * again with replacement, `rounds` times, with a seeded random so that a
 * run's table repeats. A p99 of a thousand reads rests on its slowest ten,
 * so one pass's ratio moves by tens of percent from run to run; the
 * interval says which ratios a pass cannot tell from 1.0. The percentile
 * bootstrap is rough at an extreme quantile of a small sample (it cannot
 * reach past the largest values drawn), which is why the interval is
 * printed beside the ratio and never replaces it.
 */
export function ratioInterval(a: readonly number[], b: readonly number[], rounds = 2000, seed = 1): readonly [number, number] | undefined {
  if (a.length < 100 || b.length < 100) return undefined;
  const random = seededRandom(seed);
  const draw = (sample: readonly number[], into: Float64Array): number => {
    for (let i = 0; i < into.length; i++) into[i] = sample[Math.floor(random() * sample.length)]!;
    into.sort();
    return p99OfSorted(into);
  };
  const ra = new Float64Array(a.length);
  const rb = new Float64Array(b.length);
  const ratios = new Float64Array(rounds);
  for (let round = 0; round < rounds; round++) ratios[round] = draw(a, ra) / draw(b, rb);
  ratios.sort();
  return [ratios[Math.floor(rounds * 0.025)]!, ratios[Math.ceil(rounds * 0.975) - 1]!];
}

/** Student's t at 97.5 % for 1 to 30 degrees of freedom. */
const tQuantiles = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

/** Student's t at 97.5 % for `df` degrees of freedom: the table, then the Cornish-Fisher expansion (within 0.001 of it past 30). */
export function tQuantile975(df: number): number {
  const tabled = tQuantiles[df - 1];
  if (tabled !== undefined) return tabled;
  const z = 1.959964;
  return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2);
}

/** The replicates an interval over seeds rests on (see {@link seedsInterval}). */
export interface SeedsInterval {
  /** The geometric mean of the seeds' ratios. */
  readonly mean: number;
  readonly low: number;
  readonly high: number;
  /** How many seeds had a ratio: the replicates. */
  readonly seeds: number;
  /** How many pass ratios went into them. */
  readonly passes: number;
}

/**
 * A 95 % interval of the learner's ratio over seeds, each seed one
 * replicate: the geometric mean of its passes' ratios (the passes of a seed
 * share its fault draws and arrivals, so they are not independent: the two
 * passes of a stragglers seed correlate at about 0.75), then a Student-t
 * interval of the seeds' logarithms. The bootstrap of
 * {@link ratioInterval} draws the reads of one run again, so it sees how
 * the slowest reads of that run happened to fall but not how the run
 * itself did: a learner measured twice on one seed moved its p99 by up to
 * 1.25x in the WAN case, more than any pass's interval allowed for. Each
 * seed's passes ran at their own moments of the machine, so how the seeds'
 * ratios spread holds that; the interval narrows only with more seeds.
 * @param bySeed - each seed's pass ratios; ratios that are not positive
 *   numbers are left out, and a seed left with none.
 * @returns `undefined` under two seeds.
 */
export function seedsInterval(bySeed: readonly (readonly number[])[]): SeedsInterval | undefined {
  let passes = 0;
  const logs: number[] = [];
  for (const ratios of bySeed) {
    const own = ratios.filter((ratio) => ratio > 0 && Number.isFinite(ratio)).map(Math.log);
    if (own.length === 0) continue;
    passes += own.length;
    logs.push(own.reduce((sum, value) => sum + value, 0) / own.length);
  }
  if (logs.length < 2) return undefined;
  const mean = logs.reduce((sum, value) => sum + value, 0) / logs.length;
  const variance = logs.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (logs.length - 1);
  const half = tQuantile975(logs.length - 1) * Math.sqrt(variance / logs.length);
  return { mean: Math.exp(mean), low: Math.exp(mean - half), high: Math.exp(mean + half), seeds: logs.length, passes };
}

/** An interval as `a-b`, or a dash. */
function intervalText(interval: readonly [number, number] | undefined): string {
  return interval === undefined ? "-" : `${interval[0].toFixed(2)}-${interval[1].toFixed(2)}`;
}

/**
 * The hindsight-best fixed threshold for a learner that spent `maxExtra`:
 * the lowest p99 among the sweep points that spent no more; `undefined`
 * when every point spent more.
 */
export function hindsightBest(sweep: readonly YardstickPoint[], maxExtra: number): YardstickPoint | undefined {
  let best: YardstickPoint | undefined;
  for (const point of sweep) {
    // Counted requests are whole numbers: a tenth of a read's share is rounding, not spending.
    if (point.extra > maxExtra + 1e-9) continue;
    if (best === undefined || point.p99 < best.p99) best = point;
  }
  return best;
}

/**
 * Reads in a row that go to the same half of a cross-validation: a stall of
 * the shared machine slows a run of reads that finish one after another,
 * and with alternate reads each stall would land in both halves, carrying
 * the luck that chose a point over to the half that measures it. Fifty
 * reads (under two seconds at 30 reads/s) hold a stall; twenty blocks keep
 * both halves spread over the whole run.
 */
export const crossValidationBlock = 50;

/**
 * The hindsight-best fixed threshold without the luck of the draw: the
 * in-sample best (see {@link hindsightBest}) is the lowest of several p99s
 * of the same thousand reads, each resting on its slowest ten, so it is
 * biased low, and a learner exactly as good as the best threshold would
 * come out above it most of the time. Here the reads of each point are
 * split in two halves (alternate blocks of {@link crossValidationBlock}
 * reads, in the order they finished); the point with the lowest p99 on one
 * half, among those that spent no more than `maxExtra`, is measured on the
 * other half, and the other way round. Its sample is the two measured
 * halves: the reads of a threshold chosen in hindsight, none of which took
 * part in choosing it (two-fold cross-validation). `undefined` when no
 * point spends so little, or one that does carries too few samples to split.
 */
export function crossValidatedBest(sweep: readonly YardstickPoint[], maxExtra: number): CrossValidatedPoint | undefined {
  const eligible = sweep.filter((point) => point.extra <= maxExtra + 1e-9);
  // Every point the in-sample best may choose, or none: a yardstick over fewer points would be another yardstick.
  if (eligible.length === 0 || eligible.some((point) => point.samples === undefined || point.samples.length < 4 * crossValidationBlock)) return undefined;
  const half = (samples: readonly number[], parity: number): number[] => samples.filter((_, i) => Math.floor(i / crossValidationBlock) % 2 === parity);
  const chosen: YardstickPoint[] = [];
  const measured: number[] = [];
  for (const parity of [0, 1]) {
    let best: { point: YardstickPoint; p99: number } | undefined;
    for (const point of eligible) {
      const p99 = nearestRankP99(half(point.samples!, parity));
      if (best === undefined || p99 < best.p99) best = { point, p99 };
    }
    chosen.push(best!.point);
    measured.push(...half(best!.point.samples!, 1 - parity));
  }
  return { modes: [chosen[0]!.mode, chosen[1]!.mode], p99: nearestRankP99(measured), samples: measured };
}

/** The cross-validated hindsight-best fixed threshold of a pass (see {@link crossValidatedBest}). */
export interface CrossValidatedPoint {
  /** The point chosen on the first half (measured on the second), and the one chosen on the second. */
  readonly modes: readonly [string, string];
  /** The nearest-rank p99 of `samples`. */
  readonly p99: number;
  /** The chosen points' reads on the halves that did not choose them. */
  readonly samples: readonly number[];
}

/** The nearest-rank p99 of a sample in any order. */
export function nearestRankP99(samples: readonly number[]): number {
  return p99OfSorted(Float64Array.from(samples).sort());
}

/** `a / b` with two decimals, or a dash without a yardstick. */
export function ratioOf(value: number, yardstick: number | undefined): string {
  return yardstick === undefined || !(yardstick > 0) ? "-" : (value / yardstick).toFixed(2);
}

/**
 * What a ratio's 95 % interval says of the learner against its yardstick:
 * `"below"` when the whole interval is under 1.0, `"above"` when it is
 * over, and `"tie"` when it holds 1.0: two modes that hedge the same reads
 * (none at all, on a healthy region) differ by the noise of their two
 * emulators alone, and a point estimate of 1.01 there says nothing either
 * way. A dash without an interval.
 */
export function verdictOf(interval: readonly [number, number] | undefined): "below" | "tie" | "above" | "-" {
  if (interval === undefined) return "-";
  if (interval[1] < 1) return "below";
  if (interval[0] > 1) return "above";
  return "tie";
}

/** The ratio of each learner to its hindsight-best fixed threshold, and to the oracle. */
export interface HindsightVerdict {
  readonly learner: YardstickPoint;
  readonly best: YardstickPoint | undefined;
  /** learner p99 ÷ best p99. */
  readonly ratio: number | undefined;
  /** Its 95 % bootstrap interval, when both points carry their samples (see {@link ratioInterval}). */
  readonly interval: readonly [number, number] | undefined;
  readonly oracleRatio: number | undefined;
  /** The learner's p99 over the cross-validated hindsight-best's (see {@link crossValidatedBest}), with its interval. */
  readonly crossValidated?: { readonly best: CrossValidatedPoint; readonly ratio: number; readonly interval: readonly [number, number] | undefined } | undefined;
}

/** Each learner against the hindsight-best sweep point at its own extra requests. */
export function hindsightVerdicts(sweep: readonly YardstickPoint[], learners: readonly YardstickPoint[], oracle?: YardstickPoint): HindsightVerdict[] {
  return learners.map((learner) => {
    const best = hindsightBest(sweep, learner.extra);
    return {
      learner,
      best,
      ratio: best === undefined || !(best.p99 > 0) ? undefined : learner.p99 / best.p99,
      interval: best?.samples === undefined || learner.samples === undefined ? undefined : ratioInterval(learner.samples, best.samples),
      oracleRatio: oracle === undefined || !(oracle.p99 > 0) ? undefined : learner.p99 / oracle.p99,
      crossValidated: crossValidatedVerdict(sweep, learner),
    };
  });
}

function crossValidatedVerdict(sweep: readonly YardstickPoint[], learner: YardstickPoint): HindsightVerdict["crossValidated"] {
  if (learner.samples === undefined || learner.samples.length < 100) return undefined;
  const best = crossValidatedBest(sweep, learner.extra);
  if (best === undefined || !(best.p99 > 0)) return undefined;
  return { best, ratio: learner.p99 / best.p99, interval: ratioInterval(learner.samples, best.samples) };
}

/** One pass of the sweep: some of its fixed thresholds and the learner, measured at the same time on the same workload. */
export interface SweepPass {
  readonly learner: YardstickPoint;
  readonly sweep: readonly YardstickPoint[];
}

/**
 * The sweep's table (every fixed threshold, one hedge each, by pass) and
 * the verdict: the hindsight-best fixed threshold over every pass (the
 * lowest p99 among the points that spent no more than the learner did in
 * the same pass), and the learner's ratio to it, measured in that pass so
 * that a stall of the shared machine hits both; each pass's own best
 * beside it, and the oracle of the case's main pass.
 */
export function hindsightSection(passes: readonly SweepPass[], oracle: YardstickPoint | undefined, caption: string): string {
  const sweepTable = markdownTable(
    ["pass", "mode", "p50 ms", "p99 ms", "p99.9 ms", "extra requests"],
    passes.flatMap((pass, p) =>
      [pass.learner, ...pass.sweep].map((point) => [
        String(p + 1),
        point.mode,
        ms(point.p50),
        ms(point.p99),
        point.p999 === undefined ? "-" : ms(point.p999),
        percent(point.extra),
      ]),
    ),
  );
  const verdicts = passes.map((pass) => hindsightVerdicts(pass.sweep, [pass.learner], oracle)[0]!);
  let overall: HindsightVerdict | undefined;
  for (const verdict of verdicts) {
    if (verdict.best !== undefined && (overall?.best === undefined || verdict.best.p99 < overall.best.p99)) overall = verdict;
  }
  const verdictTable = markdownTable(
    [
      "pass",
      "learner p99 ms",
      "learner extra",
      "best fixed of the pass at no more extra",
      "its p99 ms",
      "its extra",
      "÷ its p99",
      "95 % interval of ÷",
      "cross-validated best (chosen on each half)",
      "its p99 ms",
      "÷ it",
      "95 % interval",
      "÷ oracle p99",
    ],
    verdicts.map((verdict, p) => [
      String(p + 1),
      ms(verdict.learner.p99),
      percent(verdict.learner.extra),
      verdict.best?.mode ?? "none spends so little",
      verdict.best === undefined ? "-" : ms(verdict.best.p99),
      verdict.best === undefined ? "-" : percent(verdict.best.extra),
      verdict.ratio === undefined ? "-" : verdict.ratio.toFixed(2),
      intervalText(verdict.interval),
      verdict.crossValidated === undefined ? "-" : crossValidatedModes(verdict.crossValidated.best),
      verdict.crossValidated === undefined ? "-" : ms(verdict.crossValidated.best.p99),
      verdict.crossValidated === undefined ? "-" : verdict.crossValidated.ratio.toFixed(2),
      intervalText(verdict.crossValidated?.interval),
      verdict.oracleRatio === undefined ? "-" : verdict.oracleRatio.toFixed(2),
    ]),
  );
  const headline =
    overall?.best === undefined || overall.ratio === undefined
      ? `**Hindsight-best fixed threshold: none spends no more extra requests than ${passes[0]?.learner.mode ?? "the learner"}.**`
      : `**Hindsight-best fixed threshold: ${overall.best.mode}, p99 ${ms(overall.best.p99)} ms at ${percent(overall.best.extra)} extra; ` +
        `${overall.learner.mode}${passes.length > 1 ? " in the same pass" : ""}: p99 ${ms(overall.learner.p99)} ms at ${percent(overall.learner.extra)}, ` +
        `${overall.ratio.toFixed(2)}x the hindsight-best` +
        (overall.interval === undefined ? "" : ` (95 % interval ${intervalText(overall.interval)})`) +
        (overall.oracleRatio === undefined ? "" : `, ${overall.oracleRatio.toFixed(2)}x the oracle`) +
        `.**` +
        crossValidatedLine(verdicts);
  return `${caption}\n\n${sweepTable}\n\n${verdictTable}\n\n${headline}`;
}

/** The two points a cross-validated best chose, one name when both halves chose the same. */
function crossValidatedModes(best: CrossValidatedPoint): string {
  const [first, second] = best.modes.map((mode) => mode.replace(/^sweep: /, "").replace(/, one hedge$/, ""));
  return first === second ? first! : `${first} / ${second}`;
}

/** The learner's ratio to the cross-validated best, pass by pass, after the in-sample headline. */
function crossValidatedLine(verdicts: readonly HindsightVerdict[]): string {
  const ratios = verdicts.map((verdict, p) =>
    verdict.crossValidated === undefined
      ? undefined
      : `${verdicts.length > 1 ? `pass ${p + 1} ` : ""}${verdict.crossValidated.ratio.toFixed(2)}x (95 % interval ${intervalText(verdict.crossValidated.interval)})`,
  );
  const shown = ratios.filter((ratio) => ratio !== undefined);
  return shown.length === 0 ? "" : ` Against the cross-validated best (chosen on one half of the reads, measured on the other): ${shown.join(", ")}.`;
}

/**
 * Seconds from the start of an episode until a learner's per-second p99 is
 * at or below the reference's (a fixed 100 ms threshold) in every second
 * that follows; `undefined` when it never settles there. Seconds either
 * mode has no reads in are skipped.
 *
 * With `atMostMs`, a second whose learner p99 is at most that (the
 * reference's threshold) counts as at or below the reference whatever the
 * reference's p99: every read the learner answered within the reference's
 * threshold is one the reference would not have hedged yet, so on the same
 * reads the reference could not have answered it sooner. The strict
 * comparison (without it) also fails in seconds where the reference saw no
 * straggler at all: each mode's emulator draws its stragglers in the order
 * of its own requests to the faulty region, which the hedges and the
 * routing of each mode shift, and in a second with no straggler on either
 * side it compares a healthy 6 ms with a healthy 3 ms.
 */
export function onsetSeconds(learner: readonly (number | undefined)[], reference: readonly (number | undefined)[], atMostMs = 0): number | undefined {
  let onset: number | undefined;
  const seconds = Math.max(learner.length, reference.length);
  for (let second = seconds - 1; second >= 0; second--) {
    const mine = learner[second];
    const theirs = reference[second];
    if (mine === undefined || theirs === undefined) continue;
    if (mine > theirs && mine > atMostMs) return onset;
    onset = second;
  }
  return onset ?? 0;
}

/**
 * The learner's worst per-second p99 against the reference's from `fromSecond` on, as a ratio, over the
 * seconds whose learner p99 is above `atMostMs` (see {@link onsetSeconds}); 0 when there is none. How far
 * from a tie an onset later than `fromSecond` is: where both modes are bound by the same budget, the
 * seconds of one are above the other's about half the time by a few percent.
 */
export function worstSecondRatio(learner: readonly (number | undefined)[], reference: readonly (number | undefined)[], atMostMs = 100, fromSecond = 2): number {
  return learner.slice(fromSecond).reduce<number>((high, value, i) => {
    const theirs = reference[i + fromSecond];
    return value === undefined || theirs === undefined || value <= atMostMs ? high : Math.max(high, value / theirs);
  }, 0);
}

/**
 * The onset line of a case: for each learner, how long its per-second p99
 * took to stay at or below the reference's, counting a second within the
 * reference's threshold (`referenceThresholdMs`) as at or below it, and the
 * strict figure beside it (see {@link onsetSeconds}).
 */
export function onsetLine(
  learners: readonly { readonly mode: string; readonly secondP99s: readonly (number | undefined)[] }[],
  reference: { readonly mode: string; readonly secondP99s: readonly (number | undefined)[] } | undefined,
  referenceThresholdMs = 100,
): string {
  if (reference === undefined) return "";
  const shown = (onset: number | undefined): string => (onset === undefined ? "never" : `${onset} s`);
  const parts = learners.map((learner) => {
    const onset = onsetSeconds(learner.secondP99s, reference.secondP99s, referenceThresholdMs);
    const strict = onsetSeconds(learner.secondP99s, reference.secondP99s);
    const worstAfterTwo = worstSecondRatio(learner.secondP99s, reference.secondP99s, referenceThresholdMs);
    return `${learner.mode}: ${shown(onset)} (strict: ${shown(strict)}; worst second from 2 s above ${referenceThresholdMs} ms: ${worstAfterTwo === 0 ? "none" : `${worstAfterTwo.toFixed(2)}x`})`;
  });
  return (
    `Onset: seconds from the start of the episode until each learner's per-second p99 stays at or below ${reference.mode}'s ` +
    `or within its ${referenceThresholdMs} ms (strict: at or below its p99 in every second): ${parts.join("; ")}.`
  );
}

/** Per-second p99 of reads, by the second of their scheduled start (0 = the first second of the episode). */
export function secondP99s(reads: readonly { readonly scheduledMs: number; readonly latencyMs: number }[], fromMs = 0, toMs = Infinity): (number | undefined)[] {
  const buckets: number[][] = [];
  for (const read of reads) {
    if (read.scheduledMs < fromMs || read.scheduledMs >= toMs) continue;
    const second = Math.floor((read.scheduledMs - fromMs) / 1000);
    (buckets[second] ??= []).push(read.latencyMs);
  }
  return Array.from(buckets, (latencies) => {
    if (latencies === undefined || latencies.length === 0) return undefined;
    const sorted = [...latencies].sort((a, b) => a - b);
    // The nearest-rank p99: with 30 reads a second, the slowest read.
    return sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)];
  });
}
