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
import { eastUs, northEurope, westUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";

function response(status: number, headers: Record<string, string> = {}): PipelineResponse {
  return { request: createPipelineRequest({ url: eastUs.endpoint }), status, headers: createHttpHeaders(headers) };
}

function arm(index: number, region: RegionEndpoint, endedAt: number, result: ArmResult | undefined, extra: Partial<RaceArm> = {}): RaceArm {
  return { index, region, reason: index === 0 ? "primary" : "threshold", startedAt: index === 0 ? 0 : 100, endedAt, result, ...extra };
}

function decided(arms: readonly RaceArm[], returnedIndex: number): RaceOutcome {
  const result = arms[returnedIndex]?.result;
  assert.ok(result !== undefined);
  return { kind: "decided", startedAt: 0, result, returnedIndex, fallback: false, arms, hedgeRefused: false, drains: [] };
}

const header: DiagnosticsHeader = { policy: "crossRegion", operation: "pointRead", thresholdMs: 100, primaryRegion: "East US" };

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

  const health = (routing: "preferred" | "demotion" = "preferred"): RegionHealth =>
    new RegionHealth(regions, { routing, throttling: crossRegionHedgingDefaults });

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
});
