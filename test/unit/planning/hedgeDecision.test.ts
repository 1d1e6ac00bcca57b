import assert from "node:assert/strict";
import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { SinonFakeTimers } from "sinon";
import { LatencyWindows, latencyWindowDefaults } from "../../../src/learning/latencyWindows.js";
import type { LatencyObservation } from "../../../src/learning/latencyWindows.js";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { resolveAdaptiveThreshold } from "../../../src/planning/adaptiveThreshold.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { HedgeDecisions, hedgeDecisionDefaults, hedgeDelay, stragglerEvidence, waitForEvidence } from "../../../src/planning/hedgeDecision.js";
import { LatencySurvival } from "../../../src/learning/latencyWindows.js";
import { seededRandom } from "../../../src/testing/seededRandom.js";
import { loserDrainDefaults } from "../../../src/race/loserDrain.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { latencyTransport } from "../../support/fakeTransport.js";
import type { CrossRegionHedgingPolicyOptions } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { eastUs, observe, pointRead, westUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";
import { useRaceHarness } from "../../support/raceHarness.js";
import { arrivals, exponential, healthyMs, readThroughPolicy } from "../../support/readRates.js";

const east = "East US";
const west = "West US";
/** The adaptive defaults of an explicitly enabled policy: floor 5 ms, ceiling 500 ms, 20 samples. */
const settings = resolveAdaptiveThreshold("adaptive", 500);

/** `count` latencies spread evenly over `[from, to]`. */
function spread(count: number, from: number, to: number): number[] {
  return Array.from({ length: count }, (_, i) => from + ((to - from) * i) / Math.max(1, count - 1));
}

describe("the benefit rule (hedgeDecision)", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  function windowOf(...groups: Array<readonly [readonly number[], LatencyObservation]>): LatencyWindows {
    const windows = new LatencyWindows();
    for (const [latencies, observation] of groups) for (const latency of latencies) windows.record(east, "pointRead", latency, observation);
    return windows;
  }

  function delayFor(windows: LatencyWindows, hedgeLatencyMs: number): number | undefined {
    const survival = windows.survival(east, "pointRead");
    assert.ok(survival !== undefined, "the primary's window holds latencies");
    return hedgeDelay(survival, hedgeLatencyMs, settings)?.delayMs;
  }

  const healthy = spread(900, 1, 9.9);

  it("sends no hedge for a healthy primary when the hedge region is 30 ms away", () => {
    assert.equal(delayFor(windowOf([spread(1000, 1, 9.9), "baseline"]), 30), undefined);
  });

  it("sends no hedge for a noisy but healthy primary (2 to 20 ms) when the hedge region is 30 ms away", () => {
    assert.equal(delayFor(windowOf([spread(1000, 2, 20), "baseline"]), 30), undefined);
  });

  it("hedges 10 % stragglers at +1 s just past the primary's normal latency, at a cost of about 11 % extra requests", () => {
    const windows = windowOf([healthy, "baseline"], [spread(100, 1001, 1010), "tail"]);
    const delay = delayFor(windows, 30);
    // Past the bin of the slowest healthy read: the sketch's bins are 4 % wide.
    assert.ok(delay !== undefined && delay >= 9.9 && delay <= 10.3, `hedged within a few ms of the healthy 1 to 9.9 ms: ${delay}`);
    const cost = windows.survival(east, "pointRead")?.above(delay) ?? Number.NaN;
    assert.ok(cost >= 0.1 && cost <= 0.1 + hedgeDecisionDefaults.inVainShare + 1e-9, `extra requests ${cost}`);
  });

  it("hedges a mixed tail (2 % at +1 s, 8 % at +150 ms) just past the primary's normal latency", () => {
    const windows = windowOf([healthy, "baseline"], [spread(80, 151, 158), "baseline"], [spread(20, 1001, 1010), "tail"]);
    const delay = delayFor(windows, 30);
    assert.ok(delay !== undefined && delay >= 9.9 && delay <= 10.3, `${delay}`);
  });

  it("hedges a uniformly slow primary at the floor, below its fastest answer", () => {
    assert.equal(delayFor(windowOf([spread(200, 300, 310), "baseline"]), 30), settings.floor);
  });

  it("does not hedge where the hedge would land after the primary: every region 100 to 160 ms slower", () => {
    // The primary answers in 100 to 165 ms; the hedge region, its latency a lower bound from hedges cut short, in 125.
    assert.equal(delayFor(windowOf([spread(600, 103, 165), "baseline"]), 125), undefined);
  });

  it("counts censored latencies as outlasting every delay, so the stragglers hedging cuts short keep the delay where it was", () => {
    const before = delayFor(windowOf([healthy, "baseline"], [spread(100, 1001, 1010), "tail"]), 30);
    // The same reads once hedged at that delay: each straggler is cut short when the hedge answers, 28 to 36 ms later.
    const cutShort = spread(100, (before ?? 0) + 28, (before ?? 0) + 36);
    const after = delayFor(windowOf([healthy, "baseline"], [cutShort, "censored"]), 32);
    // The same bin of the sketch, its upper edge kept within the largest answer.
    assert.ok(before !== undefined && after !== undefined && Math.abs(after - before) <= before * 2 * latencyWindowDefaults.relativeAccuracy, `${before} then ${after}`);
  });

  it("with a lone outlier, sends no hedge: one read in a thousand is below the half percent worth hedging", () => {
    const windows = windowOf([spread(999, 1, 9.9), "baseline"], [[80], "baseline"]);
    assert.equal(delayFor(windows, 30), undefined);
    const decisions = new HedgeDecisions(windows);
    decisions.observe(west, "pointRead", 30, false);
    // The backstop: past the outlier (80 ms) by West's 30 ms.
    assert.deepEqual(decisions.estimate(east, west, "pointRead", settings), { thresholdMs: 110, source: "noBenefit", region: east });
  });

  describe("worked survival curves (floor 5 ms, hedge region 30 ms away: a hedge at d wins for reads still running at d + 35)", () => {
    /** The rule's choice on a survival given as `[latency ms, reads]`, every read an answer. */
    function chosen(answers: ReadonlyArray<readonly [number, number]>, hedgeLatencyMs = 30): ReturnType<typeof hedgeDelay> {
      return hedgeDelay(new LatencySurvival(answers, 0), hedgeLatencyMs, settings);
    }

    it("spends the rescuable share plus one point, at the earliest delay where at least half the hedges win", () => {
      // 200 reads: 120 at 1 ms, 50 at 3, 12 at 6, 9 at 9, 1 at 14, 8 stragglers at 1000.
      // Rescuable s = P(T > 5 + 30 + 5) = 8/200 = 4 %; spend s + 1 point = 5 %.
      // d = 5: P(T > 5) = 30/200 = 15 % > 5 %. d = 6: 18/200 = 9 % > 5 %.
      // d = 9: P(T > 9) = 9/200 = 4.5 % <= 5 %, win share P(T > 44) / P(T > 9) = 8/9 = 0.889 >= 0.5: chosen.
      // (The 90 % win share of the rule before would have waited for 14 ms, where 8/8 win.)
      const delay = chosen([
        [1, 120],
        [3, 50],
        [6, 12],
        [9, 9],
        [14, 1],
        [1000, 8],
      ]);
      assert.equal(delay?.delayMs, 9);
      assert.ok(Math.abs((delay?.winShare ?? 0) - 8 / 9) < 1e-12, String(delay?.winShare));
    });

    it("10 % stragglers: hedges where the spend of 11 % is reached", () => {
      // 100 reads: 50 at 1 ms, 20 at 2, 10 at 4, 5 at 8, 3 at 12, 12 at 1000 ms.
      // s = P(T > 40) = 12 %; spend 13 %. d = 5: P(T > 5) = 20 % > 13 %. d = 8: 15 % > 13 %.
      // d = 12: 12 % <= 13 %, win share 12/12 = 1: chosen.
      assert.deepEqual(
        chosen([
          [1, 50],
          [2, 20],
          [4, 10],
          [8, 5],
          [12, 3],
          [1000, 12],
        ]),
        { delayMs: 12, winShare: 1 },
      );
    });

    it("hedges a uniformly slow primary at the floor", () => {
      // 100 reads at 300 ms: s = P(T > 40) = 1, spend 1.01; d = 5: P(T > 5) = 1 <= 1.01, win share P(T > 40) / 1 = 1.
      assert.deepEqual(chosen([[300, 100]]), { delayMs: 5, winShare: 1 });
    });

    it("the win share guards the spend: no hedge where the reads still running answer before a hedge could", () => {
      // 100 reads: 40 at 20 ms, 50 at 38, 10 at 60. s = P(T > 40) = 10 %; spend 11 %.
      // d = 5 and 20: P(T > d) = 100 % and 60 % > 11 %. d = 38: 10 % <= 11 %, but a hedge then lands at 73 ms,
      // after every primary: win share P(T > 73) / P(T > 38) = 0 < 0.5. d = 60: nobody left running. No hedge.
      assert.equal(
        chosen([
          [20, 40],
          [38, 50],
          [60, 10],
        ]),
        undefined,
      );
    });

    it("below 0.5 % rescuable, no hedge; at 0.6 %, a hedge at the floor", () => {
      // 1000 reads at 3 ms but 4 at 1000 ms: s = P(T > 40) = 0.4 % < 0.5 %: no hedge.
      assert.equal(hedgeDecisionDefaults.minBenefitShare, 0.005);
      assert.equal(
        chosen([
          [3, 996],
          [1000, 4],
        ]),
        undefined,
      );
      // 6 at 1000 ms: s = 0.6 %, spend 1.6 %; d = 5: P(T > 5) = 0.6 % <= 1.6 %, win share 6/6 = 1.
      assert.deepEqual(
        chosen([
          [3, 994],
          [1000, 6],
        ]),
        { delayMs: 5, winShare: 1 },
      );
    });

    it("takes a delay whose reads still running are exactly the spend, and half of whose hedges win", () => {
      // 100 reads: 98 at 1 ms, 1 at 20, 1 at 1000. s = P(T > 40) = 1 %, spend 2 %; d = 5: P(T > 5) = 2 %, not above it,
      // and P(T > 40) / P(T > 5) = 0.5, not below half: the floor is taken, not 20 ms.
      assert.deepEqual(
        chosen([
          [1, 98],
          [20, 1],
          [1000, 1],
        ]),
        { delayMs: 5, winShare: 0.5 },
      );
    });

    it("never goes below the floor, though a step under it would have qualified", () => {
      // 1000 reads: 981 at 1 ms, 4 at 3, 6 at 20, 2 at 39, 7 at 1000. s = P(T > 40) = 0.7 %, spend 1.7 %.
      // d = 5: P(T > 5) = 1.5 %, win share 7/15 < 0.5. Under the floor, d = 3 would win 9/15; the rule moves up to 20 ms
      // instead, where 7 of the 9 still running win.
      const delay = chosen([
        [1, 981],
        [3, 4],
        [20, 6],
        [39, 2],
        [1000, 7],
      ]);
      assert.equal(delay?.delayMs, 20);
      assert.ok(Math.abs((delay?.winShare ?? 0) - 7 / 9) < 1e-12, String(delay?.winShare));
    });

    it("never goes past the ceiling, and takes the ceiling itself", () => {
      // 100 reads: 80 at 1 ms, 10 at 30, 6 at 60, 4 at 2000. s = P(T > 40) = 10 %, spend 11 %. d = 5: 20 % > 11 %.
      // d = 30: 10 %, but 4/10 win. d = 60: 4 %, all win: past a ceiling of 50 ms no hedge, at a ceiling of 60 ms that one.
      const answers: Array<[number, number]> = [
        [1, 80],
        [30, 10],
        [60, 6],
        [2000, 4],
      ];
      const survival = new LatencySurvival(answers, 0);
      assert.equal(hedgeDelay(survival, 30, { floor: 5, ceiling: 50 }), undefined);
      assert.deepEqual(hedgeDelay(survival, 30, { floor: 5, ceiling: 60 }), { delayMs: 60, winShare: 1 });
    });

    it("counts a censored latency as a read a hedge rescues", () => {
      // 95 answers at 2 ms and 5 arms cut short by hedges: s = P(T > 40) = 5 %, spend 6 %; d = 5: P(T > 5) = 5 %, all win.
      assert.deepEqual(hedgeDelay(new LatencySurvival([[2, 95]], 5), 30, settings), { delayMs: 5, winShare: 1 });
    });
  });

  describe("HedgeDecisions", () => {
    it("has no estimate until the hedge region's latency is known, then decides from both", () => {
      const windows = windowOf([spread(1000, 1, 9.9), "baseline"]);
      const decisions = new HedgeDecisions(windows);
      assert.equal(decisions.estimate(east, west, "pointRead", settings), undefined, "the percentile threshold decides meanwhile");
      decisions.observe(west, "pointRead", 30, false);
      // No hedge wins often enough: only a read that outlasts the primary's largest answer (9.9 ms) by West's 30 ms is hedged.
      assert.deepEqual(decisions.estimate(east, west, "pointRead", settings), { thresholdMs: 39.9, source: "noBenefit", region: east });
    });

    it("has no estimate while the primary's window holds fewer than minSamples latencies", () => {
      const decisions = new HedgeDecisions(windowOf([spread(19, 300, 310), "baseline"]));
      decisions.observe(west, "pointRead", 30, false);
      assert.equal(decisions.estimate(east, west, "pointRead", settings), undefined);
    });

    it("takes L as the median of the region's last eight latencies, raised by bounds above it, kept after the window has emptied", async () => {
      const decisions = new HedgeDecisions(new LatencyWindows());
      assert.equal(decisions.hedgeLatencyMs(east, "pointRead"), undefined);
      for (let i = 0; i < 8; i++) decisions.observe(east, "pointRead", 2, false);
      assert.equal(decisions.hedgeLatencyMs(east, "pointRead"), 2);
      for (let i = 0; i < 8; i++) decisions.observe(east, "pointRead", 1, true);
      for (let i = 0; i < 5; i++) decisions.observe(east, "pointRead", 35, true);
      assert.equal(decisions.hedgeLatencyMs(east, "pointRead"), 2, "reused until the refresh");
      await clock.tickAsync(hedgeDecisionDefaults.refreshMs);
      // The bounds of 1 ms said nothing new and were dropped; the five at 35 ms outweigh the three answers left.
      assert.equal(decisions.hedgeLatencyMs(east, "pointRead"), 35);
      await clock.tickAsync(10 * 60_000);
      assert.equal(decisions.hedgeLatencyMs(east, "pointRead"), 35, "still known ten minutes later");
    });

    it("learns no latency that is not one: not a number, infinite or below zero; zero is one", () => {
      const decisions = new HedgeDecisions(new LatencyWindows());
      for (const latency of [Number.NaN, Number.POSITIVE_INFINITY, -5]) decisions.observe(west, "pointRead", latency, false);
      assert.equal(decisions.hedgeLatencyMs(west, "pointRead"), undefined);
      decisions.observe(west, "pointRead", 0, false);
      assert.equal(decisions.hedgeLatencyMs(west, "pointRead"), 0);
    });

    it("decides afresh when the hedge region's latency changes, though the primary's window did not", () => {
      const windows = windowOf([spread(200, 300, 310), "baseline"]);
      const decisions = new HedgeDecisions(windows);
      decisions.observe(west, "pointRead", 30, false);
      const near = decisions.estimate(east, west, "pointRead", settings);
      assert.equal(near?.source, "benefit");
      // West's young ring takes each latency at once: its median is now 1000 ms, later than every read of the primary.
      for (let i = 0; i < 3; i++) decisions.observe(west, "pointRead", 1000, false);
      const far = decisions.estimate(east, west, "pointRead", settings);
      assert.notDeepEqual(far, near);
      assert.equal(far?.source, "noBenefit");
    });

    it("computes a decision once per view of the primary's window, not per request", () => {
      const windows = windowOf([spread(200, 300, 310), "baseline"]);
      const decisions = new HedgeDecisions(windows);
      decisions.observe(west, "pointRead", 30, false);
      const first = decisions.estimate(east, west, "pointRead", settings);
      assert.equal(first?.source, "benefit");
      assert.equal(decisions.estimate(east, west, "pointRead", settings), first, "the same object, from the cache");
    });
  });
});

describe("the benefit rule through crossRegionHedgingPolicy", () => {
  const harness = useRaceHarness();

  interface Read {
    readonly diagnostics: HedgeDiagnostics;
    readonly latencyMs: number;
  }

  async function runReads(
    latencyOf: (origin: string) => number,
    reads: number,
    spacingMs: number,
    options: CrossRegionHedgingPolicyOptions = {},
  ): Promise<Read[]> {
    const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold: "adaptive", ...options }));
    const client = latencyTransport(latencyOf);
    const done: Read[] = [];
    for (let i = 0; i < reads; i++) {
      const pending = observe(pipeline.sendRequest(client, pointRead(eastUs, harness.leaks.controller().signal)));
      await harness.clock.tickAsync(60);
      while (!pending.state().done) await harness.clock.tickAsync(10);
      const diagnostics = getHedgeDiagnostics(await pending.result());
      assert.ok(diagnostics !== undefined);
      const returned = diagnostics.arms.find((arm) => arm.outcome === "returned") ?? diagnostics.arms[0];
      done.push({ diagnostics, latencyMs: (returned?.startOffsetMs ?? 0) + (returned?.durationMs ?? 0) });
      await harness.clock.tickAsync(spacingMs);
    }
    // Losers left to drain finish in the background; none may outlive the test.
    await harness.clock.tickAsync(loserDrainDefaults.maxDrainMs);
    return done;
  }

  it("no oscillation: with 10 % stragglers at +1 s cut short by the hedges, the delay holds for two minutes", async () => {
    const random = seededRandom(5);
    const eastOrigin = new URL(eastUs.endpoint).origin;
    // East answers in 1 to 9 ms, one read in ten a second later; West in 28 to 36 ms.
    const latencyOf = (origin: string): number =>
      origin === eastOrigin ? (random() < 0.1 ? 1000 : 1 + Math.floor(random() * 9)) : 28 + Math.floor(random() * 9);
    const reads = await runReads(latencyOf, 2000, 0);
    // The first reads fill the windows; after them the rule decides every read.
    const settled = reads.slice(300);
    const sources = new Set(settled.map((read) => read.diagnostics.thresholdSource));
    assert.deepEqual([...sources], ["benefit"]);
    const thresholds = settled.map((read) => read.diagnostics.thresholdMs ?? Number.NaN);
    const [lowest, highest] = [Math.min(...thresholds), Math.max(...thresholds)];
    assert.ok(lowest >= 8 && highest <= 9.5, `the delay stays past the healthy 1 to 9 ms: ${lowest} to ${highest}`);
    const slowest = Math.max(...settled.map((read) => read.latencyMs));
    assert.ok(slowest <= 9.5 + 36 + 1, `every straggler is hedged: slowest read ${slowest} ms`);
    const hedges = settled.filter((read) => read.diagnostics.hedgeFired).length;
    const stragglers = settled.filter((read) => read.diagnostics.hedgeWon).length;
    // The spend: the stragglers plus one point of the reads in vain (and a couple for the rounding of a short run).
    assert.ok(hedges <= stragglers + hedgeDecisionDefaults.inVainShare * settled.length + 2, `${hedges} hedges for ${stragglers} stragglers`);
  });

  it("a healthy primary with a hedge region 30 ms away is not hedged once the hedge region's latency is known", async () => {
    const random = seededRandom(9);
    const eastOrigin = new URL(eastUs.endpoint).origin;
    const latencyOf = (origin: string): number => (origin === eastOrigin ? 1 + Math.floor(random() * 9) : 30);
    const reads = await runReads(latencyOf, 400, 5);
    const percentile = reads.filter((read) => read.diagnostics.thresholdSource === "adaptive");
    assert.ok(percentile.length > 0, "the percentile threshold decides until West's latency is known");
    const afterFirstHedge = reads.slice(reads.findIndex((read) => read.diagnostics.hedgeFired) + 1);
    assert.ok(afterFirstHedge.length > 300);
    for (const read of afterFirstHedge) {
      assert.equal(read.diagnostics.thresholdSource, "noBenefit");
      assert.equal(read.diagnostics.hedgeFired, false);
    }
    // The hedge that lost was left to drain: West's whole 30 ms is its latency, so the backstop lies 30 ms past East's largest 9.
    assert.equal(reads[reads.length - 1]?.diagnostics.thresholdMs, 39);
  });

  it("without drained losers, a hedge region's latency is only the bounds its lost hedges ran for", async () => {
    const random = seededRandom(9);
    const eastOrigin = new URL(eastUs.endpoint).origin;
    const latencyOf = (origin: string): number => (origin === eastOrigin ? 1 + Math.floor(random() * 9) : 30);
    const reads = await runReads(latencyOf, 400, 5, { drainLosers: false });
    const last = reads[reads.length - 1]?.diagnostics;
    assert.equal(last?.thresholdSource, "noBenefit");
    assert.ok(last?.thresholdMs !== undefined && last.thresholdMs < 39, `${last?.thresholdMs}`);
  });
});

describe("stragglerEvidence", () => {
  it("is 0 up to half the healthy tail, rises linearly to 1 at the tail, and stays there", () => {
    assert.equal(stragglerEvidence(2, 10), 0);
    assert.equal(stragglerEvidence(5, 10), 0);
    assert.equal(stragglerEvidence(7.5, 10), 0.5);
    assert.equal(stragglerEvidence(10, 10), 1);
    assert.equal(stragglerEvidence(1000, 10), 1);
  });

  it("is 1 without a tail: nothing tells such a read from a straggler", () => {
    assert.equal(stragglerEvidence(1, undefined), 1);
    assert.equal(stragglerEvidence(1, 0), 1);
    assert.equal(stragglerEvidence(0, 0), 1, "not 0 / 0");
    assert.equal(stragglerEvidence(5, -10), 1, "a tail below zero is no tail");
  });

  it("waitForEvidence is its inverse, clamped to the same range: never past the tail", () => {
    assert.equal(waitForEvidence(0, 10), 5);
    assert.equal(waitForEvidence(0.5, 10), 7.5);
    assert.equal(waitForEvidence(1, 10), 10);
    assert.equal(waitForEvidence(Number.POSITIVE_INFINITY, 10), 10);
    for (const evidence of [0, 0.25, 0.75, 1]) assert.equal(stragglerEvidence(waitForEvidence(evidence, 8), 8), evidence);
  });
});

describe("the benefit rule through crossRegionHedgingPolicy at production read rates", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  for (const rate of [100, 300, 1000]) {
    it(`${rate} reads a second: a gradual brown-out (every read 3 ms slower each second from 5 s) is hedged from 25 s at the latest, as before stalls were told apart`, async () => {
      const random = seededRandom(rate + 19);
      const reads = await readThroughPolicy(clock, arrivals(random, rate, 0, 26_000), (region, sentAtMs) =>
        region === "West US" ? 31 + exponential(1, random) : healthyMs(random) + Math.max(0, (sentAtMs - 5_000) * 0.003),
      );
      const seconds = new Map<number, { reads: number; hedged: number }>();
      for (const read of reads) {
        const second = Math.floor(read.sentAt / 1000);
        const counts = seconds.get(second) ?? { reads: 0, hedged: 0 };
        counts.reads += 1;
        if (read.diagnostics.hedgeFired) counts.hedged += 1;
        seconds.set(second, counts);
      }
      const onset = [...seconds].sort(([a], [b]) => a - b).find(([, counts]) => counts.hedged >= counts.reads / 2)?.[0];
      assert.ok(onset !== undefined && onset <= 25, `the first second with half its reads hedged: ${onset}`);
    });

    it(`${rate} reads a second: with 10 % stragglers at +1 s, at most 1.5 % of the healthy reads are hedged in vain`, async () => {
      const random = seededRandom(rate + 23);
      const stragglersSentAt = new Set<number>();
      const reads = await readThroughPolicy(clock, arrivals(random, rate, 0, 20_000), (region, sentAtMs) => {
        if (region === "West US") return 31 + exponential(1, random);
        if (random() >= 0.1) return healthyMs(random);
        stragglersSentAt.add(sentAtMs);
        return healthyMs(random) + 1000;
      });
      // The first seconds fill the windows.
      const healthy = reads.filter((read) => read.sentAt >= 5_000 && !stragglersSentAt.has(read.sentAt));
      const inVain = healthy.filter((read) => read.diagnostics.hedgeFired).length / healthy.length;
      assert.ok(inVain <= 0.015, `healthy reads hedged: ${(inVain * 100).toFixed(2)} %`);
    });
  }
});
