import assert from "node:assert/strict";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelineResponse } from "@azure/core-rest-pipeline";
import type { SinonFakeTimers } from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";
import { demotionDefaults } from "../../../src/learning/regionRanking.js";
import type { ArmResult } from "../../../src/cosmos/statusTables.js";
import type { DiagnosticsHeader } from "../../../src/diagnostics/diagnosticsHeader.js";
import type { RaceArm, RaceOutcome } from "../../../src/race/race.js";
import { RegionHealth } from "../../../src/learning/regionHealth.js";
import { crossRegionHedgingDefaults } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { adaptiveThresholdDefaults } from "../../../src/planning/adaptiveThreshold.js";
import type { AdaptiveThresholdSettings } from "../../../src/planning/adaptiveThreshold.js";
import { eastUs, northEurope, westUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";

function response(status: number, headers: Record<string, string> = {}): PipelineResponse {
  return { request: createPipelineRequest({ url: eastUs.endpoint }), status, headers: createHttpHeaders(headers) };
}

function arm(index: number, region: RegionEndpoint, endedAt: number | undefined, result: ArmResult | undefined, extra: Partial<RaceArm> = {}): RaceArm {
  return { index, region, reason: index === 0 ? "primary" : "threshold", startedAt: index === 0 ? 0 : 100, endedAt, result, ...extra };
}

function decided(arms: readonly RaceArm[], returnedIndex: number): RaceOutcome {
  const result = arms[returnedIndex]?.result;
  assert.ok(result !== undefined);
  return { kind: "decided", startedAt: 0, result, returnedIndex, fallback: false, arms, hedgeRefused: false, drains: [] };
}

function aborted(arms: readonly RaceArm[]): RaceOutcome {
  return { kind: "aborted", startedAt: 0, arms, hedgeRefused: false, error: new Error("aborted") };
}

const header: DiagnosticsHeader = { policy: "crossRegion", operation: "pointRead", thresholdMs: 100, primaryRegion: "East US" };
const withThreshold = (thresholdMs: number): DiagnosticsHeader => ({ ...header, thresholdMs });

const adaptiveSettings: AdaptiveThresholdSettings = {
  maxExtraLoad: adaptiveThresholdDefaults.maxExtraLoad,
  quantile: 1 - adaptiveThresholdDefaults.maxExtraLoad,
  floor: adaptiveThresholdDefaults.floor,
  ceiling: 1000,
  minSamples: adaptiveThresholdDefaults.minSamples,
};

const names = (targets: readonly RegionEndpoint[]): string[] => targets.map((region) => region.name);

/** Region health learns from the race's raw records: statuses from the responses, timeouts from the raw errors. */
describe("RegionHealth", () => {
  let clock: SinonFakeTimers;
  let regions: RegionCache;

  beforeEach(() => {
    clock = useFakeClock();
    regions = new RegionCache({ topology: { readRegions: [eastUs, westUs, northEurope] } });
  });

  afterEach(() => {
    clock.restore();
  });

  const health = (routing: "preferred" | "demotion" | "thompson" = "preferred"): RegionHealth =>
    new RegionHealth(regions, { routing, throttling: crossRegionHedgingDefaults });
  const adaptiveHealth = (): RegionHealth => new RegionHealth(regions, { routing: "preferred", adaptive: adaptiveSettings, throttling: crossRegionHedgingDefaults });
  /** How many latencies of a region's point reads the windows hold, baseline, tail and censored together. */
  const samples = (learner: RegionHealth, region: string): number => learner.windows.summary(region, "pointRead")?.samples ?? 0;
  const readOrder = (): RegionEndpoint[] => [eastUs, westUs, northEurope];
  /** The benefit rule's hedge latency of a region, read after each step so that a bound is judged against the median so far. */
  const hedgeLatency = (learner: RegionHealth, region: string): number | undefined => learner.decisions?.hedgeLatencyMs(region, "pointRead");

  it("takes a timeout from the raw error's name or code, and a latency only from a success", () => {
    const learner = health();
    const timeout = Object.assign(new Error("the request timed out"), { name: "TimeoutError" });
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    learner.learn(header, decided([arm(0, eastUs, 300, { error: timeout }), arm(1, westUs, 130, { response: response(200) })], 1));
    learner.learn(header, decided([arm(0, northEurope, 5, { error: reset }), arm(1, westUs, 140, { response: response(200) })], 1));
    const byRegion = new Map(learner.snapshot(undefined, undefined).regions.map((entry) => [entry.region, entry]));
    assert.equal(byRegion.get("East US")?.latency?.samples, 1, "the timed-out primary is a censored latency");
    assert.equal(byRegion.get("West US")?.latency?.samples, 2);
    assert.equal(byRegion.get("North Europe")?.latency, undefined, "a fast error is no latency");
  });

  it("counts a primary drained after losing as still running in its region's survival until its drain ends, then at its real latency", () => {
    const learner = health();
    for (let i = 0; i < 18; i++) learner.windows.record("East US", "pointRead", 2, "baseline");
    const drained = arm(0, eastUs, 0, undefined, { endedAt: undefined, drain: { decidedAt: 130 } });
    learner.learn(header, decided([drained, arm(1, westUs, 130, { response: response(200) })], 1));
    assert.equal(learner.windows.survival("East US", "pointRead")?.above(10_000), 1 / 19, "a straggler the rule knows of at once");
    // The race completes the drained arm in place when its answer comes, and tells the learner.
    Object.assign(drained.drain!, { endedAt: 1000, end: "settled", result: { response: response(200) } });
    learner.learnDrained("pointRead", drained);
    const survival = learner.windows.survival("East US", "pointRead");
    assert.equal(survival?.censored, 0, "no longer running once its drain ended");
    assert.equal(survival?.samples, 19, "counted once, not once running and once more at its answer");
    assert.equal(survival?.above(500), 1 / 19);
  });

  it("counts requests, hedges and the losers' charge from the raw responses", () => {
    const learner = health();
    learner.learn(
      header,
      decided(
        [
          arm(0, eastUs, 140, { response: response(503, { "x-ms-request-charge": "1.5" }) }),
          arm(1, westUs, 140, { response: response(200, { "x-ms-request-charge": "2" }) }),
        ],
        1,
      ),
    );
    learner.learnSkipped("East US");
    const metrics = learner.snapshot(undefined, undefined);
    assert.deepEqual(
      [metrics.requests, metrics.hedgesFired, metrics.hedgesWon, metrics.losingRequestCharge],
      [2, 1, 1, 1.5],
    );
    assert.deepEqual(
      metrics.regions.map((entry) => [entry.region, entry.requests, entry.hedgesWon]),
      [
        ["East US", 2, 0],
        ["West US", 0, 1],
      ],
    );
  });

  it("keeps a region that answered 429 out of hedges for its retry-after, and reports it among the regions it knows", () => {
    const learner = health();
    learner.learnSkipped("West US");
    learner.noteResponse("West US", response(429, { "x-ms-retry-after-ms": "200" }));
    learner.noteResponse("North Europe", response(503));
    assert.equal(learner.throttledForMs("west us"), 200, "names compare in any case and spacing");
    assert.equal(learner.throttledForMs("North Europe"), 0);
    clock.tick(150);
    assert.equal(learner.snapshot(undefined, undefined).regions.find((entry) => entry.region === "West US")?.throttledForMs, 50);
    clock.tick(50);
    assert.equal(learner.throttledForMs("West US"), 0);
  });

  it("reads x-ms-retry-after-ms as given, 0 included; without a usable one, throttles for the default; never past the cap", () => {
    const learner = health();
    assert.equal(learner.anyThrottled(), false, "nothing is throttled before a 429");
    learner.noteResponse("East US", response(429, { "x-ms-retry-after-ms": "0" }));
    assert.equal(learner.throttledForMs("East US"), 0);
    for (const retryAfter of [undefined, "soon", "-5", "Infinity"]) {
      learner.noteResponse("West US", response(429, retryAfter === undefined ? {} : { "x-ms-retry-after-ms": retryAfter }));
      assert.equal(learner.throttledForMs("West US"), crossRegionHedgingDefaults.throttleWithoutRetryAfterMs, `retry-after ${retryAfter}`);
    }
    learner.noteResponse("North Europe", response(429, { "x-ms-retry-after-ms": "1e9" }));
    assert.equal(learner.throttledForMs("North Europe"), crossRegionHedgingDefaults.maxRetryAfterMs);
    learner.noteResponse(undefined, response(429, { "x-ms-retry-after-ms": "500" }));
  });

  it("forgets a throttle the moment it runs out, so that no region counts as throttled any more", () => {
    const learner = health();
    learner.noteResponse("West US", response(429, { "x-ms-retry-after-ms": "200" }));
    assert.equal(learner.anyThrottled(), true);
    clock.tick(200);
    assert.equal(learner.throttledForMs("West US"), 0);
    assert.equal(learner.anyThrottled(), false);
  });

  it("demotes a primary after straight hedge wins, and ranks its reads to the winner", () => {
    const learner = health("demotion");
    for (let i = 0; i < demotionDefaults.consecutiveWins; i++) {
      learner.learn(header, decided([arm(0, eastUs, 140, undefined, { aborted: true }), arm(1, westUs, 140, { response: response(200) })], 1));
    }
    assert.equal(regions.isDemoted("East US"), true);
    const ranked = learner.rank(eastUs, [eastUs, ...regions.applicableRegions("read").filter((region) => region !== eastUs)], "pointRead", undefined);
    assert.equal(ranked.reason, "demoted");
    assert.equal(ranked.targets[0]?.name, "West US");
  });

  it("keeps the benefit rule and the Thompson posteriors only where the settings ask for them", () => {
    assert.equal(health().decisions, undefined, "a fixed threshold has no benefit rule");
    assert.notEqual(adaptiveHealth().decisions, undefined);
    assert.deepEqual(health().rank(eastUs, readOrder(), "pointRead", undefined), { targets: readOrder() }, "preferred routing keeps the candidates as they are");
  });

  it("records a loser cut short by the win as a censored latency when it ran at least as long as the winner", () => {
    const learner = health();
    // The primary, aborted after 140 ms, outlasted the hedge's 40 ms answer: known slower, although the threshold (500 ms) is longer.
    learner.learn(withThreshold(500), decided([arm(0, eastUs, 140, undefined, { aborted: true }), arm(1, westUs, 140, { response: response(200) })], 1));
    assert.equal(samples(learner, "East US"), 1);
    // A hedge aborted after 40 ms by a primary answer of 150 ms says nothing of its region.
    learner.learn(header, decided([arm(0, northEurope, 150, { response: response(200) }), arm(1, westUs, 140, undefined, { aborted: true })], 0));
    assert.equal(samples(learner, "West US"), 1, "only West US's winning answer");
    // A hedge sent with the primary (threshold 0) and aborted when the primary answered ran exactly as long: it is at least as slow.
    learner.learn(withThreshold(0), decided([arm(0, eastUs, 150, { response: response(200) }), arm(1, northEurope, 150, undefined, { aborted: true, startedAt: 0 })], 0));
    assert.equal(samples(learner, "North Europe"), 2, "North Europe's answer and its censored latency");
  });

  it("leaves a drained loser's latency to the end of its drain", () => {
    const learner = health();
    learner.learn(header, decided([arm(0, eastUs, undefined, undefined, { drain: { decidedAt: 140 } }), arm(1, westUs, 140, { response: response(200) })], 1));
    assert.equal(samples(learner, "East US"), 0, "nothing is recorded at the decision");
    learner.learnDrained("pointRead", arm(0, eastUs, undefined, undefined, { drain: { decidedAt: 140, end: "settled", endedAt: 400, result: { response: response(200) } } }));
    assert.equal(samples(learner, "East US"), 1);
  });

  it("records the losers of a race the caller aborted only when they outlasted the threshold", () => {
    const learner = health();
    learner.learn(
      withThreshold(100),
      aborted([arm(0, eastUs, 100, undefined, { aborted: true }), arm(1, westUs, 150, undefined, { aborted: true }), arm(2, northEurope, 150, undefined, { aborted: true, startedAt: 140 })]),
    );
    assert.deepEqual(
      ["East US", "West US", "North Europe"].map((region) => samples(learner, region)),
      [1, 0, 0],
      "the primary ran the whole threshold; the hedges 50 and 10 ms",
    );
    learner.learn({ policy: "crossRegion", operation: "pointRead", primaryRegion: "East US" }, aborted([arm(0, westUs, 900, undefined, { aborted: true })]));
    assert.equal(samples(learner, "West US"), 0, "without a threshold no bound is informative");
  });

  it("feeds the benefit rule answers as latencies and cut-short arms as lower bounds", () => {
    const learner = adaptiveHealth();
    // Two answers of West US: the median of 100 and 40 ms is the lower, 40.
    learner.learn(header, decided([arm(0, westUs, 100, { response: response(200) })], 0));
    assert.equal(hedgeLatency(learner, "West US"), 100);
    learner.learn(header, decided([arm(0, westUs, 40, { response: response(200) })], 0));
    assert.equal(hedgeLatency(learner, "West US"), 40);
    // North Europe answers in 100 ms; a hedge there aborted after 50 ms is a bound below that median and says nothing new.
    learner.learn(header, decided([arm(0, northEurope, 100, { response: response(200) })], 0));
    assert.equal(hedgeLatency(learner, "North Europe"), 100);
    learner.learn(header, decided([arm(0, eastUs, 150, { response: response(200) }), arm(1, northEurope, 150, undefined, { aborted: true })], 0));
    assert.equal(hedgeLatency(learner, "North Europe"), 100);
    // East US answered in 150 ms; a timeout after 120 ms is a bound below that, also ignored.
    assert.equal(hedgeLatency(learner, "East US"), 150);
    const timeout = Object.assign(new Error("timed out"), { name: "TimeoutError" });
    learner.learn(header, decided([arm(0, eastUs, 120, { error: timeout }), arm(1, westUs, 160, { response: response(200) })], 1));
    assert.equal(hedgeLatency(learner, "East US"), 150);
  });

  it("feeds the benefit rule no bound of an arm the caller cut before the threshold: no hedge latency from a hedge cut 10 ms after it went", () => {
    const learner = adaptiveHealth();
    learner.learn(withThreshold(100), aborted([arm(0, eastUs, 110, undefined, { aborted: true }), arm(1, westUs, 110, undefined, { aborted: true, startedAt: 100 })]));
    assert.equal(hedgeLatency(learner, "West US"), undefined, "the caller's abort says nothing of West US");
    assert.equal(hedgeLatency(learner, "East US"), 110, "the primary outlasted the threshold: a bound");
  });

  it("feeds the benefit rule a drained loser's answer as a latency, a drain cut short as a bound, a settled error not at all", () => {
    const learner = adaptiveHealth();
    const drained = (endedAt: number, end: "settled" | "timeLimit", status?: number): RaceArm =>
      arm(1, westUs, undefined, undefined, { drain: { decidedAt: 140, end, endedAt, result: status === undefined ? undefined : { response: response(status) } } });
    learner.learn(header, decided([arm(0, westUs, 100, { response: response(200) })], 0));
    assert.equal(hedgeLatency(learner, "West US"), 100);
    learner.learnDrained("pointRead", drained(140, "settled", 200));
    assert.equal(hedgeLatency(learner, "West US"), 40, "the drained answer of 40 ms is a latency, below the median or not");
    learner.learnDrained("pointRead", drained(130, "timeLimit"));
    assert.equal(hedgeLatency(learner, "West US"), 40, "a drain cut after 30 ms is a bound below the median: nothing new");
    learner.learnDrained("pointRead", drained(400, "settled", 503));
    learner.learnDrained("pointRead", drained(400, "settled", 503));
    assert.equal(hedgeLatency(learner, "West US"), 40, "errors that settled the drain are no latency");
    learner.learnDrained("pointRead", drained(400, "timeLimit"));
    learner.learnDrained("pointRead", drained(400, "timeLimit"));
    learner.learnDrained("pointRead", drained(400, "timeLimit"));
    assert.equal(hedgeLatency(learner, "West US"), 300, "drains cut after 300 ms are bounds above the median");
  });

  describe("with Thompson routing", () => {
    // Regions without a successful answer (never observed, or failing) keep the order given, after those with one:
    // which regions the posteriors know is seen in the order without depending on the samples.

    it("makes a region known from a censored latency of a loser, and forgets it as proven when it fails", () => {
      const learner = health("thompson");
      learner.learn(header, decided([arm(0, northEurope, 140, { response: response(200) })], 0));
      assert.deepEqual(names(learner.rank(eastUs, readOrder(), "pointRead", undefined).targets), ["North Europe", "East US", "West US"]);
      learner.learn(header, decided([arm(0, northEurope, 10, { response: response(503) })], 0));
      assert.deepEqual(names(learner.rank(eastUs, readOrder(), "pointRead", undefined).targets), ["East US", "West US", "North Europe"], "a failing region goes last");
    });

    it("learns from the losers of a decided race whatever they ran, of an aborted one only those that outlasted the threshold", () => {
      const decidedLearner = health("thompson");
      // West US, aborted after 80 ms (above the prior's 50 ms median) by a primary that answered in 280 ms, is known to take longer.
      decidedLearner.learn(withThreshold(200), decided([arm(0, northEurope, 280, { response: response(503) }), arm(1, westUs, 280, undefined, { aborted: true, startedAt: 200 })], 0));
      assert.deepEqual(names(decidedLearner.rank(eastUs, readOrder(), "pointRead", undefined).targets), ["West US", "East US", "North Europe"]);

      const abortedLearner = health("thompson");
      abortedLearner.learn(
        withThreshold(200),
        aborted([arm(0, northEurope, 280, undefined, { aborted: true }), arm(1, westUs, 280, undefined, { aborted: true, startedAt: 200 })]),
      );
      assert.deepEqual(
        names(abortedLearner.rank(eastUs, readOrder(), "pointRead", undefined).targets),
        ["North Europe", "East US", "West US"],
        "the primary outlasted the threshold; the hedge's 80 ms say nothing",
      );
    });

    it("takes a drained loser's running time at the decision as a bound of its latency", () => {
      const learner = health("thompson");
      // North Europe, drained at the decision after 140 ms (above the prior's 50 ms median), takes at least that long; West US's error leaves it unranked.
      learner.learn(header, decided([arm(0, northEurope, undefined, undefined, { drain: { decidedAt: 140 } }), arm(1, westUs, 140, { response: response(503) })], 1));
      assert.deepEqual(names(learner.rank(eastUs, readOrder(), "pointRead", undefined).targets), ["North Europe", "East US", "West US"]);
    });

    it("reorders only the hedges of a read sent elsewhere than the usual first region", () => {
      const learner = health("thompson");
      // East US fails; North Europe answers.
      learner.learn(header, decided([arm(0, eastUs, 10, { response: response(503) }), arm(1, northEurope, 140, { response: response(200) })], 1));
      const usual = learner.rank(eastUs, readOrder(), "pointRead", undefined);
      assert.deepEqual(names(usual.targets), ["North Europe", "East US", "West US"]);
      assert.equal(usual.reason, "thompson");
      const retried = learner.rank(westUs, [westUs, eastUs, northEurope], "pointRead", undefined);
      assert.deepEqual(names(retried.targets), ["West US", "North Europe", "East US"], "West US stays first");
      assert.equal(retried.reason, "thompson");
    });
  });

  describe("restoring a demoted region", () => {
    /** `count` point-read answers of `region`, each taking `ms`. */
    const answers = (learner: RegionHealth, region: RegionEndpoint, ms: number, count: number = adaptiveThresholdDefaults.minSamples): void => {
      for (let i = 0; i < count; i++) learner.learn(header, decided([arm(0, region, ms, { response: response(200) })], 0));
    };
    const demoteEastUs = (learner: RegionHealth): void => {
      for (let i = 0; i < demotionDefaults.consecutiveWins; i++) {
        learner.learn(header, decided([arm(0, eastUs, 300, undefined, { aborted: true }), arm(1, westUs, 300, { response: response(200) })], 1));
      }
      assert.equal(regions.isDemoted("East US"), true);
    };
    const primaryWin = (learner: RegionHealth, ms: number): void => learner.learn(header, decided([arm(0, eastUs, ms, { response: response(200) })], 0));

    it("restores it when it answers as fast as the best region's healthy baseline", () => {
      const learner = health("demotion");
      answers(learner, westUs, 80);
      answers(learner, northEurope, 40);
      answers(learner, eastUs, 80);
      demoteEastUs(learner);
      primaryWin(learner, 60);
      assert.equal(regions.isDemoted("East US"), true, "60 ms is slower than North Europe's 40 ms");
      primaryWin(learner, 30);
      assert.equal(regions.isDemoted("East US"), false);
    });

    it("restores it within the threshold while no region has enough healthy latencies", () => {
      const learner = health("demotion");
      answers(learner, northEurope, 10, adaptiveThresholdDefaults.minSamples - 1);
      demoteEastUs(learner);
      primaryWin(learner, 101);
      assert.equal(regions.isDemoted("East US"), true, "101 ms is over the 100 ms threshold");
      primaryWin(learner, 100);
      assert.equal(regions.isDemoted("East US"), false);
    });
  });

  describe("the SDK's partition-level circuit breaker", () => {
    const withBreaker = (active = true): RegionHealth =>
      new RegionHealth(regions, { routing: "preferred", throttling: crossRegionHedgingDefaults, sdkBreaker: { active: () => active, readTimeoutMs: 2000 } });

    it("defers a primary's region when a hedge won over its 503, and only then", () => {
      const learner = withBreaker();
      learner.learn(header, decided([arm(0, eastUs, 20, { response: response(503) }), arm(1, westUs, 130, { response: response(200) })], 1));
      assert.equal(learner.deferringToSdkBreaker("East US"), true);
      assert.equal(learner.deferringToSdkBreaker("West US"), false, "a hedge's region: the SDK never sent there");
      const other = withBreaker();
      other.learn(header, decided([arm(0, eastUs, 20, { response: response(503) })], 0));
      assert.equal(other.deferringToSdkBreaker("East US"), false, "the SDK got the 503 itself");
      const off = health();
      off.learn(header, decided([arm(0, eastUs, 20, { response: response(503) }), arm(1, westUs, 130, { response: response(200) })], 1));
      assert.equal(off.deferringToSdkBreaker("East US"), false, "no breaker, nothing to defer to");
    });

    it("defers it when a drained primary ends past the SDK's read timeout or failing, not a drained hedge", () => {
      const learner = withBreaker();
      const drainedPrimary = arm(0, eastUs, undefined, undefined, { drain: { decidedAt: 530, end: "settled", endedAt: 2500, result: { response: response(200) } } });
      const drainedHedge = arm(1, westUs, undefined, undefined, { drain: { decidedAt: 530, end: "settled", endedAt: 3000, result: { response: response(503) } } });
      learner.learnDrained("pointRead", drainedHedge);
      assert.equal(learner.deferringToSdkBreaker("West US"), false);
      learner.learnDrained("pointRead", arm(0, eastUs, undefined, undefined, { drain: { decidedAt: 530, end: "settled", endedAt: 1900, result: { response: response(200) } } }));
      assert.equal(learner.deferringToSdkBreaker("East US"), false, "answered within the SDK's timeout");
      learner.learnDrained("pointRead", drainedPrimary);
      assert.equal(learner.deferringToSdkBreaker("East US"), true);
    });

    it("defers it when the race cut its primary before the SDK could judge it, not when the caller aborted", () => {
      const learner = withBreaker();
      learner.learn(header, decided([arm(0, eastUs, 530, undefined, { aborted: true }), arm(1, westUs, 530, { response: response(200) })], 1));
      assert.equal(learner.deferringToSdkBreaker("East US"), true, "aborted at the hedge's win: its 503 to come is unknown");
      const cutShort = withBreaker();
      cutShort.learnDrained("pointRead", arm(0, eastUs, undefined, undefined, { drain: { decidedAt: 530, end: "timeLimit", endedAt: 1530 } }));
      assert.equal(cutShort.deferringToSdkBreaker("East US"), true, "a drain bound of 1 s cut it before the SDK's 2 s");
      const callerAborted = withBreaker();
      callerAborted.learnDrained("pointRead", arm(0, eastUs, undefined, undefined, { drain: { decidedAt: 530, end: "callerAborted", endedAt: 700 } }));
      assert.equal(callerAborted.deferringToSdkBreaker("East US"), false);
      const inactive = withBreaker(false);
      inactive.learn(header, decided([arm(0, eastUs, 530, undefined, { aborted: true }), arm(1, westUs, 530, { response: response(200) })], 1));
      assert.equal(inactive.deferringToSdkBreaker("East US"), false, "the account does not report PPAF: no breaker runs");
    });

    it("keeps deferring while the unhedged requests fail, told by their responses and their errors", () => {
      const learner = withBreaker();
      learner.learn(header, decided([arm(0, eastUs, 20, { response: response(503) }), arm(1, westUs, 130, { response: response(200) })], 1));
      clock.tick(59_000);
      learner.noteResponse("East US", response(503));
      clock.tick(59_000);
      learner.learnSkipped("East US", { error: Object.assign(new Error("The operation was aborted."), { name: "AbortError" }) });
      clock.tick(59_000);
      assert.equal(learner.deferringToSdkBreaker("East US"), true);
      learner.noteResponse("East US", response(200));
      clock.tick(1_000);
      assert.equal(learner.deferringToSdkBreaker("East US"), false);
    });
  });
});
