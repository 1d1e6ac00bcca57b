import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { useEmulator } from "../../support/emulatorFixture.js";
import type { FixtureClient } from "../../support/emulatorFixture.js";
import { items, pointRead, regionNames, requestTimeout, runWith, warmUp } from "./support.js";
import type { Run } from "./support.js";

/**
 * Client-level exclusions changed while an operation's first attempt hangs.
 * Plain cannot change its exclusions mid-operation, so the hedged walk must
 * not go back to the hung region, which neither plain walk (without the
 * exclusion, or made with it from the start) does.
 */
describe("never worse than plain, steering: client exclusions changed while an operation's first attempt hangs", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true } });
  const plainClient = (): Promise<FixtureClient> => fixture.client({ hedging: false, connectionPolicy: { requestTimeout }, warmUp });

  const cases: { before: string[]; after: string[]; hung: string }[] = [
    // Nothing excluded at first: the first attempt is not steered, so not remembered.
    { before: [], after: ["West US"], hung: "East US" },
    { before: ["North Europe"], after: ["West US"], hung: "East US" },
    { before: ["East US"], after: [], hung: "West US" },
    { before: ["West US"], after: ["East US"], hung: "East US" },
  ];

  for (const testCase of cases) {
    it(`${JSON.stringify(testCase.before)} then ${JSON.stringify(testCase.after)} while ${testCase.hung} hangs: the SDK's retry never goes back to the hung region (each plain walk visits it once)`, async function () {
      const fault = { [testCase.hung]: { delayMs: 3_000 } };
      const plainSide = await plainClient();
      const plainBefore: Run = await runWith(fixture.emulator, fault, ["pointRead"], () => pointRead(plainSide.container, { excludedLocations: testCase.before }));
      const plainAfter: Run = await runWith(fixture.emulator, fault, ["pointRead"], () => pointRead(plainSide.container, { excludedLocations: testCase.after }));
      const hedgedSide = await fixture.client({ hedging: { crossRegion: false, excludedRegions: testCase.before }, connectionPolicy: { requestTimeout }, warmUp });
      const mine: Run = await runWith(fixture.emulator, fault, ["pointRead"], async () => {
        const read = pointRead(hedgedSide.container, {});
        await sleep(300);
        hedgedSide.hedging!.regions.setExcludedRegions(testCase.after);
        return read;
      });
      const label = `plain before ${JSON.stringify(plainBefore)}, plain after ${JSON.stringify(plainAfter)}, hedged ${JSON.stringify(mine)}`;
      assert.ok(plainBefore.outcome.ok && plainAfter.outcome.ok, label);
      assert.deepEqual(mine.outcome, plainAfter.outcome, label);
      assert.equal(mine.regions.filter((region) => region === testCase.hung).length, 1, `the hung region once: ${label}`);
    });
  }
});
