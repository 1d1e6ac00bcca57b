import assert from "node:assert/strict";
import {
  optionalBoolean,
  optionalFunction,
  optionsObject,
  positiveMilliseconds,
  regionNameList,
  wholeNumber,
} from "../../src/options.js";
import { crossRegionHedgingPolicy } from "../../src/policies/crossRegionHedgingPolicy.js";
import { metadataHedgingPolicy } from "../../src/policies/metadataHedgingPolicy.js";

function throwsNaming(work: () => unknown, type: typeof TypeError | typeof RangeError, option: string, shown: string): void {
  assert.throws(work, (error: unknown) => {
    assert.ok(error instanceof type, `expected a ${type.name}, got ${String(error)}`);
    assert.ok(error.message.startsWith(`${option} `), `${error.message} should start with the option ${option}`);
    assert.ok(error.message.includes(`got ${shown}.`), `${error.message} should show the value as ${shown}`);
    return true;
  });
}

describe("validation helpers", function () {
  describe("positiveMilliseconds", function () {
    for (const value of [1, 0.5, 500, 2 ** 31 - 2]) {
      it(`accepts ${value}`, function () {
        assert.equal(positiveMilliseconds("threshold", value), value);
      });
    }

    const bad: Array<[unknown, string]> = [
      [Number.NaN, "NaN"],
      [Number.POSITIVE_INFINITY, "Infinity"],
      [Number.NEGATIVE_INFINITY, "-Infinity"],
      [-1, "-1"],
      [0, "0"],
      [-0.5, "-0.5"],
      ["5", '"5"'],
      [null, "null"],
      [undefined, "undefined"],
      [true, "true"],
      [{}, "an object"],
      [[5], "an array of 1"],
      // Node.js fires a timer this long after 1 ms.
      [2 ** 31 - 1, "2147483647"],
      [2 ** 31, "2147483648"],
      [1e12, "1000000000000"],
    ];
    for (const [value, shown] of bad) {
      it(`rejects ${shown} with a RangeError naming the option and the value`, function () {
        throwsNaming(() => positiveMilliseconds("thresholdStep", value), RangeError, "thresholdStep", shown);
      });
    }

    it("shows a long string value truncated", function () {
      assert.throws(() => positiveMilliseconds("threshold", "9".repeat(200)), (error: unknown) => {
        assert.ok(error instanceof RangeError);
        assert.ok(error.message.includes(`"${"9".repeat(80)}…"`), error.message);
        assert.ok(!error.message.includes("9".repeat(81)));
        return true;
      });
    });
  });

  describe("wholeNumber", function () {
    it("accepts whole numbers at or above the minimum", function () {
      assert.equal(wholeNumber("maxConcurrentHedges", 0, 0), 0);
      assert.equal(wholeNumber("maxConcurrentHedges", 8, 1), 8);
      assert.equal(wholeNumber("maxConcurrentHedges", 1, 1), 1);
    });

    const bad: Array<[unknown, string]> = [
      [Number.NaN, "NaN"],
      [Number.POSITIVE_INFINITY, "Infinity"],
      [-1, "-1"],
      [0, "0"],
      [1.5, "1.5"],
      ["5", '"5"'],
      [null, "null"],
    ];
    for (const [value, shown] of bad) {
      it(`rejects ${shown} (minimum 1) with a RangeError naming the option, the minimum and the value`, function () {
        throwsNaming(() => wholeNumber("maxConcurrentHedges", value, 1), RangeError, "maxConcurrentHedges", shown);
        assert.throws(() => wholeNumber("maxConcurrentHedges", value, 1), /at least 1/);
      });
    }
  });

  describe("optionalBoolean", function () {
    it("passes booleans and undefined through", function () {
      assert.equal(optionalBoolean("enabled", true), true);
      assert.equal(optionalBoolean("enabled", false), false);
      assert.equal(optionalBoolean("enabled", undefined), undefined);
    });

    const bad: Array<[unknown, string]> = [
      ["true", '"true"'],
      [0, "0"],
      [Number.NaN, "NaN"],
      [null, "null"],
    ];
    for (const [value, shown] of bad) {
      it(`rejects ${shown} with a TypeError naming the option and the value`, function () {
        throwsNaming(() => optionalBoolean("enableMultiWriteRegionHedge", value), TypeError, "enableMultiWriteRegionHedge", shown);
      });
    }
  });

  describe("optionalFunction", function () {
    it("passes functions and undefined through", function () {
      const callback = (): void => undefined;
      assert.equal(optionalFunction("onDiagnostics", callback), callback);
      assert.equal(optionalFunction("onDiagnostics", undefined), undefined);
    });

    const bad: Array<[unknown, string]> = [
      ["callback", '"callback"'],
      [null, "null"],
      [5, "5"],
      [{}, "an object"],
    ];
    for (const [value, shown] of bad) {
      it(`rejects ${shown} with a TypeError naming the option and the value`, function () {
        throwsNaming(() => optionalFunction("onDiagnostics", value), TypeError, "onDiagnostics", shown);
      });
    }
  });

  describe("optionsObject", function () {
    it("turns undefined into an empty bag and passes objects through", function () {
      assert.deepEqual(optionsObject("options", undefined), {});
      const bag = { threshold: 5 };
      assert.equal(optionsObject("options", bag), bag);
    });

    it("rejects a key outside the known ones, naming it and listing the options", function () {
      const misspelt = { threshold: 5, tresholdStep: 1 } as { threshold: number; thresholdStep?: number };
      assert.throws(
        () => optionsObject("crossRegion", misspelt, ["threshold", "thresholdStep"]),
        (error: unknown) =>
          error instanceof TypeError && error.message === 'crossRegion has no option "tresholdStep"; the options are threshold, thresholdStep.',
      );
      const spelt: { threshold: number; thresholdStep?: number } = { threshold: 5 };
      assert.equal(optionsObject("crossRegion", spelt, ["threshold", "thresholdStep"]).threshold, 5);
    });

    const bad: Array<[unknown, string]> = [
      [null, "null"],
      ["x", '"x"'],
      [5, "5"],
      [[], "an array of 0"],
      [() => undefined, "a function"],
    ];
    for (const [value, shown] of bad) {
      it(`rejects ${shown} with a TypeError naming the option and the value`, function () {
        throwsNaming(() => optionsObject("crossRegionHedgingPolicy options", value as object), TypeError, "crossRegionHedgingPolicy options", shown);
      });
    }
  });

  describe("regionNameList", function () {
    it("copies and freezes a list of region names", function () {
      const list = regionNameList("excludedRegions", ["East US", "West US"]);
      assert.deepEqual(list, ["East US", "West US"]);
      assert.ok(Object.isFrozen(list));
    });

    it("refuses a sparse list at its first hole, naming the entry (map would have skipped it and copied the hole)", function () {
      const sparse: string[] = [];
      sparse[1] = "East US";
      throwsNaming(() => regionNameList("excludedRegions", sparse), TypeError, "excludedRegions[0]", "undefined");
    });
  });

  describe("a null option", function () {
    // JSON configuration writes null for "nothing"; the options with no default already refused it, those with one took the default.
    const cases: Array<[string, string, () => unknown]> = [
      ["crossRegionHedgingPolicy", "requestTimeout", () => crossRegionHedgingPolicy({ requestTimeout: null as never })],
      ["metadataHedgingPolicy", "requestTimeout", () => metadataHedgingPolicy({ requestTimeout: null as never })],
      ["metadataHedgingPolicy", "maxConcurrentHedges", () => metadataHedgingPolicy({ maxConcurrentHedges: null as never })],
      ["crossRegionHedgingPolicy", "budget.maxExtraLoad", () => crossRegionHedgingPolicy({ budget: { maxExtraLoad: null as never } })],
      ["crossRegionHedgingPolicy", "budget.minHedgesPerSecond", () => crossRegionHedgingPolicy({ budget: { minHedgesPerSecond: null as never } })],
      ["crossRegionHedgingPolicy", "budget.maxHedgesInFlight", () => crossRegionHedgingPolicy({ budget: { maxHedgesInFlight: null as never } })],
      ["crossRegionHedgingPolicy", "drainLosers.maxDrainMs", () => crossRegionHedgingPolicy({ drainLosers: { maxDrainMs: null as never } })],
      ["crossRegionHedgingPolicy", "drainLosers.maxDrainBytes", () => crossRegionHedgingPolicy({ drainLosers: { maxDrainBytes: null as never } })],
      ["crossRegionHedgingPolicy", "drainLosers.maxConcurrentDrains", () => crossRegionHedgingPolicy({ drainLosers: { maxConcurrentDrains: null as never } })],
      ["crossRegionHedgingPolicy", "threshold.maxExtraLoad", () => crossRegionHedgingPolicy({ threshold: { mode: "adaptive", maxExtraLoad: null as never } })],
      ["crossRegionHedgingPolicy", "threshold.minSamples", () => crossRegionHedgingPolicy({ threshold: { mode: "adaptive", minSamples: null as never } })],
    ];
    for (const [factory, option, make] of cases) {
      it(`${factory} refuses ${option}: null, naming the option, rather than taking the default`, function () {
        assert.throws(make, (error: unknown) => {
          assert.ok(error instanceof RangeError || error instanceof TypeError, `expected a RangeError or TypeError, got ${String(error)}`);
          assert.ok(error.message.startsWith(`${option} `), `${error.message} should start with the option ${option}`);
          assert.ok(error.message.includes("got null"), `${error.message} should show the value`);
          return true;
        });
      });
    }
  });
});

