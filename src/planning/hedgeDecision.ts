import type { LatencyClass, LatencySurvival, LatencyWindows } from "../learning/latencyWindows.js";
import type { AdaptiveEstimate, AdaptiveThresholdSettings } from "./adaptiveThreshold.js";

/** The constants of the benefit rule. */
export const hedgeDecisionDefaults = {
  /**
   * The share of the hedges sent at a delay that must win for that delay to
   * be chosen. At 0.9, at most one hedge in ten is sent in vain: with 10 %
   * of reads straggling, hedging costs at most 11 % extra requests.
   */
  minWinShare: 0.9,
  /**
   * How many recent latencies of a region give its hedge latency L. They do
   * not expire: a region the rule rarely hedges into keeps the latency it
   * last showed. Eight, so that the five straight losses that demote a
   * region (their running times are bounds above its old median) are a
   * majority of them, and the region just found slow is not hedged into as
   * if it still answered in its old time.
   */
  recentLatencies: 8,
  /** Milliseconds a region's hedge latency is reused before its recent latencies are read again, once it has eight. */
  refreshMs: 1_000,
} as const;

/**
 * How strongly a read still running after `waitedMs` looks like a straggler,
 * from 0 to 1: 0 up to half its primary region's healthy tail (the 99th
 * percentile of its healthy latencies; a read there is an ordinary one),
 * rising linearly to 1 at the tail itself, which only one healthy read in a
 * hundred outlasts. A threshold at or past the tail (the benefit rule's
 * usually is) hedges with full evidence; a fixed threshold set below it
 * hedges many healthy-but-slowish reads, with less. Without a known tail (a
 * region whose window is young) it is 1: nothing tells such a read from a
 * straggler, and it is budgeted as before. The budget spends its last
 * hedges in this order (see `LoadBudget`).
 */
export function stragglerEvidence(waitedMs: number, healthyTailMs: number | undefined): number {
  if (healthyTailMs === undefined || !(healthyTailMs > 0)) return 1;
  return Math.min(1, Math.max(0, (2 * waitedMs) / healthyTailMs - 1));
}

/** The wait at which a read reaches straggler evidence `evidence` (0 to 1): the inverse of {@link stragglerEvidence}; at most the tail. */
export function waitForEvidence(evidence: number, healthyTailMs: number): number {
  return (healthyTailMs * (1 + Math.min(1, Math.max(0, evidence)))) / 2;
}

/** Where the benefit rule sends the first hedge of a read, or that it sees no benefit in one. */
export interface HedgeDelay {
  /** Milliseconds after the primary's launch. */
  readonly delayMs: number;
  /** The share of the hedges sent at that delay expected to win: P(T > delay + L + floor | T > delay). */
  readonly winShare: number;
}

/**
 * The benefit rule. A hedge sent `d` ms after the primary to a region whose
 * answers take `L` ms answers no earlier than `d + L`, so it wins only for a
 * primary still running then; it costs a request for every primary still
 * running at `d`. From the primary's survival P(T > t), the hedge at `d`
 * wins for the share P(T > d + L + floor | T > d) of the reads it is sent
 * for (winning by less than the floor is scheduling noise). The rule picks
 * the earliest `d`, from the floor up through the steps of the survival to
 * the ceiling, where that share reaches `minWinShare`; `undefined` when no
 * delay up to the ceiling reaches it.
 *
 * As in Kaler, He and Elnikety's single-reissue policies (SPAA 2017), the
 * delay comes from the response-time log, and a reissue at `d` costs
 * P(T > d) requests per read. Their SingleR also reissues with a
 * probability below 1 when the budget cannot cover every read reaching
 * `d`; here every read reaching `d` is hedged, since the `d` chosen lies
 * past the primary's healthy latencies, where mostly reads that would
 * straggle remain, and one skipped at random would answer as late as it
 * straggles. The budget still refuses hedges beyond its share.
 */
export function hedgeDelay(
  survival: LatencySurvival,
  hedgeLatencyMs: number,
  bounds: Pick<AdaptiveThresholdSettings, "floor" | "ceiling">,
  minWinShare: number = hedgeDecisionDefaults.minWinShare,
): HedgeDelay | undefined {
  const { floor, ceiling } = bounds;
  const winsAfter = hedgeLatencyMs + floor;
  const consider = (delayMs: number): HedgeDelay | undefined => {
    const reaching = survival.above(delayMs);
    if (reaching === 0) return undefined;
    const winShare = survival.above(delayMs + winsAfter) / reaching;
    return winShare >= minWinShare ? { delayMs, winShare } : undefined;
  };
  const atFloor = consider(floor);
  if (atFloor !== undefined) return atFloor;
  for (const step of survival.steps) {
    if (step <= floor) continue;
    if (step > ceiling || survival.above(step) === 0) return undefined;
    const chosen = consider(step);
    if (chosen !== undefined) return chosen;
  }
  return undefined;
}

/**
 * A region's recent latencies in one class, the last `recentLatencies` of
 * them: answers, and lower bounds of arms cut short that lie above the
 * median (a bound below it says nothing new; one above it says the region
 * is slower than it looked). The median of them is the region's hedge
 * latency L, a lower bound of the true median while bounds are among them:
 * an L too low makes the rule hedge a little too readily, and the hedges it
 * sends then teach the true L.
 */
class RecentLatency {
  private readonly latencies: number[] = [];
  private next = 0;
  private changed = false;
  private medianMs: number | undefined;
  private readAt = -Infinity;

  add(latencyMs: number, atLeast: boolean): void {
    if (atLeast && this.medianMs !== undefined && latencyMs <= this.medianMs) return;
    if (this.latencies.length < hedgeDecisionDefaults.recentLatencies) this.latencies.push(latencyMs);
    else this.latencies[this.next] = latencyMs;
    this.next = (this.next + 1) % hedgeDecisionDefaults.recentLatencies;
    this.changed = true;
  }

  median(now: number): number | undefined {
    // Until the ring is full each latency moves the median a lot, and a few bounds must be able to correct a first one far too low.
    const young = this.latencies.length < hedgeDecisionDefaults.recentLatencies;
    if (this.changed && (young || now - this.readAt >= hedgeDecisionDefaults.refreshMs)) {
      const sorted = [...this.latencies].sort((a, b) => a - b);
      this.medianMs = sorted[(sorted.length - 1) >> 1];
      this.readAt = now;
      this.changed = false;
    }
    return this.medianMs;
  }
}

/** A tenth of a millisecond is finer than any timer fires; rounding keeps the diagnostics readable. */
function rounded(ms: number): number {
  return Math.round(ms * 10) / 10;
}

interface CachedEstimate {
  readonly survival: LatencySurvival;
  readonly hedgeLatencyMs: number;
  readonly estimate: AdaptiveEstimate;
}

/**
 * The benefit rule per primary region, hedge region and latency class,
 * computed when the primary's window view or the hedge region's latency
 * changes (at most about once a second each), not per request.
 */
export class HedgeDecisions {
  private readonly recent = new Map<string, RecentLatency>();
  private readonly cached = new Map<string, CachedEstimate>();

  constructor(private readonly windows: LatencyWindows) {}

  /**
   * Records a latency of a region: an answer, or (`atLeast`) the running
   * time of an arm cut short, a lower bound of its latency.
   */
  observe(region: string, latencyClass: LatencyClass, latencyMs: number, atLeast: boolean): void {
    if (!Number.isFinite(latencyMs) || latencyMs < 0) return;
    const key = `${latencyClass}\u0000${region}`;
    let recent = this.recent.get(key);
    if (recent === undefined) {
      recent = new RecentLatency();
      this.recent.set(key, recent);
    }
    recent.add(latencyMs, atLeast);
  }

  /** The hedge latency L of a region: the median of its recent latencies; `undefined` until it has one. */
  hedgeLatencyMs(region: string, latencyClass: LatencyClass): number | undefined {
    return this.recent.get(`${latencyClass}\u0000${region}`)?.median(performance.now());
  }

  /**
   * The threshold of a read whose primary and first hedge go to the regions
   * named: `benefit`, the rule's delay; `noBenefit`, when no delay wins
   * often enough, a backstop: the primary's largest recent answer plus the
   * hedge region's latency (between the floor and the ceiling). A read that
   * has outlasted every answer of its primary by as long as a hedge takes
   * is unlike anything the rule has seen: a straggler the window has not
   * shown yet, not a read slowed by a burst of load, which would be over by
   * then. Once a hedge sent there wins, the primary's survival holds that
   * censored latency and the rule finds its benefit past the primary's
   * answers. `undefined` while the hedge region's
   * latency is unknown or the primary's window holds fewer than
   * `minSamples` latencies: the percentile threshold then decides, and the
   * hedges it sends teach the rule what it needs.
   */
  estimate(primary: string, hedge: string, latencyClass: LatencyClass, settings: AdaptiveThresholdSettings): AdaptiveEstimate | undefined {
    const hedgeLatencyMs = this.hedgeLatencyMs(hedge, latencyClass);
    if (hedgeLatencyMs === undefined) return undefined;
    const survival = this.windows.survival(primary, latencyClass);
    if (survival === undefined || survival.samples < settings.minSamples) return undefined;
    const key = `${latencyClass}\u0000${primary}\u0000${hedge}`;
    const cached = this.cached.get(key);
    if (cached !== undefined && cached.survival === survival && cached.hedgeLatencyMs === hedgeLatencyMs) return cached.estimate;
    const chosen = hedgeDelay(survival, hedgeLatencyMs, settings);
    const estimate: AdaptiveEstimate =
      chosen === undefined
        ? { thresholdMs: rounded(Math.min(settings.ceiling, Math.max(settings.floor, (survival.largest ?? settings.ceiling) + hedgeLatencyMs))), source: "noBenefit", region: primary }
        : { thresholdMs: rounded(chosen.delayMs), source: "benefit", region: primary };
    this.cached.set(key, { survival, hedgeLatencyMs, estimate });
    return estimate;
  }
}
