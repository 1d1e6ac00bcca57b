import type { LatencyClass, LatencySurvival, LatencyWindows } from "../learning/latencyWindows.js";
import type { AdaptiveEstimate, AdaptiveThresholdSettings } from "./adaptiveThreshold.js";

/** The constants of the benefit rule. */
export const hedgeDecisionDefaults = {
  /**
   * The least share of reads a hedge must be able to rescue for the rule to
   * hedge at all: the share a hedge sent at the floor would still beat by
   * the floor. Below half a percent the rescued reads lie beyond the 99.5th
   * percentile, so hedging them moves neither p99 nor much of p99.9, while
   * every hedge sent for them (at least one point of extra requests, see
   * `inVainShare`) is paid by every read; a lone outlier in the window is
   * left to the backstop.
   */
  minBenefitShare: 0.005,
  /**
   * The share of reads, above those a hedge can rescue, that may be hedged
   * in vain: the rule spends at most the rescuable share plus this on
   * hedges, and picks the earliest delay within that spend. One point: a
   * straggler share of 10 % then costs at most 11 % extra requests, under
   * the budget's 15 %, and the delay may sit a little inside the healthy
   * tail, where the healthy-but-slowish reads it hedges for nothing are one
   * in a hundred.
   */
  inVainShare: 0.01,
  /**
   * The share of the hedges sent at a delay that must win for that delay to
   * be chosen: at least half. Without it the spend alone would accept a
   * delay where the reads still running are mostly healthy ones just about
   * to answer (a primary whose every read is a little slow), each of whose
   * hedges would land after its primary.
   */
  minWinShare: 0.5,
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

/** The constants {@link hedgeDelay} reads; {@link hedgeDecisionDefaults} by default. */
export type HedgeDelayRule = Pick<typeof hedgeDecisionDefaults, "minBenefitShare" | "inVainShare" | "minWinShare">;

/**
 * The benefit rule: a budgeted single reissue, after Kaler, He and
 * Elnikety's SingleR ("Optimal Reissue Policies for Reducing Tail Latency",
 * SPAA 2017). A hedge sent `d` ms after the primary to a region whose
 * answers take `L` ms answers no earlier than `d + L`, so it wins only for a
 * primary still running then, and it costs a request for every primary
 * still running at `d`: P(T > d) per read, from the primary's survival. (A
 * win by less than the floor is scheduling noise and not counted.)
 *
 * SingleR picks, for a budget of extra requests, the delay `d` and the
 * reissue probability `q` that minimise the tail, from the response-time
 * log. Here `q` is 1 (every read still running at `d` is hedged: past the
 * primary's healthy latencies mostly reads that would straggle remain, and
 * one skipped at random would answer as late as it straggles), and the
 * budget is read from the survival itself rather than set by hand:
 *
 * - the share a hedge can rescue, `s = P(T > floor + L + floor)`: the reads
 *   a hedge sent at the floor would still beat. Below `minBenefitShare`
 *   (0.5 %) no hedge is worth sending: `undefined`.
 * - the spend, `s + inVainShare`: what it costs to hedge the rescuable
 *   reads and one point of others.
 * - the delay: the earliest `d`, from the floor up through the steps of
 *   the survival to the ceiling, with `P(T > d)` within the spend and at
 *   least `minWinShare` (half) of the hedges sent at `d` winning;
 *   `undefined` when none up to the ceiling qualifies.
 *
 * With 10 % of reads a second late the spend is 11 %, and the delay lands
 * where all but one healthy read in a hundred has answered; a uniformly
 * slow primary is hedged at the floor; a primary no slower than the hedge
 * region is not hedged, since no delay leaves half its hedges winning. The
 * budget still refuses hedges beyond its share.
 */
export function hedgeDelay(
  survival: LatencySurvival,
  hedgeLatencyMs: number,
  bounds: Pick<AdaptiveThresholdSettings, "floor" | "ceiling">,
  rule: HedgeDelayRule = hedgeDecisionDefaults,
): HedgeDelay | undefined {
  const { floor, ceiling } = bounds;
  const winsAfter = hedgeLatencyMs + floor;
  const rescuable = survival.above(floor + winsAfter);
  if (rescuable < rule.minBenefitShare) return undefined;
  const spend = rescuable + rule.inVainShare;
  const consider = (delayMs: number): HedgeDelay | undefined => {
    const reaching = survival.above(delayMs);
    if (reaching === 0 || reaching > spend) return undefined;
    const winShare = survival.above(delayMs + winsAfter) / reaching;
    return winShare >= rule.minWinShare ? { delayMs, winShare } : undefined;
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
    if (survival === undefined || survival.samples + survival.stalled < settings.minSamples) return undefined;
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
