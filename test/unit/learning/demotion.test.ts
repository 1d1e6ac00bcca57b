import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";
import { DemotionTracker, demotionDefaults } from "../../../src/learning/regionRanking.js";
import { eastUs, northEurope, westUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";

describe("DemotionTracker at its edges", () => {
  let clock: SinonFakeTimers;
  let regions: RegionCache;
  let tracker: DemotionTracker;
  const candidates = (): RegionEndpoint[] => [eastUs, ...regions.applicableRegions("read").filter((region) => region.name !== eastUs.name)];

  beforeEach(() => {
    clock = useFakeClock();
    regions = new RegionCache({ topology: { readRegions: [eastUs, westUs, northEurope] } });
    tracker = new DemotionTracker(regions);
    for (let i = 0; i < demotionDefaults.consecutiveWins; i++) tracker.observe({ primary: "East US", hedgeWinner: "West US" });
  });

  afterEach(() => {
    clock.restore();
  });

  it("probes of a demoted region that keep losing leave its demotion as it was, and its probes on schedule", async () => {
    await clock.tickAsync(demotionDefaults.probeIntervalMs / 2);
    // Five probes in a row lose to North Europe: East is demoted already, in favour of West, and stays so.
    for (let i = 0; i < demotionDefaults.consecutiveWins; i++) tracker.observe({ primary: "East US", hedgeWinner: "North Europe" });
    assert.deepEqual(regions.demotedRegions, [{ region: "East US", inFavourOf: "West US" }]);
    await clock.tickAsync(demotionDefaults.probeIntervalMs / 2);
    assert.equal(tracker.route(eastUs, candidates()).reason, "probe", "the probe a second after the demotion is still due");
  });

  it("restores a demoted primary whose win took exactly the healthy latency", () => {
    tracker.observe({ primary: "East US", primaryWonInMs: 7 }, () => 7);
    assert.deepEqual(regions.demotedRegions, []);
  });
});
