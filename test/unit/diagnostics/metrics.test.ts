import assert from "node:assert/strict";
import { HedgingMetricsRecorder } from "../../../src/diagnostics/metrics.js";
import type { ArmResult } from "../../../src/cosmos/statusTables.js";
import { LatencyWindows } from "../../../src/learning/latencyWindows.js";
import type { RaceArm, RaceOutcome } from "../../../src/race/race.js";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { eastUs, northEurope, westUs } from "../../support/hedgingFixtures.js";
import { makeRequest, makeResponse } from "../../support/requests.js";

const request = makeRequest("https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1");

function charged(status: number, requestCharge: number): ArmResult {
  return { response: makeResponse(request, status, { headers: { "x-ms-request-charge": String(requestCharge) } }) };
}

function decided(arms: RaceArm[], returnedIndex: number, fields: { fallback?: boolean; hedgeRefused?: boolean } = {}): RaceOutcome {
  const result = arms[returnedIndex]?.result ?? charged(200, 0);
  return { kind: "decided", startedAt: 0, result, returnedIndex, fallback: fields.fallback ?? false, arms, hedgeRefused: fields.hedgeRefused ?? false, drains: [] };
}

const primary = (fields: Partial<RaceArm> = {}): RaceArm => ({ index: 0, region: eastUs, reason: "primary", startedAt: 0, endedAt: 100, ...fields });
const hedge = (index: number, fields: Partial<RaceArm> = {}): RaceArm => ({ index, region: index === 1 ? westUs : northEurope, reason: "threshold", startedAt: 50, endedAt: 90, ...fields });

function snapshot(recorder: HedgingMetricsRecorder) {
  return recorder.snapshot(new LatencyWindows(), new RegionCache({ topology: { readRegions: [eastUs, westUs] } }), undefined, () => 0);
}

describe("HedgingMetricsRecorder", () => {
  it("counts skipped requests, per region when known", () => {
    const recorder = new HedgingMetricsRecorder();
    recorder.recordSkipped("East US");
    recorder.recordSkipped(undefined);
    const metrics = snapshot(recorder);
    assert.equal(metrics.requests, 2);
    assert.deepEqual(metrics.regions.map((region) => [region.region, region.requests]), [["East US", 1]]);
  });

  it("a hedge win: a hedge fired and won, the loser's charge counted, the winner's not", () => {
    const recorder = new HedgingMetricsRecorder();
    recorder.record(decided([primary({ aborted: true, result: undefined }), hedge(1, { result: charged(200, 2) }), hedge(2, { result: charged(503, 1.5) })], 1), "East US");
    const metrics = snapshot(recorder);
    assert.equal(metrics.requests, 1);
    assert.equal(metrics.hedgesFired, 2);
    assert.equal(metrics.hedgesWon, 1);
    assert.equal(metrics.losingRequestCharge, 1.5);
    assert.deepEqual(metrics.losers, { drained: 0, drainsCutShort: 0, aborted: 1, drainsInFlight: 0 });
    assert.deepEqual(
      metrics.regions.map((region) => [region.region, region.requests, region.hedgesFired, region.hedgesWon, region.losingRequestCharge]),
      [
        ["East US", 1, 0, 0, 0],
        ["West US", 0, 1, 1, 0],
        ["North Europe", 0, 1, 0, 1.5],
      ],
    );
  });

  it("a fallback to the primary's outcome is no hedge win, and a refused hedge counts as budgetExhausted", () => {
    const recorder = new HedgingMetricsRecorder();
    recorder.record(decided([primary({ result: charged(503, 1) }), hedge(1, { result: charged(503, 1) })], 0, { fallback: true, hedgeRefused: true }), "East US");
    const metrics = snapshot(recorder);
    assert.equal(metrics.hedgesWon, 0);
    assert.equal(metrics.budgetExhausted, 1);
    assert.equal(metrics.losingRequestCharge, 1, "the hedge lost; the primary's outcome was returned");
  });

  it("a caller's abort: the arms it cut are not counted as aborted losers; a race with no arm counts its primary region", () => {
    const recorder = new HedgingMetricsRecorder();
    recorder.record({ kind: "aborted", startedAt: 0, arms: [primary({ aborted: true }), hedge(1, { aborted: true })], hedgeRefused: false, error: new Error("aborted") }, "East US");
    recorder.record({ kind: "aborted", startedAt: 0, arms: [], hedgeRefused: false, error: new Error("aborted") }, "West US");
    const metrics = snapshot(recorder);
    assert.equal(metrics.requests, 2);
    assert.equal(metrics.losers.aborted, 0);
    assert.deepEqual(metrics.regions.map((region) => [region.region, region.requests]), [
      ["East US", 1],
      ["West US", 1],
    ]);
  });

  it("drained losers: counted at the decision, their charge and whether they were cut short when their drain ends", () => {
    const recorder = new HedgingMetricsRecorder();
    const drained = primary({ endedAt: undefined, drain: { decidedAt: 90 } });
    recorder.record(decided([drained, hedge(1, { result: charged(200, 1) })], 1), "East US");
    recorder.recordDrainEnd({ ...drained, drain: { decidedAt: 90, endedAt: 400, end: "settled", result: charged(200, 3) } });
    recorder.recordDrainEnd({ ...drained, drain: { decidedAt: 90, endedAt: 5090, end: "timeLimit" } });
    const metrics = snapshot(recorder);
    assert.equal(metrics.losers.drained, 1);
    assert.equal(metrics.losers.drainsCutShort, 1);
    assert.equal(metrics.losingRequestCharge, 3);
    assert.equal(metrics.regions.find((region) => region.region === "East US")?.losingRequestCharge, 3);
  });

  it("one entry per region whatever its spelling, named as first seen", () => {
    const recorder = new HedgingMetricsRecorder();
    recorder.recordSkipped("East US");
    recorder.recordSkipped("eastus");
    recorder.recordSkipped("EAST US");
    assert.deepEqual(snapshot(recorder).regions.map((region) => [region.region, region.requests]), [["East US", 3]]);
  });

  it("the snapshot adds the regions' latencies, demotions, throttling, the budget and the drains in flight", () => {
    const recorder = new HedgingMetricsRecorder();
    const windows = new LatencyWindows();
    for (let i = 0; i < 5; i++) windows.record("West US", "pointRead", 20, "baseline");
    const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
    regions.demoteRegion("East US", "West US");
    recorder.recordSkipped("East US");
    const budget = { balance: 3, hedgesInFlight: 1 } as never;
    const metrics = recorder.snapshot(windows, regions, budget, (region) => (region === "West US" ? 250 : 0), { inFlight: 2 } as never);
    assert.deepEqual(metrics.budget, { balance: 3, hedgesInFlight: 1 });
    assert.equal(metrics.losers.drainsInFlight, 2);
    const west = metrics.regions.find((region) => region.region === "West US");
    assert.ok(west?.latency !== undefined && west.latencyByClass.pointRead !== undefined);
    assert.equal(west.throttledForMs, 250);
    const east = metrics.regions.find((region) => region.region === "East US");
    assert.equal(east?.demotedInFavourOf, "West US");
    assert.equal(east.latency, undefined);
    assert.equal(east.throttledForMs, undefined);
    assert.equal(west.demotedInFavourOf, undefined);
    assert.equal(metrics.regions.find((region) => region.region === "North Europe"), undefined, "only regions seen");
    assert.equal(snapshot(new HedgingMetricsRecorder()).budget, undefined);
  });
});
