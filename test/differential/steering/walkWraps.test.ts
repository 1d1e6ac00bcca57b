import assert from "node:assert/strict";
import { useEmulator } from "../../support/emulatorFixture.js";
import type { FixtureClient } from "../../support/emulatorFixture.js";
import { items, pointRead, regionNames, requestTimeout, runWith, steeredOnly, warmUp } from "./support.js";
import type { Run } from "./support.js";

/**
 * Timeouts fail over up to 120 times, by failoverRetryCount % (the count of
 * preferred regions the SDK still considers, after its own exclusions). Once
 * every applicable region was used, plain's walk wraps round to the first
 * applicable region; the hedging client's SDK wraps by 3, not 2.
 */
describe("never worse than plain, steering: a timeout walk after every applicable region was used", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true } });
  const plainClient = (): Promise<FixtureClient> => fixture.client({ hedging: false, connectionPolicy: { requestTimeout }, warmUp });
  const hedgingClient = (): Promise<FixtureClient> => fixture.client({ hedging: { crossRegion: { threshold: 500, thresholdStep: 5_000 } }, connectionPolicy: { requestTimeout }, warmUp });

  const cases: { excluded: string[]; faults: Record<string, { delayMs: number; count?: number }> }[] = [
    // East US excluded: applicable West US, North Europe. West US hangs once, North Europe always.
    { excluded: ["East US"], faults: { "West US": { delayMs: 3_000, count: 1 }, "North Europe": { delayMs: 3_000 } } },
    // West US excluded: applicable East US, North Europe. East US hangs once, North Europe always.
    { excluded: ["West US"], faults: { "East US": { delayMs: 3_000, count: 1 }, "North Europe": { delayMs: 3_000 } } },
  ];

  for (const testCase of cases) {
    it(`a point read with ${testCase.excluded.join(", ")} excluded per request (hedging: false), its two applicable regions hung, walks as plain's excludedLocations`, async function () {
      const plainSide = await plainClient();
      const plain: Run = await runWith(fixture.emulator, testCase.faults, ["pointRead"], () => pointRead(plainSide.container, { excludedLocations: testCase.excluded }));
      const hedgedSide = await hedgingClient();
      const mine: Run = await runWith(fixture.emulator, testCase.faults, ["pointRead"], () =>
        pointRead(hedgedSide.container, steeredOnly({ excludedRegions: testCase.excluded, hedging: false })),
      );
      const label = `plain ${JSON.stringify(plain)}, hedged ${JSON.stringify(mine)}`;
      assert.ok(plain.outcome.ok, label);
      assert.deepEqual(mine.outcome, plain.outcome, label);
      assert.deepEqual(mine.regions, plain.regions, label);
    });
  }

  it("the extra timeout turns plain's success into a failure under an abortSignal of 2.6 s (East US excluded, West US hung once, North Europe always)", async function () {
    const testCase = cases[0]!;
    const plainSide = await plainClient();
    const plain: Run = await runWith(fixture.emulator, testCase.faults, ["pointRead"], () =>
      pointRead(plainSide.container, { excludedLocations: testCase.excluded, abortSignal: AbortSignal.timeout(2_600) }),
    );
    const hedgedSide = await hedgingClient();
    const mine: Run = await runWith(fixture.emulator, testCase.faults, ["pointRead"], () =>
      pointRead(hedgedSide.container, steeredOnly({ excludedRegions: testCase.excluded, hedging: false }, { abortSignal: AbortSignal.timeout(2_600) })),
    );
    const label = `plain ${JSON.stringify(plain)}, hedged ${JSON.stringify(mine)}`;
    assert.ok(plain.outcome.ok, label);
    assert.deepEqual(mine.outcome, plain.outcome, label);
  });
});
