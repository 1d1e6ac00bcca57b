import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";
import { DemotionTracker, ThompsonRanking, demotionDefaults, thompsonDefaults } from "../../../src/learning/regionRanking.js";
import { seededRandom } from "../../../src/testing/seededRandom.js";
import { eastUs, northEurope, ukSouth, westUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";

const names = (regions: readonly RegionEndpoint[]): string[] => regions.map((region) => region.name);

describe("region ranking", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  describe("RegionCache demotions", () => {
    const cache = (): RegionCache => new RegionCache({ topology: { readRegions: [eastUs, westUs, northEurope, ukSouth] } });

    it("puts the winner in the demoted region's place and the demoted region last, for reads only", () => {
      const regions = cache();
      regions.demoteRegion("East US", "North Europe");
      assert.deepEqual(names(regions.applicableRegions("read")), ["North Europe", "West US", "UK South", "East US"]);
      assert.deepEqual(names(regions.applicableRegions("write")), ["East US"], "writes keep their order");
      assert.deepEqual(regions.demotedRegions, [{ region: "East US", inFavourOf: "North Europe" }]);
      assert.equal(regions.isDemoted("eastus"), true, "names compare in any case and spacing");
      assert.equal(regions.isDemoted(westUs), false);
    });

    it("leaves a winner that is already ahead where it is", () => {
      const regions = cache();
      regions.demoteRegion("West US", "East US");
      assert.deepEqual(names(regions.applicableRegions("read")), ["East US", "North Europe", "UK South", "West US"]);
    });

    it("applies demotions in order, then the exclusions", () => {
      const regions = cache();
      regions.demoteRegion("East US", "West US");
      regions.demoteRegion("West US", "UK South");
      assert.deepEqual(names(regions.applicableRegions("read")), ["UK South", "North Europe", "East US", "West US"]);
      assert.deepEqual(names(regions.applicableRegions("read", ["uk south"])), ["North Europe", "East US", "West US"]);
    });

    it("follows the preferred order and ignores regions the account does not have", () => {
      const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs, northEurope] }, preferredRegions: ["West US", "East US"] });
      regions.demoteRegion("West US", "East US");
      regions.demoteRegion("Mars Central", "East US");
      assert.deepEqual(names(regions.applicableRegions("read")), ["East US", "West US"]);
    });

    it("restores a region, reporting whether it was demoted; demoting again replaces the earlier demotion", () => {
      const regions = cache();
      regions.demoteRegion("East US", "West US");
      regions.demoteRegion("East US", "UK South");
      assert.deepEqual(regions.demotedRegions, [{ region: "East US", inFavourOf: "UK South" }]);
      assert.equal(regions.restoreRegion("EAST US"), true);
      assert.equal(regions.restoreRegion("East US"), false);
      assert.deepEqual(names(regions.applicableRegions("read")), ["East US", "West US", "North Europe", "UK South"]);
    });

    it("rejects bad names and a region demoted in favour of itself", () => {
      const regions = cache();
      assert.throws(() => regions.demoteRegion("", "West US"), TypeError);
      assert.throws(() => regions.demoteRegion("East US", 5 as unknown as string), TypeError);
      assert.throws(() => regions.demoteRegion("East US", "eastus"), /in favour of itself/);
      assert.throws(() => regions.restoreRegion(null as unknown as string), TypeError);
    });
  });

  describe("DemotionTracker", () => {
    let regions: RegionCache;
    let tracker: DemotionTracker;
    const candidates = (): RegionEndpoint[] => [eastUs, ...regions.applicableRegions("read").filter((region) => region.name !== eastUs.name)];

    beforeEach(() => {
      regions = new RegionCache({ topology: { readRegions: [eastUs, westUs, northEurope] } });
      tracker = new DemotionTracker(regions);
    });

    function hedgeWins(times: number, winner = "West US"): void {
      for (let i = 0; i < times; i++) tracker.observe({ primary: "East US", hedgeWinner: winner });
    }

    it("demotes a primary after five straight hedge wins, in favour of the last winner", () => {
      hedgeWins(demotionDefaults.consecutiveWins - 1);
      assert.equal(regions.isDemoted("East US"), false);
      hedgeWins(1, "North Europe");
      assert.deepEqual(regions.demotedRegions, [{ region: "East US", inFavourOf: "North Europe" }]);
    });

    it("resets the streak when the primary wins", () => {
      hedgeWins(4);
      tracker.observe({ primary: "East US", primaryWonInMs: 3 });
      hedgeWins(4);
      assert.equal(regions.isDemoted("East US"), false);
      hedgeWins(1);
      assert.equal(regions.isDemoted("East US"), true);
    });

    it("counts streaks per primary", () => {
      hedgeWins(3);
      for (let i = 0; i < 3; i++) tracker.observe({ primary: "West US", hedgeWinner: "East US" });
      hedgeWins(1);
      assert.equal(regions.isDemoted("East US"), false);
    });

    it("sends reads of a demoted region to the region it was demoted in favour of, and hedges into it last, and says so", () => {
      const before = tracker.route(eastUs, candidates());
      assert.deepEqual(names(before.targets), ["East US", "West US", "North Europe"]);
      assert.equal(before.reason, undefined);
      hedgeWins(5, "North Europe");
      const after = tracker.route(eastUs, candidates());
      assert.deepEqual(names(after.targets), ["North Europe", "West US", "East US"]);
      assert.equal(after.reason, "demoted");
    });

    it("probes a demoted region with one read in a hundred", () => {
      hedgeWins(5);
      const reasons = Array.from({ length: 300 }, () => tracker.route(eastUs, candidates()).reason);
      assert.deepEqual(
        reasons.flatMap((reason, index) => (reason === "probe" ? [index] : [])),
        [99, 199, 299],
      );
      const probe = tracker.route(eastUs, candidates());
      assert.equal(probe.reason, "demoted");
    });

    it("probes a demoted region at least once a second", async () => {
      hedgeWins(5);
      assert.equal(tracker.route(eastUs, candidates()).reason, "demoted");
      await clock.tickAsync(demotionDefaults.probeIntervalMs - 1);
      assert.equal(tracker.route(eastUs, candidates()).reason, "demoted");
      await clock.tickAsync(1);
      const probe = tracker.route(eastUs, candidates());
      assert.equal(probe.reason, "probe");
      assert.deepEqual(names(probe.targets), ["East US", "West US", "North Europe"], "the probe goes to the demoted region first");
      assert.equal(tracker.route(eastUs, candidates()).reason, "demoted");
    });

    it("restores a demoted region when it answers as the primary within the healthy latency", () => {
      hedgeWins(5);
      let asked = 0;
      tracker.observe({ primary: "East US", primaryWonInMs: 40 }, () => {
        asked += 1;
        return 5;
      });
      assert.equal(regions.isDemoted("East US"), true, "40 ms is not healthy");
      tracker.observe({ primary: "East US", primaryWonInMs: 4 }, () => 5);
      assert.equal(regions.isDemoted("East US"), false);
      assert.equal(asked, 1);
      tracker.observe({ primary: "West US", primaryWonInMs: 4 }, () => {
        asked += 1;
        return 5;
      });
      assert.equal(asked, 1, "the healthy latency is asked for only for a demoted primary");
    });

    it("restores a demoted winner instead of demoting the region that replaced it", () => {
      hedgeWins(5);
      for (let i = 0; i < 5; i++) tracker.observe({ primary: "West US", hedgeWinner: "East US" });
      assert.deepEqual(regions.demotedRegions, []);
    });

    it("a hedge win on a probe does not restore the demoted region", () => {
      hedgeWins(5);
      hedgeWins(5);
      assert.deepEqual(regions.demotedRegions, [{ region: "East US", inFavourOf: "West US" }]);
    });

    it("leaves reads alone when every other candidate is demoted too", () => {
      regions.demoteRegion("West US", "North Europe");
      regions.demoteRegion("North Europe", "East US");
      regions.demoteRegion("East US", "West US");
      const ranked = tracker.route(eastUs, [eastUs, westUs, northEurope]);
      assert.deepEqual(names(ranked.targets), ["East US", "West US", "North Europe"]);
    });
  });

  describe("ThompsonRanking", () => {
    const regions = [eastUs, westUs];

    function firstShare(ranking: ThompsonRanking, region: string, draws = 1000): number {
      let first = 0;
      for (let i = 0; i < draws; i++) if (ranking.order(regions, "pointRead")[0]?.name === region) first += 1;
      return first / draws;
    }

    it("with no evidence, keeps the order given: the prior alone never moves a read to an untried region", () => {
      const share = firstShare(new ThompsonRanking(seededRandom(1)), "East US");
      assert.equal(share, 1);
    });

    it("ranks a region whose latest answer was an error after every region that answered, until it answers again", () => {
      const ranking = new ThompsonRanking(seededRandom(3));
      ranking.observe("East US", "pointRead", 150);
      ranking.observe("West US", "pointRead", 2);
      ranking.observeFailure("West US", "pointRead");
      assert.equal(firstShare(ranking, "East US"), 1);
      ranking.observe("West US", "pointRead", 2);
      assert.ok(firstShare(ranking, "West US") > 0.9);
    });

    it("puts the faster region first almost always once both are known", () => {
      const ranking = new ThompsonRanking(seededRandom(2));
      for (let i = 0; i < 30; i++) {
        ranking.observe("East US", "pointRead", 2 + (i % 3));
        ranking.observe("West US", "pointRead", 30 + (i % 5));
      }
      assert.ok(firstShare(ranking, "East US") > 0.99);
      assert.ok(Math.abs(ranking.medianMs("East US", "pointRead") - 3) < 1, `${ranking.medianMs("East US", "pointRead")}`);
    });

    it("learns from censored observations that a region cut short by a faster one is at least that slow", () => {
      const ranking = new ThompsonRanking(seededRandom(3));
      for (let i = 0; i < 50; i++) {
        ranking.observe("East US", "pointRead", 2);
        ranking.observe("West US", "pointRead", 31);
      }
      // A brown-out: every East read is cancelled after 36 ms, when West's hedge answers.
      for (let i = 0; i < 20; i++) ranking.observeCensored("East US", "pointRead", 36);
      const east = ranking.medianMs("East US", "pointRead");
      assert.ok(east >= 35 && east < 60, `East's median rises to the bound, and no further on bounds alone: ${east}`);
      assert.ok(firstShare(ranking, "West US") > 0.6, "West goes first more often than not");
    });

    it("a bound below a region's median says nothing new", () => {
      const ranking = new ThompsonRanking(seededRandom(4));
      for (let i = 0; i < 50; i++) ranking.observe("West US", "pointRead", 30);
      const before = ranking.medianMs("West US", "pointRead");
      for (let i = 0; i < 50; i++) ranking.observeCensored("West US", "pointRead", 1);
      for (let i = 0; i < 50; i++) ranking.observeCensored("West US", "pointRead", 29);
      assert.equal(ranking.medianMs("West US", "pointRead"), before);
    });

    it("lets old evidence fade, so a region that was slow is tried again", async () => {
      const ranking = new ThompsonRanking(seededRandom(5));
      for (let i = 0; i < 50; i++) {
        ranking.observe("East US", "pointRead", 300);
        ranking.observe("West US", "pointRead", 30);
      }
      const whileSlow = firstShare(ranking, "East US");
      await clock.tickAsync(thompsonDefaults.halfLifeMs * 8);
      for (let i = 0; i < 3; i++) ranking.observe("West US", "pointRead", 30);
      const later = firstShare(ranking, "East US");
      assert.ok(whileSlow < 0.01, `${whileSlow}`);
      assert.ok(later > 0.05, `after eight half-lives East is explored again: ${later}`);
      assert.equal(clock.countTimers(), 0);
    });

    it("keeps classes apart and ignores nonsense latencies", () => {
      const ranking = new ThompsonRanking(seededRandom(6));
      for (let i = 0; i < 30; i++) ranking.observe("East US", "query", 300);
      ranking.observe("East US", "pointRead", Number.NaN);
      ranking.observeCensored("East US", "pointRead", -1);
      assert.ok(Math.abs(ranking.medianMs("East US", "pointRead") - thompsonDefaults.priorMedianMs) < 1e-9, "the prior, untouched");
      assert.ok(ranking.medianMs("East US", "query") > 200);
    });
  });
});
