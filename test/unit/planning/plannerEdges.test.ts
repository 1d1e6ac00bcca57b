import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { LatencyWindows } from "../../../src/learning/latencyWindows.js";
import { adaptiveThreshold, resolveAdaptiveThreshold } from "../../../src/planning/adaptiveThreshold.js";
import { LoadBudget, resolveLoadBudget } from "../../../src/budget/loadBudget.js";
import { sameScheme } from "../../../src/planning/targets.js";
import { eastUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";

/** Boundaries of the planning code: the budget's window, the adaptive threshold's choice of region, the scheme rule. */
describe("planning at its edges", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  describe("the load budget's window", () => {
    it("counts a deposit for exactly the window: still there a millisecond before ten seconds, gone at ten", async () => {
      const budget = new LoadBudget(resolveLoadBudget({ maxExtraLoad: 0.5, minHedgesPerSecond: 0 }));
      for (let i = 0; i < 4; i++) budget.deposit();
      assert.equal(budget.balance, 2);
      await clock.tickAsync(9_999);
      assert.equal(budget.balance, 2, "a deposit made 9.999 s ago still counts");
      await clock.tickAsync(1);
      assert.equal(budget.balance, 0, "one made 10 s ago does not");
    });

    it("a null budget is refused with a message that says false is the way to turn it off", () => {
      assert.throws(() => resolveLoadBudget(null as unknown as object), (error: unknown) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, /^budget must be false or an options object; got null/);
        return true;
      });
    });
  });

  describe("the adaptive threshold's region", () => {
    const settings = resolveAdaptiveThreshold("adaptive", 500);

    function windowsWith(latencies: Record<string, number>): LatencyWindows {
      const windows = new LatencyWindows();
      for (const [region, latencyMs] of Object.entries(latencies)) {
        for (let i = 0; i < settings.minSamples; i++) windows.record(region, "pointRead", latencyMs, "baseline");
      }
      return windows;
    }

    it("is the candidate with the lowest baseline, wherever it stands in the order", () => {
      const windows = windowsWith({ "East US": 8, "West US": 40, "North Europe": 60 });
      const estimate = adaptiveThreshold(windows, settings, "pointRead", { regions: ["East US", "West US", "North Europe"] });
      assert.equal(estimate.region, "East US");
      assert.ok(Math.abs(estimate.thresholdMs - 8) <= 8 * 0.02, `${estimate.thresholdMs}`);
      assert.equal(adaptiveThreshold(windows, settings, "pointRead", { regions: ["North Europe", "East US", "West US"] }).region, "East US");
    });

    it("on a tie, is the earlier candidate", () => {
      const windows = windowsWith({ "East US": 20, "West US": 20 });
      assert.equal(adaptiveThreshold(windows, settings, "pointRead", { regions: ["West US", "East US"] }).region, "West US");
      assert.equal(adaptiveThreshold(windows, settings, "pointRead", { regions: ["East US", "West US"] }).region, "East US");
    });
  });

  it("a request URL without a scheme matches no region's scheme", () => {
    assert.equal(sameScheme("dbs/db/colls/c/docs/1", eastUs), false);
    assert.equal(sameScheme("https://acct-eastus.documents.azure.com/dbs/db", eastUs), true);
  });
});
