import assert from "node:assert/strict";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import { useEmulator } from "../../support/emulatorFixture.js";
import { arrivals, items, outcomeOf, pointRead, regionNames, requestTimeout, runWith, warmUp } from "./support.js";

describe("never worse than plain, steering: concurrent walks and an abort mid-walk", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true } });

  it("an abortSignal fired while the re-pointed first attempt hangs ends as plain's: AbortError, one attempt", async function () {
    const faults = { "West US": { delayMs: 3_000 } };
    const plainSide = await fixture.client({ hedging: false, connectionPolicy: { requestTimeout: 2_000 }, warmUp });
    const plain = await runWith(fixture.emulator, faults, ["pointRead"], () => pointRead(plainSide.container, { excludedLocations: ["East US"], abortSignal: AbortSignal.timeout(500) }));
    const hedgedSide = await fixture.client({ hedging: { crossRegion: { threshold: 1_000 } }, connectionPolicy: { requestTimeout: 2_000 }, warmUp });
    const mine = await runWith(fixture.emulator, faults, ["pointRead"], () =>
      pointRead(hedgedSide.container, hedgingRequestOptions({ excludedRegions: ["East US"] }, { abortSignal: AbortSignal.timeout(500) })),
    );
    assert.deepEqual(mine, plain, `plain ${JSON.stringify(plain)}, hedged ${JSON.stringify(mine)}`);
  });

  it("ten concurrent reads on one client, alternating three exclusions, West US hung for the first ten requests: every read completes", async function () {
    const client = await fixture.client({ hedging: { crossRegion: false }, connectionPolicy: { requestTimeout }, warmUp });
    const exclusions = [["East US"], ["North Europe"], ["East US", "North Europe"]];
    fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 3_000, count: 10 });
    fixture.emulator.resetCounters();
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) => outcomeOf(() => pointRead(client.container, hedgingRequestOptions({ excludedRegions: exclusions[i % 3]! })))),
    );
    assert.ok(outcomes.every((outcome) => outcome.ok), JSON.stringify(outcomes));
    // Excluded East US + North Europe: West US alone, retried in place after its timeout; the others leave West US.
    assert.ok(arrivals(fixture.emulator, ["pointRead"]).length >= 10);
  });
});
