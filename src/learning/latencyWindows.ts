import { DDSketch } from "@datadog/sketches-js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { positiveMilliseconds, wholeNumber } from "../options.js";
import { StallDetector } from "./stallDetector.js";

/**
 * The operation classes whose latencies are kept apart: a point read and a
 * cross-partition query of the same region differ by an order of magnitude,
 * so one window over both would fit neither.
 */
export type LatencyClass = "pointRead" | "query" | "otherRead";

/** Every {@link LatencyClass}, in a fixed order. */
export const latencyClasses: readonly LatencyClass[] = ["pointRead", "query", "otherRead"];

/** The latency class of a document read, or `undefined` for anything else (writes are not learned from). */
export function latencyClassOf(operation: OperationKind): LatencyClass | undefined {
  switch (operation) {
    case "pointRead":
      return "pointRead";
    case "query":
      return "query";
    case "queryPlan":
    case "readFeed":
    case "changeFeed":
      return "otherRead";
    default:
      return undefined;
  }
}

/** The shape of a {@link LatencyWindows} when none is given. */
export const latencyWindowDefaults = {
  /** Milliseconds each bucket covers. */
  bucketMs: 5_000,
  /** Buckets per window: the window covers the last 25 to 30 seconds. */
  buckets: 6,
  /**
   * The newest buckets the survival (the benefit rule's view) is read from:
   * the last 5 to 10 seconds, so that the delay follows what the region does
   * now and a slow start (a cold client's first reads) is forgotten within
   * seconds, not the half minute the baseline keeps. Six buckets of five
   * seconds cost twice the sketches of the three of ten they replace.
   */
  survivalBuckets: 2,
  /**
   * Milliseconds a merged view of a window is reused before it is merged
   * again; a view is merged sooner while the window is young (under a
   * hundred latencies) or the latencies recorded since add more than a
   * tenth to what it holds, so that a young window is usable after its
   * first few requests rather than a second later.
   */
  refreshMs: 1_000,
  /**
   * The sketches' relative accuracy: 2 % of 5 ms is 0.1 ms, far finer than
   * any threshold needs, and it keeps a sketch spanning 1 ms to 1 s at about
   * 3 KB.
   */
  relativeAccuracy: 0.02,
} as const;

/** Options of a {@link LatencyWindows}. */
export interface LatencyWindowsOptions {
  /** Milliseconds each bucket covers. Default 5000. */
  bucketMs?: number;
  /** Buckets per window. Default 6. */
  buckets?: number;
  /** The newest buckets the survival is read from; at most `buckets`. Default 2. */
  survivalBuckets?: number;
  /** Milliseconds a merged view of a window is reused. Default 1000. */
  refreshMs?: number;
}

/** Percentiles of a window, in milliseconds. */
export interface LatencySummary {
  /** How many latencies the window holds. */
  samples: number;
  /** The median. */
  p50: number;
  /** The 95th percentile. */
  p95: number;
  /** The 99th percentile. */
  p99: number;
}

/**
 * What a latency says about its region: `baseline`, an answer the region
 * gave in a fair race, part of its healthy baseline; `tail`, an answer that
 * came last only because no hedge was allowed to race it; `censored`, the
 * running time of an arm cancelled or timed out, a lower bound of its
 * latency. Tail and censored latencies belong in what the region's latency
 * looks like, but not in its healthy baseline.
 */
export type LatencyObservation = "baseline" | "tail" | "censored";

/** Below this many latencies a window is young: every new one refreshes its view, a merge of a few hundred bins at most. */
const youngWindow = 100;

/** The baseline answers (without stalls) a window needs before it tells a stall's answers from its healthy tail. */
const stallBaselineSamples = 20;

interface Bucket {
  readonly epoch: number;
  baseline?: DDSketch;
  tail?: DDSketch;
  censored?: DDSketch;
  /** The answers of this bucket (baseline or tail) found to be a stall of the client: also in `baseline` or `tail`, left out of the survival only. */
  stalled?: DDSketch;
}

interface MergedView {
  readonly at: number;
  readonly epoch: number;
  /** How many latencies the buckets held when the view was merged. */
  readonly held: number;
  readonly baseline: DDSketch | undefined;
  /** Baseline and tail answers together. */
  readonly answers: DDSketch | undefined;
  /** How many censored latencies the buckets held, with the latencies still running when the view was merged. */
  readonly censored: number;
  /** Every latency: answers and censored ones. */
  readonly observed: DDSketch | undefined;
  /** The answers of the newest `survivalBuckets` buckets, baseline and tail. */
  readonly recentAnswers: DDSketch | undefined;
  /** How many censored latencies those buckets held, with the latencies still running. */
  readonly recentCensored: number;
  /** The answers of stalls of the client, of every bucket and of the newest `survivalBuckets` (see `StallDetector`). */
  readonly stalled: DDSketch | undefined;
  readonly recentStalled: DDSketch | undefined;
  /** Built on the first survival query of the view. */
  survival?: LatencySurvival;
  /**
   * Above this an answer is slow to the stall detector: the 99th percentile
   * of the baseline without its stalls (a stall's tail answers are taken
   * out of it too, which can only lower it by their few bins), found once
   * per view; infinite while that holds fewer than `stallBaselineSamples`.
   * Without stalls' answers, so that stalls a few seconds apart do not
   * lift the bound into the next one's answers.
   */
  slowAbove?: number;
}

function newSketch(): DDSketch {
  return new DDSketch({ relativeAccuracy: latencyWindowDefaults.relativeAccuracy });
}

function mergeInto(target: DDSketch | undefined, source: DDSketch | undefined): DDSketch | undefined {
  if (source === undefined || source.count === 0) return target;
  const merged = target ?? newSketch();
  merged.merge(source);
  return merged;
}

/** One region and class: its buckets, newest last, and the last merged view of them. */
class Window {
  private buckets: Bucket[] = [];
  private view: MergedView | undefined;
  private recordedSinceView = 0;
  /** Latencies known to run past a bound and not ended yet (drained losers): censored until their answer is recorded. */
  private running = 0;
  private readonly stalls = new StallDetector((epochs, latencies) => this.discount(epochs, latencies));
  /** A stall was found since the view was merged: the survival must leave it out at once, not a second later. */
  private stallSinceView = false;

  constructor(private readonly settings: Required<LatencyWindowsOptions>) {}

  record(epoch: number, latencyMs: number, observation: LatencyObservation, at: number): void {
    const slowAbove = observation === "censored" ? undefined : this.slowAbove();
    this.dropStale(epoch);
    let bucket = this.buckets[this.buckets.length - 1];
    if (bucket === undefined || bucket.epoch !== epoch) {
      bucket = { epoch };
      this.buckets.push(bucket);
    }
    const sketch =
      observation === "baseline"
        ? (bucket.baseline ??= newSketch())
        : observation === "tail"
          ? (bucket.tail ??= newSketch())
          : (bucket.censored ??= newSketch());
    sketch.accept(latencyMs);
    this.recordedSinceView += 1;
    if (slowAbove !== undefined) this.stalls.answer(at, epoch, latencyMs, slowAbove);
  }

  /**
   * See `MergedView.slowAbove`: from the last view a query merged, which
   * holds no answer recorded since (in a young window the first of a
   * stall's answers would otherwise be its own bound); infinite before the
   * first view, as a window nobody reads has no survival to keep clean.
   */
  private slowAbove(): number {
    const view = this.view;
    if (view === undefined) return Number.POSITIVE_INFINITY;
    // A young window's p99 is its largest healthy answers: enough to tell a stall's, which are tens of milliseconds later.
    view.slowAbove ??= quantileOfBins(binsOf(view.baseline, view.stalled), 0.99, stallBaselineSamples);
    return view.slowAbove;
  }

  /** Records a stall's answers in the buckets they were recorded in (one that has left the window takes them with it). */
  private discount(epochs: readonly number[], latencies: readonly number[]): void {
    for (let i = 0; i < latencies.length; i++) {
      const bucket = this.buckets.find((each) => each.epoch === epochs[i]);
      if (bucket !== undefined) (bucket.stalled ??= newSketch()).accept(latencies[i] ?? 0);
    }
    this.stallSinceView = true;
  }

  /** Counts a latency still running as censored, from now until {@link Window.stopRunning}; the view is merged again as for a new latency. */
  startRunning(): void {
    this.running += 1;
    this.recordedSinceView += 1;
  }

  stopRunning(): void {
    if (this.running > 0) this.running -= 1;
    this.recordedSinceView += 1;
  }

  merged(now: number, epoch: number): MergedView {
    this.stalls.settle(now);
    const view = this.view;
    if (
      view !== undefined &&
      !this.stallSinceView &&
      view.epoch === epoch &&
      now - view.at < this.settings.refreshMs &&
      (this.recordedSinceView === 0 || (view.held >= youngWindow && this.recordedSinceView * 10 <= view.held))
    ) {
      return view;
    }
    this.dropStale(epoch);
    let baseline: DDSketch | undefined;
    let tail: DDSketch | undefined;
    let censored: DDSketch | undefined;
    let stalled: DDSketch | undefined;
    let recentAnswers: DDSketch | undefined;
    let recentCensored = 0;
    let recentStalled: DDSketch | undefined;
    const recentFrom = epoch - this.settings.survivalBuckets + 1;
    for (const bucket of this.buckets) {
      baseline = mergeInto(baseline, bucket.baseline);
      tail = mergeInto(tail, bucket.tail);
      censored = mergeInto(censored, bucket.censored);
      stalled = mergeInto(stalled, bucket.stalled);
      if (bucket.epoch < recentFrom) continue;
      recentAnswers = mergeInto(mergeInto(recentAnswers, bucket.baseline), bucket.tail);
      recentCensored += bucket.censored?.count ?? 0;
      recentStalled = mergeInto(recentStalled, bucket.stalled);
    }
    const answers = tail === undefined ? baseline : mergeInto(mergeInto(undefined, baseline), tail);
    const observed = censored === undefined ? answers : mergeInto(mergeInto(undefined, answers), censored);
    const { running } = this;
    this.view = {
      at: now,
      epoch,
      held: observed?.count ?? 0,
      baseline,
      answers,
      censored: (censored?.count ?? 0) + running,
      observed,
      recentAnswers,
      recentCensored: recentCensored + running,
      stalled,
      recentStalled,
    };
    this.recordedSinceView = 0;
    this.stallSinceView = false;
    return this.view;
  }

  isEmpty(epoch: number): boolean {
    this.dropStale(epoch);
    return this.buckets.length === 0 && this.running === 0;
  }

  private dropStale(epoch: number): void {
    const oldest = epoch - this.settings.buckets + 1;
    while (this.buckets.length > 0 && (this.buckets[0]?.epoch ?? oldest) < oldest) this.buckets.shift();
  }
}

/** A sketch's quantile, kept within the values it saw: a bin's representative value may lie a little beyond them. */
function quantileOf(sketch: DDSketch, quantile: number): number {
  return Math.min(Math.max(sketch.getValueAtQuantile(quantile), sketch.min), sketch.max);
}

function summarize(sketch: DDSketch | undefined): LatencySummary | undefined {
  if (sketch === undefined || sketch.count === 0) return undefined;
  return {
    samples: sketch.count,
    p50: quantileOf(sketch, 0.5),
    p95: quantileOf(sketch, 0.95),
    p99: quantileOf(sketch, 0.99),
  };
}

/**
 * The survival function of a region's latency, P(T > t), as one view of
 * its window knows it: from its answers, with every censored latency
 * counted as outlasting every t. A censored latency is an arm cut short by
 * a hedge that answered first, or by a timeout: a read a hedge won, or
 * would have. Counted at its bound, it would drop out of the survival just
 * where a hedge lands, and once hedging works the stragglers it cuts short
 * would stop looking slow, and hedging would stop: counted as outlasting,
 * they keep the estimate where it was.
 */
export class LatencySurvival {
  /** Answers and censored latencies together, a stall's answers left out. */
  readonly samples: number;
  /** How many latencies are censored. */
  readonly censored: number;
  /** How many answers of stalls of the client are left out: real reads all the same, counted against `minSamples`. */
  readonly stalled: number;
  /** The distinct answer latencies, ascending: where the survival steps. */
  readonly steps: readonly number[];
  /** How many answers took at most `steps[i]`. */
  private readonly atMost: readonly number[];

  /**
   * @param answers - `[latency, count]` pairs of the answers, ascending by latency.
   * @param censored - how many censored latencies there are.
   * @param stalled - how many answers of stalls of the client were left out of `answers`.
   */
  constructor(answers: ReadonlyArray<readonly [number, number]>, censored: number, stalled = 0) {
    const steps: number[] = [];
    const atMost: number[] = [];
    let count = 0;
    for (const [latency, times] of answers) {
      count += times;
      if (steps.length > 0 && steps[steps.length - 1] === latency) atMost[atMost.length - 1] = count;
      else {
        steps.push(latency);
        atMost.push(count);
      }
    }
    this.steps = steps;
    this.atMost = atMost;
    this.censored = censored;
    this.stalled = stalled;
    this.samples = count + censored;
  }

  /** The largest answer latency, `undefined` without answers. */
  get largest(): number | undefined {
    return this.steps[this.steps.length - 1];
  }

  /** P(T > t): the share of the latencies above `t`, every censored one among them. */
  above(t: number): number {
    if (this.samples === 0) return 0;
    // The last step at or below t, by binary search: the answers above t are the ones after it.
    let low = 0;
    let high = this.steps.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.steps[middle] ?? Infinity) <= t) low = middle + 1;
      else high = middle;
    }
    const answered = this.samples - this.censored;
    const atOrBelow = low === 0 ? 0 : (this.atMost[low - 1] ?? 0);
    return (answered - atOrBelow + this.censored) / this.samples;
  }
}

/**
 * The bins of a sketch as ascending `[latency, count]` pairs, each latency
 * the bin's upper edge (no value in the bin exceeds it) kept within what the
 * sketch saw: a delay chosen at a step then lies past every latency below
 * it, not amid the bin its representative value stands for. `without`, a
 * sketch of some of the same latencies (a stall's), is taken out bin by bin.
 */
function binsOf(sketch: DDSketch | undefined, without?: DDSketch): Array<[number, number]> {
  if (sketch === undefined || sketch.count === 0) return [];
  const bins: Array<[number, number]> = [];
  const zeroCount = sketch.zeroCount - (without?.zeroCount ?? 0);
  if (zeroCount > 0) bins.push([0, zeroCount]);
  const { store, mapping } = sketch;
  // A logarithmic bin holds (gamma^(k-1), gamma^k]; its value is gamma^k * 2 / (1 + gamma).
  const toUpperEdge = (1 + mapping.gamma) / 2;
  // Both sketches share one mapping (one relative accuracy), so a key is the same bin in each.
  const taken = without === undefined || without.count === 0 ? undefined : without.store;
  for (let index = 0; index < store.bins.length; index++) {
    const key = index + store.offset;
    const count = (store.bins[index] ?? 0) - (taken?.bins[key - taken.offset] ?? 0);
    if (count > 0) bins.push([Math.min(Math.max(mapping.value(key) * toUpperEdge, sketch.min), sketch.max), count]);
  }
  return bins;
}

/** The nearest-rank `quantile` of ascending `[latency, count]` pairs; infinite below `minCount` latencies. */
function quantileOfBins(bins: ReadonlyArray<readonly [number, number]>, quantile: number, minCount: number): number {
  let total = 0;
  for (const [, count] of bins) total += count;
  if (total < minCount) return Number.POSITIVE_INFINITY;
  const rank = Math.ceil(quantile * total);
  let seen = 0;
  for (const [latency, count] of bins) {
    seen += count;
    if (seen >= rank) return latency;
  }
  return Number.POSITIVE_INFINITY;
}

/**
 * Sliding-window latency records per region and {@link LatencyClass}, each a
 * few DDSketches (`@datadog/sketches-js`: mergeable, with a bounded relative
 * error, about 1 to 3 KB each): a window is a few buckets of ten seconds,
 * rotated lazily when it is touched, so no timer runs. Recording costs O(1);
 * a query merges the buckets at most once per `refreshMs` (sooner while the
 * window is young or grows fast) and reuses the merged view in between.
 *
 * Three kinds of latency are kept apart (see {@link LatencyObservation}).
 * The *baseline* ones, answers given in a fair race, form the healthy
 * baseline the percentile threshold reads. The *tail* ones (answers no hedge
 * was allowed to race) and the *censored* ones (lower bounds from arms
 * cancelled or timed out while still running) belong in what the region's
 * latency looks like, the percentiles of {@link LatencyWindows.summary} and
 * the {@link LatencyWindows.survival} the hedge decision reads, but never in
 * the baseline, where a slow region's own tail would drag its threshold up.
 *
 * The answers of a stall of the client (see `StallDetector`) stay in all of
 * it but the survival: the baseline, the percentiles and the counts see
 * every answer, while the benefit rule does not hold its delay above reads
 * that a paused event loop made late for a moment.
 */
export class LatencyWindows {
  private readonly windows = new Map<string, Map<LatencyClass, Window>>();
  private readonly settings: Required<LatencyWindowsOptions>;

  constructor(options: LatencyWindowsOptions = {}) {
    const buckets = wholeNumber("buckets", options.buckets ?? latencyWindowDefaults.buckets, 1);
    const survivalBuckets = wholeNumber("survivalBuckets", options.survivalBuckets ?? Math.min(buckets, latencyWindowDefaults.survivalBuckets), 1);
    if (survivalBuckets > buckets) throw new RangeError(`survivalBuckets must be at most buckets (${buckets}); got ${survivalBuckets}.`);
    this.settings = {
      bucketMs: positiveMilliseconds("bucketMs", options.bucketMs ?? latencyWindowDefaults.bucketMs),
      buckets,
      survivalBuckets,
      refreshMs: positiveMilliseconds("refreshMs", options.refreshMs ?? latencyWindowDefaults.refreshMs),
    };
  }

  /**
   * Records one latency of a region, as of `at` (`performance.now()`, by
   * default now). Negative or non-finite latencies are ignored.
   */
  record(region: string, latencyClass: LatencyClass, latencyMs: number, observation: LatencyObservation, at = performance.now()): void {
    if (!Number.isFinite(latencyMs) || latencyMs < 0) return;
    this.windowOf(region, latencyClass).record(this.epochOf(at), latencyMs, observation, at);
  }

  /**
   * Counts one latency of a region that is known to run past a bound and
   * has not ended (a drained loser) as censored in its survival, until
   * {@link LatencyWindows.stopRunning}: a straggler drained for a second is
   * otherwise unknown to the benefit rule for that second, and every read
   * of the first second of a straggler episode would wait for a backstop.
   */
  startRunning(region: string, latencyClass: LatencyClass): void {
    this.windowOf(region, latencyClass).startRunning();
  }

  /** Ends a {@link LatencyWindows.startRunning}; record the latency it ended with as usual. */
  stopRunning(region: string, latencyClass: LatencyClass): void {
    this.windows.get(region)?.get(latencyClass)?.stopRunning();
  }

  /**
   * The `quantile` of a region's baseline latencies, or `undefined` while
   * the window holds fewer than `minSamples` of them.
   */
  baseline(region: string, latencyClass: LatencyClass, quantile: number, minSamples: number): number | undefined {
    const baseline = this.view(region, latencyClass)?.baseline;
    if (baseline === undefined || baseline.count < minSamples) return undefined;
    return quantileOf(baseline, quantile);
  }

  /**
   * The survival function of a region's latency in one class (see
   * {@link LatencySurvival}), built once per merged view of the window, so
   * it changes no more often than the view; `undefined` when the window is
   * empty. It is read from the newest `survivalBuckets` buckets when they
   * hold at least a hundred latencies, else from the whole window.
   */
  survival(region: string, latencyClass: LatencyClass): LatencySurvival | undefined {
    const view = this.view(region, latencyClass);
    if (view === undefined || view.held === 0) return undefined;
    // A quiet region's newest buckets hold too few latencies for a tail: it is read over the whole window instead.
    const recent = (view.recentAnswers?.count ?? 0) + view.recentCensored >= youngWindow;
    view.survival ??= recent
      ? new LatencySurvival(binsOf(view.recentAnswers, view.recentStalled), view.recentCensored, view.recentStalled?.count ?? 0)
      : new LatencySurvival(binsOf(view.answers, view.stalled), view.censored, view.stalled?.count ?? 0);
    return view.survival;
  }

  /**
   * Percentiles of everything the window knows of a region's latency,
   * baseline and tail, for one class or (without `latencyClass`) for
   * all classes together; `undefined` when the window is empty.
   */
  summary(region: string, latencyClass?: LatencyClass): LatencySummary | undefined {
    if (latencyClass !== undefined) return summarize(this.view(region, latencyClass)?.observed);
    let all: DDSketch | undefined;
    for (const each of latencyClasses) all = mergeInto(all, this.view(region, each)?.observed);
    return summarize(all);
  }

  /** The regions with at least one latency in their windows. */
  regions(): string[] {
    const epoch = this.epochOf(performance.now());
    const names: string[] = [];
    for (const [region, byClass] of this.windows) {
      for (const [latencyClass, window] of byClass) if (window.isEmpty(epoch)) byClass.delete(latencyClass);
      if (byClass.size === 0) this.windows.delete(region);
      else names.push(region);
    }
    return names;
  }

  private view(region: string, latencyClass: LatencyClass): MergedView | undefined {
    const window = this.windows.get(region)?.get(latencyClass);
    if (window === undefined) return undefined;
    const now = performance.now();
    return window.merged(now, this.epochOf(now));
  }

  private windowOf(region: string, latencyClass: LatencyClass): Window {
    let byClass = this.windows.get(region);
    if (byClass === undefined) {
      byClass = new Map();
      this.windows.set(region, byClass);
    }
    let window = byClass.get(latencyClass);
    if (window === undefined) {
      window = new Window(this.settings);
      byClass.set(latencyClass, window);
    }
    return window;
  }

  private epochOf(now: number): number {
    return Math.floor(now / this.settings.bucketMs);
  }
}
