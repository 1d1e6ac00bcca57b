import type { LatencyClass, LatencySummary, LatencyWindows } from "../learning/latencyWindows.js";
import { latencyClasses } from "../learning/latencyWindows.js";
import type { RegionCache } from "../topology/regionCache.js";
import { normalizeRegionName } from "../topology/regionNames.js";
import { requestChargeOf } from "../cosmos/statusTables.js";
import { armOutcome } from "../learning/armFacts.js";
import type { LoadBudget } from "../budget/loadBudget.js";
import type { LoserDrain } from "../race/loserDrain.js";
import type { RaceArm, RaceOutcome } from "../race/race.js";

/** What one region did for a `crossRegionHedgingPolicy`. Counters run from the policy's creation; latencies cover the last 20 to 30 seconds. */
export interface RegionHedgingMetrics {
  /** The region's name. */
  region: string;
  /** Requests whose primary arm went to the region, hedged or not. */
  requests: number;
  /** Hedge arms sent to the region. */
  hedgesFired: number;
  /** Hedge arms of the region whose outcome was returned. */
  hedgesWon: number;
  /** Request units charged for the region's arms whose outcome was not returned, drained losers' included as they arrive. */
  losingRequestCharge: number;
  /**
   * Percentiles of the region's recent read latencies (every read class
   * together): answers, and arms cancelled or timed out after running
   * longer than the answer that beat them, at the time they had run (a
   * lower bound). `undefined` when the window is empty.
   */
  latency?: LatencySummary;
  /** The same percentiles per read class. */
  latencyByClass: Partial<Record<LatencyClass, LatencySummary>>;
  /** Set while the region is demoted: the region reads go to first instead. */
  demotedInFavourOf?: string;
  /** Milliseconds until the region may be hedged into again, while it answers 429. */
  throttledForMs?: number;
}

/** A snapshot of what a `crossRegionHedgingPolicy` has done, from `metrics()` on the policy or on the hedging client. */
export interface HedgingMetrics {
  /** Document requests the policy handled, hedged or not. */
  requests: number;
  /** Hedge arms sent. */
  hedgesFired: number;
  /** Requests whose returned outcome came from a hedge. */
  hedgesWon: number;
  /** Requests that launched fewer hedges than planned because the hedge budget was spent (`skipReason: "budgetExhausted"`). */
  budgetExhausted: number;
  /** Request units charged for arms whose outcome was not returned: what hedging cost. A drained loser's charge counts when its response arrives. */
  losingRequestCharge: number;
  /** What became of the arms still running when their race was decided (`drainLosers`). */
  losers: {
    /** Losers left to finish in the background. */
    drained: number;
    /** Drained losers cut off by a bound of `drainLosers` or by the caller's abort. */
    drainsCutShort: number;
    /** Losers aborted at once: draining off, a write, an arm not yet sent, or every drain slot taken. */
    aborted: number;
    /** Drains running now. */
    drainsInFlight: number;
  };
  /** The hedge budget now; absent when the policy has none (`budget: false`). */
  budget?: {
    /** How many more hedges the balance covers. */
    balance: number;
    /** Hedges in flight. */
    hedgesInFlight: number;
  };
  /** Per region, in the order the regions were first seen. */
  regions: RegionHedgingMetrics[];
}

/** Spellings remembered at most: region names come from the account, but a bound keeps odd input from growing the map. */
const maxSpellings = 256;

interface RegionCounters {
  region: string;
  requests: number;
  hedgesFired: number;
  hedgesWon: number;
  losingRequestCharge: number;
}

/** The counters behind {@link HedgingMetrics}, fed with the raw outcome of every request of a policy. */
export class HedgingMetricsRecorder {
  private requests = 0;
  private hedgesFired = 0;
  private hedgesWon = 0;
  private budgetExhausted = 0;
  private losingRequestCharge = 0;
  private drainedLosers = 0;
  private drainsCutShort = 0;
  private abortedLosers = 0;
  private readonly regions = new Map<string, RegionCounters>();
  /** The same counters by the name as spelt, so that the few spellings a client sees are normalized once. */
  private readonly bySpelling = new Map<string, RegionCounters>();

  /** Counts one request sent unhedged to `region` (when known). */
  recordSkipped(region: string | undefined): void {
    this.requests += 1;
    if (region !== undefined) this.counters(region).requests += 1;
  }

  /** Counts one raced request its primary won alone, before any hedge was due: what {@link HedgingMetricsRecorder.record} counts of it. */
  recordAlone(region: string): void {
    this.requests += 1;
    this.counters(region).requests += 1;
  }

  /** Counts one raced request; `primaryRegion` stands for its primary when no arm was launched (the caller had aborted already). */
  record(outcome: RaceOutcome, primaryRegion: string | undefined): void {
    this.requests += 1;
    if (outcome.arms.length === 0 && primaryRegion !== undefined) this.counters(primaryRegion).requests += 1;
    if (outcome.hedgeRefused) this.budgetExhausted += 1;
    const returnedIndex = outcome.kind === "decided" ? outcome.returnedIndex : undefined;
    const hedgeWon = outcome.kind === "decided" && !outcome.fallback && outcome.returnedIndex > 0;
    if (hedgeWon) this.hedgesWon += 1;
    const callerAborted = outcome.kind === "aborted";
    for (const arm of outcome.arms) {
      const counters = this.counters(arm.region.name);
      if (arm.index === 0) counters.requests += 1;
      const outcomeOfArm = armOutcome(arm, returnedIndex);
      if (arm.index > 0) {
        this.hedgesFired += 1;
        counters.hedgesFired += 1;
        if (outcomeOfArm === "returned" && hedgeWon) counters.hedgesWon += 1;
      }
      const charge = outcomeOfArm === "returned" || arm.result?.response === undefined ? undefined : requestChargeOf(arm.result.response);
      if (charge !== undefined) {
        this.losingRequestCharge += charge;
        counters.losingRequestCharge += charge;
      }
      if (outcomeOfArm === "drained") this.drainedLosers += 1;
      else if (outcomeOfArm === "aborted" && !callerAborted) this.abortedLosers += 1;
    }
  }

  /** Counts a drained loser when its drain ends: its charge, and whether it was cut short. */
  recordDrainEnd(arm: RaceArm): void {
    if (arm.drain?.end !== "settled") this.drainsCutShort += 1;
    const response = arm.drain?.result?.response;
    const charge = response === undefined ? undefined : requestChargeOf(response);
    if (charge === undefined) return;
    this.losingRequestCharge += charge;
    this.counters(arm.region.name).losingRequestCharge += charge;
  }

  /** The snapshot: these counters with the latency windows, the demotions and throttling of the regions, the budget and the drains. */
  snapshot(
    windows: LatencyWindows,
    regionCache: RegionCache,
    budget: LoadBudget | undefined,
    throttledForMs: (region: string) => number,
    drain?: LoserDrain,
  ): HedgingMetrics {
    for (const region of windows.regions()) this.counters(region);
    const regions = [...this.regions.values()].map((counters): RegionHedgingMetrics => {
      const key = normalizeRegionName(counters.region);
      const latencyByClass: Partial<Record<LatencyClass, LatencySummary>> = {};
      for (const latencyClass of latencyClasses) {
        const summary = windows.summary(counters.region, latencyClass);
        if (summary !== undefined) latencyByClass[latencyClass] = summary;
      }
      const latency = windows.summary(counters.region);
      const demotion = regionCache.demotedRegions.find((entry) => normalizeRegionName(entry.region) === key);
      const throttled = throttledForMs(counters.region);
      return {
        ...counters,
        ...(latency !== undefined ? { latency } : {}),
        latencyByClass,
        ...(demotion !== undefined ? { demotedInFavourOf: demotion.inFavourOf } : {}),
        ...(throttled > 0 ? { throttledForMs: throttled } : {}),
      };
    });
    return {
      requests: this.requests,
      hedgesFired: this.hedgesFired,
      hedgesWon: this.hedgesWon,
      budgetExhausted: this.budgetExhausted,
      losingRequestCharge: this.losingRequestCharge,
      losers: {
        drained: this.drainedLosers,
        drainsCutShort: this.drainsCutShort,
        aborted: this.abortedLosers,
        drainsInFlight: drain?.inFlight ?? 0,
      },
      ...(budget !== undefined ? { budget: { balance: budget.balance, hedgesInFlight: budget.hedgesInFlight } } : {}),
      regions,
    };
  }

  private counters(region: string): RegionCounters {
    const known = this.bySpelling.get(region);
    if (known !== undefined) return known;
    const key = normalizeRegionName(region);
    let counters = this.regions.get(key);
    if (counters === undefined) {
      counters = { region, requests: 0, hedgesFired: 0, hedgesWon: 0, losingRequestCharge: 0 };
      this.regions.set(key, counters);
    }
    if (this.bySpelling.size < maxSpellings) this.bySpelling.set(region, counters);
    return counters;
  }
}
