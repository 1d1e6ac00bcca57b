import type { LatencyClass, LatencyWindows } from "../learning/latencyWindows.js";
import { optionKeys, optionsObject, orDefault, positiveMilliseconds, share, wholeNumber } from "../options.js";

/**
 * The adaptive threshold's knobs (`threshold: { mode: "adaptive", ... }`;
 * `threshold: "adaptive"` takes every default).
 */
export interface AdaptiveThresholdOptions {
  /** Selects the adaptive threshold. */
  mode: "adaptive";
  /**
   * The share of extra requests hedging is meant to add, above 0 and below
   * 1. The threshold is the `1 - maxExtraLoad` quantile of the healthy
   * baseline (default 0.05: its 95th percentile). The hedge budget's share
   * defaults to at least this much; a `budget.maxExtraLoad` set lower wins.
   */
  maxExtraLoad?: number;
  /** The lowest threshold, in milliseconds. Default 5. */
  floor?: number;
  /**
   * The highest threshold, in milliseconds, and the threshold in force until
   * a window holds `minSamples` latencies. Default: the fixed default
   * threshold (500 ms when enabled explicitly, `min(1000, requestTimeout / 2)`
   * when following the account's PPAF state).
   */
  ceiling?: number;
  /** How many baseline latencies (answers in a fair race) a region's window needs before its percentile is trusted. Default 20. */
  minSamples?: number;
}

/** Every key of {@link AdaptiveThresholdOptions}, checked against the interface by the compiler. */
const adaptiveThresholdOptionKeys = optionKeys<AdaptiveThresholdOptions>({ mode: true, maxExtraLoad: true, floor: true, ceiling: true, minSamples: true });

/** The defaults of the adaptive threshold. */
export const adaptiveThresholdDefaults = {
  /** The share of extra requests hedging aims at: the threshold is the 95th percentile of the healthy baseline. */
  maxExtraLoad: 0.05,
  /** Milliseconds: below this, scheduling noise on the client outweighs what a hedge can win. */
  floor: 5,
  /** Baseline latencies a window needs: enough that the 95th percentile is not just the largest one. */
  minSamples: 20,
} as const;

/** {@link AdaptiveThresholdOptions} with every default filled in. */
export interface AdaptiveThresholdSettings {
  readonly maxExtraLoad: number;
  /** `1 - maxExtraLoad`. */
  readonly quantile: number;
  readonly floor: number;
  readonly ceiling: number;
  readonly minSamples: number;
}

/** Whether a `threshold` option selects the adaptive threshold. */
export function isAdaptiveThreshold(value: unknown): value is "adaptive" | AdaptiveThresholdOptions {
  return value === "adaptive" || (typeof value === "object" && value !== null && (value as { mode?: unknown }).mode === "adaptive");
}

/**
 * Validates an adaptive `threshold` option and fills in its defaults.
 * @param fixedDefault - the fixed threshold the policy would use otherwise: the default ceiling.
 */
export function resolveAdaptiveThreshold(value: "adaptive" | AdaptiveThresholdOptions, fixedDefault: number): AdaptiveThresholdSettings {
  const options: Partial<AdaptiveThresholdOptions> =
    value === "adaptive" ? {} : optionsObject("threshold", value, adaptiveThresholdOptionKeys);
  const maxExtraLoad = share("threshold.maxExtraLoad", orDefault(options.maxExtraLoad, adaptiveThresholdDefaults.maxExtraLoad), false);
  const ceiling = positiveMilliseconds("threshold.ceiling", options.ceiling ?? fixedDefault);
  const floor =
    options.floor === undefined ? Math.min(adaptiveThresholdDefaults.floor, ceiling) : positiveMilliseconds("threshold.floor", options.floor);
  if (floor > ceiling) {
    throw new RangeError(`threshold.floor (${floor}) must not exceed threshold.ceiling (${ceiling}).`);
  }
  const minSamples = wholeNumber("threshold.minSamples", orDefault(options.minSamples, adaptiveThresholdDefaults.minSamples), 1);
  return { maxExtraLoad, quantile: 1 - maxExtraLoad, floor, ceiling, minSamples };
}

/** The threshold of one request, and where it came from. */
export interface AdaptiveEstimate {
  /** Milliseconds. */
  readonly thresholdMs: number;
  /**
   * `adaptive`, from a region's baseline; `adaptiveWarmup`, the ceiling
   * because no window has enough latencies yet; `benefit` and `noBenefit`,
   * from the benefit rule (see `HedgeDecisions`).
   */
  readonly source: "adaptive" | "adaptiveWarmup" | "benefit" | "noBenefit";
  /** The region whose latencies set the threshold. */
  readonly region?: string;
}

/** Which baselines a request's threshold may come from. */
export interface BaselineCandidates {
  /**
   * The regions of the race. The lowest baseline among them wins: the best
   * region's healthy latency, never the slow primary's own alone, so a
   * degraded primary cannot raise its own threshold and stop the hedging
   * that is meant to rescue it.
   */
  readonly regions: readonly string[];
  /**
   * A primary chosen by the region ranking instead of the region the request
   * addressed, which was found slow; the chosen one is typically farther
   * away. Only its own baseline is used, and the ceiling until it has one:
   * the lowest baseline would often be the slow region's own, from before it
   * slowed down, and hedging the far region after the near region's few
   * milliseconds would send nearly every read twice, into the region that
   * was just found slow.
   */
  readonly rankedPrimary?: string;
}

/**
 * The adaptive threshold of one request: the `1 - maxExtraLoad` quantile of
 * the healthy (baseline) latencies of the chosen region, clamped
 * between the floor and the ceiling; the ceiling until some window holds
 * `minSamples` latencies. Requests outside the learned classes (writes) get
 * the ceiling too.
 */
export function adaptiveThreshold(
  windows: LatencyWindows,
  settings: AdaptiveThresholdSettings,
  latencyClass: LatencyClass | undefined,
  candidates: BaselineCandidates,
): AdaptiveEstimate {
  const warmup: AdaptiveEstimate = { thresholdMs: settings.ceiling, source: "adaptiveWarmup" };
  if (latencyClass === undefined) return warmup;
  const baselineOf = (region: string): number | undefined =>
    windows.baseline(region, latencyClass, settings.quantile, settings.minSamples);
  const clamped = (baseline: number, region: string): AdaptiveEstimate => ({
    // A tenth of a millisecond is finer than any timer fires; rounding keeps the diagnostics readable.
    thresholdMs: Math.min(settings.ceiling, Math.max(settings.floor, Math.round(baseline * 10) / 10)),
    source: "adaptive",
    region,
  });
  if (candidates.rankedPrimary !== undefined) {
    const own = baselineOf(candidates.rankedPrimary);
    return own === undefined ? warmup : clamped(own, candidates.rankedPrimary);
  }
  let best: { baseline: number; region: string } | undefined;
  for (const region of candidates.regions) {
    const baseline = baselineOf(region);
    if (baseline !== undefined && (best === undefined || baseline < best.baseline)) best = { baseline, region };
  }
  return best === undefined ? warmup : clamped(best.baseline, best.region);
}
