import assert from "node:assert/strict";
import type { PipelineResponse } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { metadataHedgingEnvironmentVariable, readBooleanSwitch } from "../../../src/cosmos/environment.js";
import { operatorLogLimits } from "../../../src/log.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { metadataHedgingPolicy } from "../../../src/policies/metadataHedgingPolicy.js";
import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import { eastUs, northEurope, observe, pointRead, westUs } from "../../support/hedgingFixtures.js";
import { captureAzureLogs } from "../../support/logCapture.js";
import type { LogCapture } from "../../support/logCapture.js";
import { useRaceHarness } from "../../support/raceHarness.js";

/** The message of a captured line, without the logger's namespace. */
function messages(logs: LogCapture): string[] {
  return logs.packageLines().map((line) => line.replace(/^azure:cosmos-hedging(:\w+)?:(info|verbose|warning|error) /, ""));
}

describe("what the package logs for an operator", () => {
  const harness = useRaceHarness();
  let logs: LogCapture;
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];

  afterEach(() => {
    logs.restore();
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
    readBooleanSwitch(metadataHedgingEnvironmentVariable);
  });

  describe("at info", () => {
    beforeEach(() => {
      logs = captureAzureLogs("info");
    });

    it("says what a new hedging client hedges", () => {
      createHedgingHttpClient();
      createHedgingHttpClient({ crossRegion: { threshold: "adaptive", thresholdStep: 50 }, metadata: "followAccount" });
      createHedgingHttpClient({ crossRegion: false, metadata: { threshold: 800 }, requestTimeout: 10_000 });
      assert.deepEqual(messages(logs), [
        "Hedging client created: data-plane reads hedged after 500 ms, then every 100 ms; metadata reads hedged after 1500 ms.",
        "Hedging client created: data-plane reads hedged after an adaptive threshold, then every 50 ms; metadata reads hedged while the account reports per-partition automatic failover.",
        "Hedging client created: data-plane hedging off; metadata reads hedged after 800 ms.",
      ]);
    });

    it("says the default data-plane threshold the client uses under a short requestTimeout: half of it, as for metadata", () => {
      createHedgingHttpClient({ requestTimeout: 600 });
      assert.deepEqual(messages(logs), [
        "Hedging client created: data-plane reads hedged after 300 ms, then every 100 ms; metadata reads hedged after 300 ms.",
      ]);
    });

    it("reports the threshold in force when an option is a getter that answers differently each time it is read", () => {
      let reads = 0;
      const crossRegion = {
        get threshold(): number {
          reads += 1;
          return reads === 1 ? 200 : 900;
        },
      };
      const client = createHedgingHttpClient({ crossRegion });
      assert.equal(reads, 1, "read once, by the snapshot the policy and the line share");
      assert.deepEqual(messages(logs), ["Hedging client created: data-plane reads hedged after 200 ms, then every 100 ms; metadata reads hedged after 1500 ms."]);
      assert.ok(client.pipeline.getOrderedPolicies().length > 0);
    });

    it("logs the topology when first learned and when it changes, and nothing when it does not", () => {
      const cache = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
      cache.setTopology({ readRegions: [eastUs, westUs] });
      cache.setTopology({ readRegions: [eastUs, westUs, northEurope] });
      assert.deepEqual(messages(logs), [
        "Learned the account's topology: read regions East US, West US; write regions East US; multi-write off; per-partition automatic failover off.",
        "The account's topology changed: read regions East US, West US, North Europe; write regions East US; multi-write off.",
      ]);
    });

    it("logs the account's per-partition failover and hedging switch turning, each of which turns hedging on or off", () => {
      const cache = new RegionCache({ topology: { readRegions: [eastUs, westUs], crossRegionalHedgingDisabled: true } });
      cache.setTopology({ readRegions: [eastUs, westUs], perPartitionFailover: true });
      cache.setTopology({ readRegions: [eastUs, westUs], perPartitionFailover: false, crossRegionalHedgingDisabled: true });
      assert.deepEqual(messages(logs).slice(1), [
        "The account's disableCrossRegionalHedging switch is set: all hedging is off until the operator clears it.",
        'The account now reports per-partition automatic failover: hedging set to "followAccount" is on.',
        "The account's disableCrossRegionalHedging switch was cleared: hedging is back as configured.",
        'The account no longer reports per-partition automatic failover: hedging set to "followAccount" is off.',
        "The account's disableCrossRegionalHedging switch is set: all hedging is off until the operator clears it.",
      ]);
    });

    it("logs a region demoted and restored, and at most a few lines a minute of a region that flaps", async () => {
      const cache = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
      const before = logs.packageLines().length;
      for (let flap = 0; flap < 20; flap++) {
        cache.demoteRegion("East US", "West US");
        cache.restoreRegion("East US");
      }
      const flapping = messages(logs).slice(before);
      assert.deepEqual(flapping.slice(0, 2), [
        'Demoted read region "East US": reads go first to "West US" until it serves well again.',
        'Restored read region "East US": reads follow the preferred order again.',
      ]);
      assert.equal(flapping.length, operatorLogLimits.linesPerWindow);
      await harness.clock.tickAsync(operatorLogLimits.windowMs);
      cache.demoteRegion("East US", "West US");
      assert.equal(
        messages(logs).at(-1),
        `Demoted read region "East US": reads go first to "West US" until it serves well again. (${40 - operatorLogLimits.linesPerWindow} more such lines left out in the previous minute)`,
      );
    });

    it("warns about a bad AZURE_COSMOS_METADATA_HEDGING_ENABLED when the policy is created, before any request", () => {
      process.env[metadataHedgingEnvironmentVariable] = "sometimes";
      metadataHedgingPolicy();
      assert.deepEqual(
        logs.packageLines().filter((line) => line.includes(":warning ")).map((line) => line.replace(/^\S+ /, "")),
        ['Ignoring AZURE_COSMOS_METADATA_HEDGING_ENABLED="sometimes": accepted values are "true" and "false".'],
      );
    });

    it("logs AZURE_COSMOS_METADATA_HEDGING_ENABLED switching metadata hedging off and on, once per change", () => {
      process.env[metadataHedgingEnvironmentVariable] = "false";
      metadataHedgingPolicy();
      readBooleanSwitch(metadataHedgingEnvironmentVariable);
      process.env[metadataHedgingEnvironmentVariable] = "TRUE";
      readBooleanSwitch(metadataHedgingEnvironmentVariable);
      delete process.env[metadataHedgingEnvironmentVariable];
      readBooleanSwitch(metadataHedgingEnvironmentVariable);
      readBooleanSwitch(metadataHedgingEnvironmentVariable);
      assert.deepEqual(messages(logs), [
        "AZURE_COSMOS_METADATA_HEDGING_ENABLED is set to false: metadata hedging is switched off, whatever the client's options say.",
        "AZURE_COSMOS_METADATA_HEDGING_ENABLED is set to true: metadata hedging is forced on, whatever the client's options say.",
        "AZURE_COSMOS_METADATA_HEDGING_ENABLED is no longer set to true or false: metadata hedging follows the client's options again.",
      ]);
    });

    it("logs the hedge budget spent once for a storm of refused hedges, and recovered once hedges get through again", async () => {
      const pipeline = createEmptyPipeline();
      const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
      pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold: 100, budget: { maxHedgesInFlight: 1, minHedgesPerSecond: 1000 } }));
      const storm = 20;
      for (let i = 0; i <= storm; i++) harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 2000 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 }, { status: 200, delayMs: 10 });
      const reads = Array.from({ length: storm }, () => observe(pipeline.sendRequest(harness.transport, pointRead(eastUs))));
      await harness.clock.tickAsync(2000);
      const responses: PipelineResponse[] = await Promise.all(reads.map((read) => read.result()));
      assert.equal(responses.length, storm);
      const spent = 'The hedge budget is spent: requests run without hedges (skipReason "budgetExhausted") until it refills.';
      assert.deepEqual(messages(logs).slice(1), [spent]);

      await harness.clock.tickAsync(operatorLogLimits.budgetQuietMs);
      const recovery = observe(pipeline.sendRequest(harness.transport, pointRead(eastUs)));
      await harness.clock.tickAsync(200);
      await recovery.result();
      assert.deepEqual(messages(logs).slice(1), [spent, `The hedge budget has recovered: hedges go out again, after ${storm - 1} refused over 0.0 s.`]);
      // The recovery race's losing primary drains until it answers.
      await harness.clock.tickAsync(2000);
    });

    it("logs nothing per request at info", async () => {
      const client = createHedgingHttpClient({ httpClient: harness.transport, crossRegion: { threshold: 100 }, metadata: false });
      client.regions.setTopology({ readRegions: [eastUs, westUs] });
      const before = logs.packageLines().length;
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 500 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const read = observe(client.sendRequest(pointRead(eastUs)));
      await harness.clock.tickAsync(500);
      await read.result();
      assert.equal(logs.packageLines().length, before);
    });
  });

  describe("at verbose", () => {
    beforeEach(() => {
      logs = captureAzureLogs("verbose");
    });

    it("logs each hedge fired and how it ended, with a charge that says it is not final while an arm drains, and no line for a race the primary won alone", async () => {
      const pipeline = createEmptyPipeline();
      const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
      pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold: 100 }));
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 20 }, { status: 200, delayMs: 500, requestCharge: 1 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 30, requestCharge: 1.25 });
      const fast = observe(pipeline.sendRequest(harness.transport, pointRead(eastUs)));
      await harness.clock.tickAsync(20);
      await fast.result();
      const before = logs.packageLines().length;
      const hedged = observe(pipeline.sendRequest(harness.transport, pointRead(eastUs)));
      await harness.clock.tickAsync(500);
      await hedged.result();
      assert.deepEqual(messages(logs).slice(before), [
        "pointRead: hedged at 100 ms (threshold); hedgeWon by West US in 130 ms (arms: East US primary - drained, West US threshold 200 returned; 1.25 RU so far, not final: a drained arm's charge is still to come).",
      ]);
      assert.ok(logs.packageLines().slice(before).every((line) => line.startsWith("azure:cosmos-hedging:crossRegionHedgingPolicy:verbose ")));
    });
  });
});
