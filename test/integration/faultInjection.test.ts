import assert from "node:assert/strict";
import type { Container } from "@azure/cosmos";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { faultInjectionPolicy } from "../../src/testing/faultInjectionPolicy.js";
import type { FaultInjectionPolicy } from "../../src/testing/faultInjectionPolicy.js";
import { useEmulator } from "../support/emulatorFixture.js";

const preferredLocations = ["West US", "East US"];
const database = "faults";
const containerId = "items";

async function elapsed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await work();
  return { value, ms: performance.now() - start };
}

describe("faultInjectionPolicy over the emulator", function () {
  const fixture = useEmulator({ database, container: containerId, items: [{ id: "1", pk: "a", value: 1 }], preferredLocations });

  /** A CosmosClient whose hedging pipeline ends with a fault-injection policy sharing its regions. */
  async function hedgedContainer(crossRegion: NonNullable<HedgingOptions["crossRegion"]>): Promise<{ container: Container; faults: FaultInjectionPolicy }> {
    // A second hedge (to North Europe) only if the first takes seconds: each race has the arms its test expects.
    const hedging = createHedgingHttpClient({
      crossRegion: typeof crossRegion === "object" ? { thresholdStep: 5000, ...crossRegion } : crossRegion,
      preferredRegions: preferredLocations,
    });
    const faults = faultInjectionPolicy({ regions: hedging.regions, rules: [], seed: 1 });
    hedging.pipeline.addPolicy(faults, { afterPhase: "Sign" });
    // Warm up: the account read (which teaches the shared RegionCache the regions) and the container metadata.
    const { container } = await fixture.client({ hedging: false, httpClient: hedging, warmUp: { id: "1", pk: "a" } });
    return { container, faults };
  }

  it("lets the SDK's own retry answer an injected 503 with hedging on, as with it off", async function () {
    const { container, faults } = await hedgedContainer({ threshold: 50 });
    const rule = faults.addRule({ id: "west-503", region: "West US", operations: ["pointRead"], result: { status: 503 }, count: 1 });

    const response = await container.item("1", "a").read();

    assert.equal(response.statusCode, 200);
    assert.equal(response.resource?.["value"], 1);
    assert.equal(rule.hits, 1);
    // The record of the operation's last attempt: the SDK's retry, sent to the next preferred region, answered there.
    const diagnostics = getHedgeDiagnostics(response);
    assert.equal(diagnostics?.hedgeFired, false);
    assert.equal(diagnostics?.primaryRegion, "East US");
    assert.equal(diagnostics?.terminalState, "primaryWon");
    assert.equal(fixture.emulator.region("West US").count("pointRead"), 0, "a synthetic response never reaches the wire");
    assert.equal(fixture.emulator.region("East US").count("pointRead"), 1, "the SDK retried the 503 in the next preferred region");
  });

  it("lets the SDK's own retry answer an injected 503 when hedging is off", async function () {
    const { container, faults } = await hedgedContainer(false);
    const rule = faults.addRule({ id: "west-503", region: "West US", operations: ["pointRead"], result: { status: 503 }, count: 1 });

    const response = await container.item("1", "a").read();

    assert.equal(response.statusCode, 200);
    assert.equal(response.resource?.["value"], 1);
    assert.equal(rule.hits, 1);
    assert.equal(getHedgeDiagnostics(response)?.hedgeFired, false);
    assert.equal(fixture.emulator.region("West US").count("pointRead"), 0);
    assert.equal(fixture.emulator.region("East US").count("pointRead"), 1, "the SDK retried the 503 in the next preferred region");
  });

  it("serves a read from the other region when the preferred region answers late, after reaching both", async function () {
    const { container, faults } = await hedgedContainer({ threshold: 50 });
    faults.addRule({ id: "slow-west", region: "westus", operations: ["pointRead"], responseDelayMs: 3000 });

    const { value: response, ms } = await elapsed(() => container.item("1", "a").read());

    assert.equal(response.resource?.["value"], 1);
    assert.ok(ms < 3000, `the hedge answered in ${Math.round(ms)} ms, not after the 3000 ms delay`);
    const diagnostics = getHedgeDiagnostics(response);
    assert.equal(diagnostics?.hedgeWon, true);
    assert.equal(diagnostics?.winningRegion, "East US");
    assert.equal(faults.hits("slow-west"), 1);
    assert.equal(fixture.emulator.region("West US").count("pointRead"), 1, "the primary reached its region");
    assert.equal(fixture.emulator.region("East US").count("pointRead"), 1, "the hedge reached the other region");
  });

  it("serves a read from the other region when sending to the preferred region is slow, never sending the aborted primary", async function () {
    const sendDelayMs = 3000;
    // Aborted, not drained: a drained primary would go out once its send delay was over.
    const { container, faults } = await hedgedContainer({ threshold: 50, drainLosers: false });
    faults.addRule({ id: "slow-send-west", region: "West US", operations: ["pointRead"], delayMs: sendDelayMs });

    const { value: response, ms } = await elapsed(() => container.item("1", "a").read());

    assert.equal(response.resource?.["value"], 1);
    assert.ok(ms < sendDelayMs, `the hedge answered in ${Math.round(ms)} ms`);
    assert.deepEqual(
      getHedgeDiagnostics(response)?.arms.map((arm) => [arm.region, arm.outcome]),
      [
        ["West US", "aborted"],
        ["East US", "returned"],
      ],
    );
    // Past the moment the primary's send delay would have ended: a primary sent late would have arrived by now.
    await new Promise((resolve) => setTimeout(resolve, sendDelayMs - ms + 200));
    await fixture.emulator.idle();
    assert.equal(fixture.emulator.region("West US").count("pointRead"), 0, "the primary was aborted during its delay, before the wire");
    assert.equal(fixture.emulator.region("East US").count("pointRead"), 1);
  });

  it("leaves every request alone while switched off", async function () {
    // A threshold far above a healthy read's latency: the read is not hedged because it is fast, whatever the machine's load.
    const { container, faults } = await hedgedContainer({ threshold: 2000 });
    faults.addRule({ id: "west-503", region: "West US", result: { status: 503 } });
    faults.enabled = false;

    const response = await container.item("1", "a").read();

    assert.equal(response.statusCode, 200);
    assert.equal(getHedgeDiagnostics(response)?.winningRegion, "West US");
    assert.equal(faults.hits("west-503"), 0);
    assert.equal(fixture.emulator.region("West US").count("pointRead"), 1);
    assert.equal(fixture.emulator.region("East US").count("pointRead"), 0);
  });
});
