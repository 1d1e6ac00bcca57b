import assert from "node:assert/strict";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { useEmulator } from "../../support/emulatorFixture.js";
import { arrivalOf, settledRequests } from "../../support/wire.js";

/**
 * Client-level exclusions changed after a read's primary went out and before
 * its threshold. Plain sends the read once, where it was addressed; the
 * hedged client may add a hedge, but never to a region excluded by then,
 * whether its hedges were planned when due (nothing excluded at the start)
 * or at the start (an exclusion in force then). The change is made once the
 * primary has reached the emulator, and the threshold is hundreds of
 * milliseconds later, so no verdict hinges on a race of real timings.
 */
const regionNames = ["West US", "East US", "North Europe"];
const items = [{ id: "1", pk: "a" }];

describe("never worse than plain, steering: client exclusions changed between a read's start and its hedges", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true } });

  const cases: { kind: "collectionRead" | "pointRead"; before: string[]; after: string[] }[] = [
    { kind: "collectionRead", before: ["North Europe"], after: ["North Europe", "East US"] },
    { kind: "collectionRead", before: ["North Europe"], after: ["East US"] },
    { kind: "pointRead", before: ["North Europe"], after: ["East US"] },
  ];

  for (const { kind, before, after } of cases) {
    it(`${kind}: ${JSON.stringify(before)} then ${JSON.stringify(after)} while West US stalls: as plain, no region excluded by the first hedge's time is contacted`, async function () {
      const { emulator } = fixture;
      const read = (side: Awaited<ReturnType<typeof fixture.client>>) =>
        kind === "pointRead" ? side.container.item("1", "a").read() : side.client.database("db").container("items").read();
      const plain = await fixture.client({ hedging: false, warmUp: { id: "1", pk: "a" } });
      emulator.resetCounters();
      emulator.region("West US").addFault({ operations: [kind], delayMs: 1_500, count: 1 });
      const plainResponse = await read(plain);
      const plainRegions = (await settledRequests(emulator, kind)).map((request) => request.region);

      const hedgingOptions =
        kind === "pointRead"
          ? { crossRegion: { threshold: 300, budget: false as const }, metadata: false as const, excludedRegions: before }
          : { crossRegion: false as const, metadata: { threshold: 300 }, excludedRegions: before };
      const hedged = await fixture.client({ hedging: hedgingOptions, warmUp: { id: "1", pk: "a" } });
      emulator.resetCounters();
      emulator.region("West US").addFault({ operations: [kind], delayMs: 1_500, count: 1 });
      const reading = read(hedged);
      await arrivalOf(emulator, (request) => request.kind === kind && request.region === "West US");
      hedged.hedging!.regions.setExcludedRegions(after);
      const response = await reading;
      const regions = (await settledRequests(emulator, kind)).map((request) => request.region);
      const label = `plain ${plainResponse.statusCode} ${JSON.stringify(plainRegions)}, hedged ${response.statusCode} ${JSON.stringify(regions)} ${JSON.stringify(getHedgeDiagnostics(response.headers)?.arms.map((arm) => arm.region))}`;
      assert.deepEqual(plainRegions, ["West US"], label);
      assert.equal(response.statusCode, plainResponse.statusCode, label);
      assert.deepEqual(regions.filter((region) => after.includes(region)), [], label);
    });
  }
  it("pointRead: North Europe excluded after the first hedge went out to East US, both it and West US stalling: as plain, the second hedge does not go there", async function () {
    const { emulator } = fixture;
    const plain = await fixture.client({ hedging: false, warmUp: { id: "1", pk: "a" } });
    emulator.resetCounters();
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1_500, count: 1 });
    const plainResponse = await plain.container.item("1", "a").read();
    const plainRegions = (await settledRequests(emulator, "pointRead")).map((request) => request.region);

    const hedged = await fixture.client({ hedging: { crossRegion: { threshold: 300, thresholdStep: 600, budget: false }, metadata: false }, warmUp: { id: "1", pk: "a" } });
    emulator.resetCounters();
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1_500, count: 1 });
    emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: 1_500, count: 1 });
    const reading = hedged.container.item("1", "a").read();
    await arrivalOf(emulator, (request) => request.kind === "pointRead" && request.region === "East US");
    hedged.hedging!.regions.setExcludedRegions(["North Europe"]);
    const response = await reading;
    const regions = (await settledRequests(emulator, "pointRead")).map((request) => request.region);
    const label = `plain ${plainResponse.statusCode} ${JSON.stringify(plainRegions)}, hedged ${response.statusCode} ${JSON.stringify(regions)}`;
    assert.deepEqual(plainRegions, ["West US"], label);
    assert.equal(response.statusCode, plainResponse.statusCode, label);
    assert.deepEqual([...regions].sort(), ["East US", "West US"], label);
  });
});
