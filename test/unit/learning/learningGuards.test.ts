import assert from "node:assert/strict";
import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import type { CrossRegionHedgingPolicyOptions } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { metadataHedgingPolicy } from "../../../src/policies/metadataHedgingPolicy.js";
import type { ScriptStep } from "../../support/fakeTransport.js";
import { eastUs, observe, pointRead, requestTo, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";

const ok = (delayMs: number): ScriptStep => ({ status: 200, delayMs });

/**
 * What a hedging policy must not learn from, or honour: behaviour seen only
 * through the public factories, the responses' diagnostics, `metrics()` and
 * the shared `RegionCache`, so that the checks outlive a rearrangement of the
 * policies' insides.
 */
describe("what the hedging policies refuse to learn or honour", () => {
  const harness = useRaceHarness();

  function pipelineOf(policy: PipelinePolicy) {
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(policy);
    return pipeline;
  }

  function crossRegion(options: CrossRegionHedgingPolicyOptions) {
    const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
    // Losers aborted, as these tests are about what is learned, not about draining.
    const policy = crossRegionHedgingPolicy({ regions, drainLosers: false, ...options });
    return { regions, policy, pipeline: pipelineOf(policy) };
  }

  /** Sends one request with each region's next step scripted and runs the fake clock until it settles. */
  async function send(
    pipeline: ReturnType<typeof pipelineOf>,
    steps: { east?: ScriptStep; west?: ScriptStep },
    request: PipelineRequest = pointRead(eastUs, harness.leaks.controller().signal),
  ): Promise<HedgeDiagnostics> {
    if (steps.east !== undefined) harness.transport.script(eastUs.endpoint, steps.east);
    if (steps.west !== undefined) harness.transport.script(westUs.endpoint, steps.west);
    const pending = observe(pipeline.sendRequest(harness.transport, request));
    for (let waited = 0; !pending.state().done && waited < 20_000; waited++) await harness.clock.tickAsync(1);
    const diagnostics = getHedgeDiagnostics(await pending.result());
    assert.ok(diagnostics !== undefined, "diagnostics are attached");
    return diagnostics;
  }

  describe("crossRegionHedgingPolicy", () => {
    it("a primary win the budget kept unhedged does not break a demotion streak", async () => {
      // A budget of half a hedge per request: East, slow, is hedged every other request and wins the ones in between unhedged.
      const { pipeline, regions, policy } = crossRegion({ threshold: 10, routing: "demotion", budget: { maxExtraLoad: 0.5, minHedgesPerSecond: 0 } });
      const outcomes: string[] = [];
      for (let i = 0; i < 10 && regions.demotedRegions.length === 0; i++) {
        const refused = i % 2 === 0;
        const diagnostics = await send(pipeline, refused ? { east: ok(300) } : { east: ok(300), west: ok(20) });
        outcomes.push(`${diagnostics.terminalState}${diagnostics.skipReason !== undefined ? `/${diagnostics.skipReason}` : ""}`);
      }
      assert.deepEqual(outcomes, [
        ...Array.from({ length: 4 }, () => ["primaryWon/budgetExhausted", "hedgeWon"]).flat(),
        "primaryWon/budgetExhausted",
        "hedgeWon",
      ]);
      assert.deepEqual(regions.demotedRegions, [{ region: "East US", inFavourOf: "West US" }], "five hedge wins in a row, the refused requests between them not counting");
      assert.equal(policy.metrics().regions.find((region) => region.region === "East US")?.demotedInFavourOf, "West US");
    });

    it("(the control: a primary win that was free to hedge does break the streak)", async () => {
      const { pipeline, regions } = crossRegion({ threshold: 10, routing: "demotion", budget: false });
      for (let i = 0; i < 5; i++) {
        await send(pipeline, { east: ok(300), west: ok(20) });
        await send(pipeline, { east: ok(2) });
      }
      assert.deepEqual(regions.demotedRegions, []);
    });

    it("answers of requests the budget kept unhedged do not raise the adaptive threshold", async () => {
      const { pipeline } = crossRegion({ threshold: "adaptive", budget: { maxExtraLoad: 0.01, minHedgesPerSecond: 0 } });
      for (let i = 0; i < 20; i++) await send(pipeline, { east: ok(2) });
      const warmed = await send(pipeline, { east: ok(2) });
      assert.equal(warmed.thresholdSource, "adaptive");
      const learned = warmed.thresholdMs ?? Number.NaN;
      assert.ok(learned < 20, `learned ${learned} ms from 2 ms answers`);
      // East browns out; every hedge is refused, so each slow answer comes from a primary left alone.
      for (let i = 0; i < 40; i++) {
        const refused = await send(pipeline, { east: ok(400) });
        assert.equal(refused.skipReason, "budgetExhausted");
      }
      const after = await send(pipeline, { east: ok(2) });
      assert.equal(after.thresholdMs, learned, "the threshold still comes from East's healthy answers");
    });

    it("(the control: slower answers that won their race do raise it)", async () => {
      const { pipeline } = crossRegion({ threshold: "adaptive", budget: false });
      for (let i = 0; i < 20; i++) await send(pipeline, { east: ok(2) });
      const learned = (await send(pipeline, { east: ok(2) })).thresholdMs ?? Number.NaN;
      // East slows to 60 ms, still ahead of West's 200: each read is hedged, and East's answer wins.
      for (let i = 0; i < 40; i++) await send(pipeline, { east: ok(60), west: ok(200) });
      const after = (await send(pipeline, { east: ok(2) })).thresholdMs ?? Number.NaN;
      assert.ok(after > learned * 2, `the threshold followed East from ${learned} to ${after} ms`);
    });
  });

  describe("metadataHedgingPolicy", () => {
    const requestTimeout = 1000;
    const policyThreshold = 400;

    function metadata() {
      const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs], perPartitionFailover: true } });
      return pipelineOf(metadataHedgingPolicy({ regions, enabled: true, threshold: policyThreshold, requestTimeout, drainLosers: false }));
    }

    function collectionReadWith(threshold: number): PipelineRequest {
      const { initialHeaders } = hedgingRequestOptions({ hedging: { threshold } });
      return requestTo(eastUs, "GET", "dbs/db/colls/c", { headers: initialHeaders as Record<string, string>, abortSignal: harness.leaks.controller().signal });
    }

    for (const requested of [requestTimeout, requestTimeout * 5]) {
      it(`ignores a per-request threshold of ${requested} ms, not below requestTimeout (${requestTimeout} ms): the hedge goes out at the policy's`, async () => {
        const diagnostics = await send(metadata(), { east: ok(3000), west: ok(10) }, collectionReadWith(requested));
        assert.equal(diagnostics.thresholdMs, policyThreshold);
        assert.equal(diagnostics.thresholdSource, "options");
        assert.equal(diagnostics.arms[1]?.startOffsetMs, policyThreshold);
        assert.equal(diagnostics.winningRegion, "West US");
      });
    }

    it(`(the control: a per-request threshold just below requestTimeout is honoured)`, async () => {
      const diagnostics = await send(metadata(), { east: ok(3000), west: ok(10) }, collectionReadWith(requestTimeout - 1));
      assert.equal(diagnostics.thresholdMs, requestTimeout - 1);
      assert.equal(diagnostics.thresholdSource, "request");
      assert.equal(diagnostics.arms[1]?.startOffsetMs, requestTimeout - 1);
    });
  });
});
