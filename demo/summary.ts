import { ms } from "../bench/support/stats.js";
import type { TimedRead } from "../bench/support/timeline.js";

/** A percentile of a sample and the 95 % interval the sample allows for it. */
export interface PercentileEstimate {
  value: number;
  low: number;
  high: number;
  count: number;
}

/**
 * The `quantile` (0 to 1) of the latencies, with its distribution-free 95 %
 * confidence interval: the order statistics at ranks n·q ± 1.96·√(n·q·(1 − q)).
 * A p99 over a few hundred reads rests on a handful of them; the interval
 * says how far another run of the same phase may land, without running it
 * again.
 */
export function percentileEstimate(latencies: readonly number[], quantile: number): PercentileEstimate {
  const sorted = [...latencies].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { value: Number.NaN, low: Number.NaN, high: Number.NaN, count: 0 };
  const at = (rank: number): number => sorted[Math.min(n, Math.max(1, rank)) - 1]!;
  const spread = 1.96 * Math.sqrt(n * quantile * (1 - quantile));
  return {
    value: at(Math.ceil(n * quantile)),
    low: at(Math.floor(n * quantile - spread)),
    high: at(Math.ceil(n * quantile + spread)),
    count: n,
  };
}

/** The latencies of the reads scheduled from `fromSeconds` until `toSeconds`. */
export function latenciesBetween(reads: readonly TimedRead[], fromSeconds: number, toSeconds: number): number[] {
  return reads.filter((read) => read.second >= fromSeconds && read.second < toSeconds).map((read) => read.latencyMs);
}

/**
 * Read by read, how much longer each read of a phase took than the
 * yardstick's read scheduled at the same moment. Every mode is offered the
 * same arrival times, so the k-th read of one mode and the k-th of another
 * were started together and met the same stalls of the machine: the
 * difference cancels them, which a percentile of each mode on its own does
 * not (one stall of a second on a busy machine puts every mode's p99 near a
 * second, whatever its hedging did).
 */
export function excessOver(reads: readonly TimedRead[], yardstick: readonly TimedRead[], fromSeconds: number, toSeconds: number): number[] {
  const bySchedule = (list: readonly TimedRead[]): TimedRead[] => [...list].sort((a, b) => a.second - b.second);
  const own = bySchedule(reads);
  const theirs = bySchedule(yardstick);
  const excess: number[] = [];
  for (let k = 0; k < Math.min(own.length, theirs.length); k += 1) {
    const read = own[k]!;
    if (read.second >= fromSeconds && read.second < toSeconds) excess.push(read.latencyMs - theirs[k]!.latencyMs);
  }
  return excess;
}

/**
 * The modes ordered best (lowest) first, as text: `<` between modes whose
 * intervals are apart, `≈` between neighbours whose intervals overlap (the
 * run cannot tell them apart). Ties are what keeps the ranking the same run
 * after run: two modes a few milliseconds apart swap places from one run to
 * the next, two whose intervals are apart do not.
 */
export function ranking(entries: readonly { name: string; estimate: PercentileEstimate }[]): string {
  const sorted = [...entries].sort((a, b) => a.estimate.value - b.estimate.value);
  return sorted
    .map((entry, i) => {
      if (i === 0) return entry.name;
      const previous = sorted[i - 1]!.estimate;
      return `${entry.estimate.low <= previous.high ? "≈" : "<"} ${entry.name}`;
    })
    .join(" ");
}

/** "4.0 × the oracle's 34.0 ms", or nothing without an oracle. */
export function timesOracle(value: number, oracle: number | undefined): string {
  return oracle === undefined || !(oracle > 0) ? "" : `${(value / oracle).toFixed(1)} × the oracle's ${ms(oracle)} ms`;
}

/** What one mode did, in words. */
export interface ModeOutcome {
  name: string;
  /** The p99 of the reads scheduled during the stragglers. */
  stragglersP99: PercentileEstimate;
  /** The p99 of their excess over the yardstick's reads, read by read (see `excessOver`). */
  stragglersExcessP99: PercentileEstimate;
  brownOutP50: PercentileEstimate;
  requestsPerRead: number;
  requestUnitsPerRead: number;
  errors: number;
}

/**
 * One sentence per mode: the tail with stragglers (the p99, and read by read
 * against the yardstick, with its interval), the median in the brown-out
 * against the oracle's, and what a read cost, drained losers counted.
 */
export function describeOutcome(outcome: ModeOutcome, yardstick: ModeOutcome, oracle: ModeOutcome | undefined): string {
  const excess = outcome.stragglersExcessP99;
  const medianVersus = outcome === oracle ? "" : timesOracle(outcome.brownOutP50.value, oracle?.brownOutP50.value);
  const errors = outcome.errors === 0 ? "" : `; ${outcome.errors} reads failed`;
  const tail =
    outcome === yardstick
      ? ""
      : `; read by read, 99 % of them at most ${ms(excess.value)} ms slower than the ${yardstick.name} read started with them ` +
        `(95 % interval ${ms(excess.low)}-${ms(excess.high)} ms)`;
  return (
    `${outcome.name}: with stragglers, p99 ${ms(outcome.stragglersP99.value)} ms${tail}; ` +
    `in the brown-out, half the reads within ${ms(outcome.brownOutP50.value)} ms${medianVersus === "" ? "" : ` (${medianVersus})`}; ` +
    `each read cost ${outcome.requestsPerRead.toFixed(2)} requests and ${outcome.requestUnitsPerRead.toFixed(2)} RU, drained losers counted${errors}.`
  );
}
