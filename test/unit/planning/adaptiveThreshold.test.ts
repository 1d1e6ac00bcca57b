import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { LatencyWindows } from "../../../src/learning/latencyWindows.js";
import type { AdaptiveThresholdOptions, AdaptiveThresholdSettings } from "../../../src/planning/adaptiveThreshold.js";
import {
  adaptiveThreshold,
  adaptiveThresholdDefaults,
  isAdaptiveThreshold,
  resolveAdaptiveThreshold,
} from "../../../src/planning/adaptiveThreshold.js";
import { useFakeClock } from "../../support/leakCheck.js";

describe("adaptive threshold", () => {
  describe("resolveAdaptiveThreshold", () => {
    it("rejects a misspelt knob, naming it", () => {
      assert.throws(
        () => resolveAdaptiveThreshold({ mode: "adaptive", flor: 2 } as AdaptiveThresholdOptions, 500),
        (error: unknown) => error instanceof TypeError && /threshold has no option "flor"/.test(error.message),
      );
    });

    it('"adaptive" takes every default: p95, 5 ms floor, the fixed default as ceiling, 20 samples', () => {
      assert.deepEqual(resolveAdaptiveThreshold("adaptive", 500), {
        maxExtraLoad: 0.05,
        quantile: 0.95,
        floor: 5,
        ceiling: 500,
        minSamples: 20,
      });
    });

    it("takes every knob of the options form", () => {
      const settings = resolveAdaptiveThreshold({ mode: "adaptive", maxExtraLoad: 0.1, floor: 2, ceiling: 200, minSamples: 50 }, 500);
      assert.deepEqual(settings, { maxExtraLoad: 0.1, quantile: 0.9, floor: 2, ceiling: 200, minSamples: 50 });
    });

    it("keeps the default floor below a small ceiling", () => {
      assert.equal(resolveAdaptiveThreshold({ mode: "adaptive", ceiling: 3 }, 500).floor, 3);
    });

    const bad: ReadonlyArray<readonly [Partial<AdaptiveThresholdOptions>, string, string]> = [
      [{ maxExtraLoad: 0 }, "threshold.maxExtraLoad", "got 0"],
      [{ maxExtraLoad: 1 }, "threshold.maxExtraLoad", "got 1"],
      [{ maxExtraLoad: -0.1 }, "threshold.maxExtraLoad", "got -0.1"],
      [{ maxExtraLoad: Number.NaN }, "threshold.maxExtraLoad", "got NaN"],
      [{ maxExtraLoad: "0.05" as unknown as number }, "threshold.maxExtraLoad", 'got "0.05"'],
      [{ floor: 0 }, "threshold.floor", "got 0"],
      [{ floor: Number.POSITIVE_INFINITY }, "threshold.floor", "got Infinity"],
      [{ ceiling: -5 }, "threshold.ceiling", "got -5"],
      [{ minSamples: 0 }, "threshold.minSamples", "got 0"],
      [{ minSamples: 2.5 }, "threshold.minSamples", "got 2.5"],
    ];
    for (const [options, option, shown] of bad) {
      it(`${JSON.stringify(options)} is a RangeError naming ${option} and the value`, () => {
        assert.throws(
          () => resolveAdaptiveThreshold({ mode: "adaptive", ...options }, 500),
          (error: unknown) => {
            assert.ok(error instanceof RangeError, String(error));
            assert.ok(error.message.startsWith(`${option} `), error.message);
            assert.ok(error.message.includes(shown), error.message);
            return true;
          },
        );
      });
    }

    it("a floor above the ceiling is a RangeError naming both", () => {
      assert.throws(() => resolveAdaptiveThreshold({ mode: "adaptive", floor: 50, ceiling: 40 }, 500), /threshold\.floor \(50\).*threshold\.ceiling \(40\)/);
    });

    it("isAdaptiveThreshold recognizes both forms and nothing else", () => {
      assert.equal(isAdaptiveThreshold("adaptive"), true);
      assert.equal(isAdaptiveThreshold({ mode: "adaptive" }), true);
      for (const value of [100, "Adaptive", { mode: "fixed" }, {}, null, undefined]) assert.equal(isAdaptiveThreshold(value), false, String(value));
    });
  });

  describe("adaptiveThreshold", () => {
    let clock: SinonFakeTimers;
    let windows: LatencyWindows;
    const settings: AdaptiveThresholdSettings = resolveAdaptiveThreshold("adaptive", 500);

    beforeEach(() => {
      clock = useFakeClock();
      windows = new LatencyWindows();
    });

    afterEach(() => {
      clock.restore();
    });

    /** `count` baseline latencies spread evenly over `[from, to]`. */
    function fill(region: string, count: number, from: number, to: number): void {
      for (let i = 0; i < count; i++) windows.record(region, "pointRead", from + ((to - from) * i) / Math.max(1, count - 1), "baseline");
    }

    it("uses the ceiling, as adaptiveWarmup, until a window holds minSamples latencies", () => {
      fill("East US", adaptiveThresholdDefaults.minSamples - 1, 10, 20);
      assert.deepEqual(adaptiveThreshold(windows, settings, "pointRead", { regions: ["East US", "West US"] }), {
        thresholdMs: 500,
        source: "adaptiveWarmup",
      });
      windows.record("East US", "pointRead", 20, "baseline");
      const estimate = adaptiveThreshold(windows, settings, "pointRead", { regions: ["East US", "West US"] });
      assert.equal(estimate.source, "adaptive");
      assert.equal(estimate.region, "East US");
    });

    it("is the 95th percentile of the healthy baseline, between the floor and the ceiling", () => {
      fill("East US", 101, 10, 110);
      const estimate = adaptiveThreshold(windows, settings, "pointRead", { regions: ["East US"] });
      assert.ok(Math.abs(estimate.thresholdMs - 105) <= 105 * 0.02, `${estimate.thresholdMs}`);
      assert.equal(estimate.thresholdMs, Math.round(estimate.thresholdMs * 10) / 10, "rounded to a tenth of a millisecond");
    });

    it("follows maxExtraLoad: 0.5 hedges after the median", () => {
      fill("East US", 101, 10, 110);
      const median = resolveAdaptiveThreshold({ mode: "adaptive", maxExtraLoad: 0.5 }, 500);
      const estimate = adaptiveThreshold(windows, median, "pointRead", { regions: ["East US"] });
      assert.ok(Math.abs(estimate.thresholdMs - 60) <= 60 * 0.02, `${estimate.thresholdMs}`);
    });

    it("is clamped to the floor on a fast region and to the ceiling on a slow one", () => {
      fill("East US", 50, 1, 3);
      assert.equal(adaptiveThreshold(windows, settings, "pointRead", { regions: ["East US"] }).thresholdMs, 5);
      fill("West US", 50, 900, 1000);
      assert.equal(adaptiveThreshold(windows, settings, "pointRead", { regions: ["West US"] }).thresholdMs, 500);
    });

    it("takes the best region's baseline, so a degraded primary cannot raise its own threshold", () => {
      // The primary's answers crept up to 100 ms; the next region answers in 30.
      fill("East US", 50, 80, 100);
      fill("West US", 50, 28, 32);
      const estimate = adaptiveThreshold(windows, settings, "pointRead", { regions: ["East US", "West US"] });
      assert.equal(estimate.region, "West US");
      assert.ok(estimate.thresholdMs < 33, `${estimate.thresholdMs}`);
    });

    it("ignores regions of the class that are not in the race, and other classes", () => {
      fill("North Europe", 50, 1, 2);
      for (let i = 0; i < 50; i++) windows.record("West US", "query", 1, "baseline");
      fill("West US", 50, 40, 40);
      assert.equal(adaptiveThreshold(windows, settings, "pointRead", { regions: ["East US", "West US"] }).region, "West US");
    });

    it("uses only a ranked primary's own baseline, and the ceiling until it has one", () => {
      fill("East US", 50, 1, 3);
      fill("West US", 50, 30, 34);
      const own = adaptiveThreshold(windows, settings, "pointRead", { regions: ["West US", "East US"], rankedPrimary: "West US" });
      assert.equal(own.region, "West US");
      assert.ok(own.thresholdMs > 30, `${own.thresholdMs}`);
      const young = adaptiveThreshold(windows, settings, "pointRead", { regions: ["North Europe", "East US"], rankedPrimary: "North Europe" });
      assert.deepEqual(young, { thresholdMs: 500, source: "adaptiveWarmup" }, "not East's few milliseconds");
    });

    it("gives requests outside the learned classes the ceiling", () => {
      fill("East US", 50, 1, 3);
      assert.deepEqual(adaptiveThreshold(windows, settings, undefined, { regions: ["East US"] }), { thresholdMs: 500, source: "adaptiveWarmup" });
    });

    it("never learns from the tail: 10 % stragglers cut short at 36 ms leave the threshold at the floor", () => {
      for (let i = 0; i < 900; i++) windows.record("East US", "pointRead", 2, "baseline");
      for (let i = 0; i < 100; i++) windows.record("East US", "pointRead", 36, "tail");
      assert.equal(adaptiveThreshold(windows, settings, "pointRead", { regions: ["East US", "West US"] }).thresholdMs, 5);
    });
  });
});

describe("planning at its edges", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
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
});
