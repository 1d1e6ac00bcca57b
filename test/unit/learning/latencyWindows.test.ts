import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { LatencySurvival, LatencyWindows, latencyClassOf, latencyWindowDefaults } from "../../../src/learning/latencyWindows.js";
import type { OperationKind } from "../../../src/cosmos/operationKind.js";
import { useFakeClock } from "../../support/leakCheck.js";

/** Within the sketches' relative accuracy of `expected`. */
function near(actual: number | undefined, expected: number, message?: string): void {
  assert.ok(actual !== undefined, message ?? "a value");
  const tolerance = expected * latencyWindowDefaults.relativeAccuracy * 1.01;
  assert.ok(Math.abs(actual - expected) <= tolerance, `${message ?? "value"}: ${actual} is not within 2 % of ${expected}`);
}

describe("LatencyWindows", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  function recordMany(windows: LatencyWindows, region: string, values: readonly number[], observation: "baseline" | "tail" = "baseline"): void {
    for (const value of values) windows.record(region, "pointRead", value, observation);
  }

  const oneToHundred = Array.from({ length: 100 }, (_, i) => i + 1);

  it("classifies the document reads into three classes, and nothing else", () => {
    const expected: ReadonlyArray<readonly [OperationKind, string | undefined]> = [
      ["pointRead", "pointRead"],
      ["query", "query"],
      ["queryPlan", "otherRead"],
      ["readFeed", "otherRead"],
      ["changeFeed", "otherRead"],
      ["create", undefined],
      ["batch", undefined],
      ["collectionRead", undefined],
      ["accountRead", undefined],
    ];
    for (const [operation, latencyClass] of expected) assert.equal(latencyClassOf(operation), latencyClass, operation);
  });

  it("answers percentiles of the recorded latencies within the sketch's relative accuracy", () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", oneToHundred);
    const summary = windows.summary("East US", "pointRead");
    assert.equal(summary?.samples, 100);
    near(summary?.p50, 50, "p50");
    near(summary?.p95, 95, "p95");
    near(summary?.p99, 99, "p99");
    near(windows.baseline("East US", "pointRead", 0.95, 1), 95, "baseline p95");
  });

  it("keeps regions and classes apart", () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", [2, 2, 2]);
    windows.record("West US", "pointRead", 30, "baseline");
    windows.record("East US", "query", 40, "baseline");
    near(windows.summary("East US", "pointRead")?.p50, 2);
    near(windows.summary("West US", "pointRead")?.p50, 30);
    near(windows.summary("East US", "query")?.p50, 40);
    assert.equal(windows.summary("East US", "otherRead"), undefined);
    assert.equal(windows.summary("East US")?.samples, 4, "without a class, every class together");
    assert.deepEqual(windows.regions().sort(), ["East US", "West US"]);
  });

  it("gives no baseline until the window holds minSamples baseline latencies", () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", [1, 2, 3, 4]);
    assert.equal(windows.baseline("East US", "pointRead", 0.5, 5), undefined);
    windows.record("East US", "pointRead", 5, "baseline");
    near(windows.baseline("East US", "pointRead", 0.5, 5), 3);
    assert.equal(windows.baseline("Nowhere", "pointRead", 0.5, 1), undefined);
  });

  it("keeps tail latencies (lower bounds of cut-short arms) out of the baseline but in the summary", () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", Array.from({ length: 90 }, () => 2));
    recordMany(windows, "East US", Array.from({ length: 10 }, () => 36), "tail");
    near(windows.baseline("East US", "pointRead", 0.95, 20), 2, "the baseline sees only answers");
    const summary = windows.summary("East US", "pointRead");
    assert.equal(summary?.samples, 100);
    near(summary?.p95, 36, "the summary shows the region's slow tail");
  });

  it("ignores negative and non-finite latencies, and records a zero", () => {
    const windows = new LatencyWindows();
    windows.record("East US", "pointRead", -1, "baseline");
    windows.record("East US", "pointRead", Number.NaN, "baseline");
    windows.record("East US", "pointRead", Number.POSITIVE_INFINITY, "baseline");
    assert.equal(windows.summary("East US"), undefined);
    windows.record("East US", "pointRead", 0, "baseline");
    assert.deepEqual(windows.summary("East US"), { samples: 1, p50: 0, p95: 0, p99: 0 });
  });

  it("slides: latencies leave the window after six five-second buckets, with no timer", async () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", Array.from({ length: 10 }, () => 100));
    await clock.tickAsync(10_000);
    recordMany(windows, "East US", Array.from({ length: 10 }, () => 10));
    assert.equal(clock.countTimers(), 0, "rotation is lazy");
    await clock.tickAsync(19_999);
    assert.equal(windows.summary("East US")?.samples, 20, "at 29.999 s the first bucket is still in the window");
    await clock.tickAsync(1);
    assert.equal(windows.summary("East US")?.samples, 10, "at 30 s the first bucket has left");
    near(windows.summary("East US")?.p99, 10);
    await clock.tickAsync(10_000);
    assert.equal(windows.summary("East US"), undefined, "at 40 s the window is empty");
    assert.deepEqual(windows.regions(), [], "and the region is forgotten");
  });

  it("reuses a merged view for up to a second once the window is well filled", async () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", Array.from({ length: 100 }, () => 2));
    assert.equal(windows.summary("East US", "pointRead")?.samples, 100);
    recordMany(windows, "East US", Array.from({ length: 10 }, () => 50));
    assert.equal(windows.summary("East US", "pointRead")?.samples, 100, "ten more on a hundred do not refresh the view");
    windows.record("East US", "pointRead", 50, "baseline");
    assert.equal(windows.summary("East US", "pointRead")?.samples, 111, "more than a tenth more does");
    windows.record("East US", "pointRead", 50, "baseline");
    assert.equal(windows.summary("East US", "pointRead")?.samples, 111);
    await clock.tickAsync(latencyWindowDefaults.refreshMs);
    assert.equal(windows.summary("East US", "pointRead")?.samples, 112, "a second later the view is merged again");
  });

  it("reuses a merged view for a second from when it was merged, however late on the clock", async () => {
    await clock.tickAsync(2_000);
    const windows = new LatencyWindows();
    recordMany(windows, "East US", Array.from({ length: 100 }, () => 2));
    assert.equal(windows.summary("East US", "pointRead")?.samples, 100);
    windows.record("East US", "pointRead", 50, "baseline");
    assert.equal(windows.summary("East US", "pointRead")?.samples, 100, "one more on a hundred does not refresh the view");
    await clock.tickAsync(latencyWindowDefaults.refreshMs - 1);
    assert.equal(windows.summary("East US", "pointRead")?.samples, 100);
    await clock.tickAsync(1);
    assert.equal(windows.summary("East US", "pointRead")?.samples, 101);
  });

  it("refreshes a young window's view on every new latency, so it is usable after its first few", () => {
    const windows = new LatencyWindows();
    for (let count = 1; count <= 99; count++) {
      windows.record("East US", "pointRead", 2, "baseline");
      assert.equal(windows.summary("East US", "pointRead")?.samples, count);
    }
    assert.equal(windows.baseline("East US", "pointRead", 0.95, 99), 2, "no need to wait for the refresh");
  });

  it("reads the survival from the last 5 to 10 seconds once they hold a hundred latencies, so a slow start is forgotten", async () => {
    const windows = new LatencyWindows();
    // A cold client's first second: a hundred reads, a fifth of them slow.
    recordMany(windows, "East US", Array.from({ length: 100 }, (_, i) => (i % 5 === 0 ? 40 : 2)));
    assert.ok(Math.abs((windows.survival("East US", "pointRead")?.above(20) ?? 0) - 0.2) < 1e-9);
    await clock.tickAsync(10_000);
    recordMany(windows, "East US", Array.from({ length: 100 }, () => 2));
    await clock.tickAsync(latencyWindowDefaults.refreshMs);
    assert.equal(windows.survival("East US", "pointRead")?.above(20), 0, "10 s later the survival holds only the newest buckets");
    assert.equal(windows.summary("East US", "pointRead")?.samples, 200, "while the window still holds both");
    near(windows.baseline("East US", "pointRead", 0.95, 20), 40, "and so does the baseline");
  });

  it("reads the survival from both of the newest buckets, censored latencies counted towards the hundred", async () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", Array.from({ length: 50 }, () => 400));
    await clock.tickAsync(10_000);
    // Bucket 2 and bucket 3 are the newest two: 30 + 30 answers and 40 censored latencies make the hundred.
    recordMany(windows, "East US", Array.from({ length: 30 }, () => 2));
    for (let i = 0; i < 40; i++) windows.record("East US", "pointRead", 5, "censored");
    await clock.tickAsync(5_000);
    recordMany(windows, "East US", Array.from({ length: 30 }, () => 2));
    const survival = windows.survival("East US", "pointRead");
    assert.equal(survival?.samples, 100, "the 400 ms answers of the first bucket are left out");
    assert.equal(survival?.censored, 40);
    assert.equal(survival?.above(100), 0.4);
  });

  it("steps the survival at each bin holding latencies, a zero included, and counts tail answers as answers", () => {
    const windows = new LatencyWindows();
    windows.record("East US", "pointRead", 0, "baseline");
    windows.record("East US", "pointRead", 10, "baseline");
    windows.record("East US", "pointRead", 100, "tail");
    const survival = windows.survival("East US", "pointRead");
    assert.equal(survival?.samples, 3);
    assert.equal(survival?.censored, 0, "a tail latency is an answer");
    assert.equal(survival?.steps.length, 3, "no step for the empty bins between 10 and 100 ms");
    assert.equal(survival?.steps[0], 0);
    assert.equal(survival?.largest, 100);
    near(survival?.steps[1], 10);
  });

  it("steps the survival once for latencies within the sketch's 2 % relative accuracy of each other, and never at 0 without a zero", () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", [100, 101, 102, 103]);
    const survival = windows.survival("East US", "pointRead");
    assert.deepEqual(survival?.steps, [103], "one bin, its edge kept within the latencies seen");
    assert.equal(survival?.above(50), 1);
  });

  it("has no survival once every latency has left the window", async () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", [10]);
    assert.notEqual(windows.survival("East US", "pointRead"), undefined);
    await clock.tickAsync(30_000);
    assert.equal(windows.survival("East US", "pointRead"), undefined);
  });

  describe("LatencySurvival", () => {
    it("merges answers of one latency into one step, and counts censored latencies as outlasting every t", () => {
      const survival = new LatencySurvival(
        [
          [10, 2],
          [10, 3],
          [20, 5],
        ],
        2,
      );
      assert.deepEqual(survival.steps, [10, 20]);
      assert.equal(survival.samples, 12);
      assert.equal(survival.above(5), 1);
      assert.equal(survival.above(10), 7 / 12);
      assert.equal(survival.above(20), 2 / 12);
    });

    it("is 0 everywhere without latencies", () => {
      const survival = new LatencySurvival([], 0);
      assert.equal(survival.above(10), 0);
      assert.equal(survival.largest, undefined);
    });
  });

  it("reads a quiet region's survival over the whole window", async () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", Array.from({ length: 10 }, () => 40));
    await clock.tickAsync(12_000);
    recordMany(windows, "East US", Array.from({ length: 10 }, () => 2));
    assert.equal(windows.survival("East US", "pointRead")?.above(20), 0.5, "twenty latencies in 30 s: all of them count");
  });

  it("counts a latency still running past its bound as censored in the survival until it stops, then only the answer it ended with", () => {
    const windows = new LatencyWindows();
    recordMany(windows, "East US", Array.from({ length: 18 }, () => 2));
    assert.equal(windows.survival("East US", "pointRead")?.above(20), 0);
    windows.startRunning("East US", "pointRead");
    windows.startRunning("East US", "pointRead");
    const running = windows.survival("East US", "pointRead");
    assert.equal(running?.above(500), 2 / 20, "two stragglers still running outlast every delay");
    assert.equal(running?.censored, 2);
    assert.equal(windows.summary("East US", "pointRead")?.samples, 18, "a running latency has no value for the percentiles");
    windows.stopRunning("East US", "pointRead");
    windows.record("East US", "pointRead", 1000, "tail");
    const ended = windows.survival("East US", "pointRead");
    assert.equal(ended?.samples, 20, "the one that ended is counted once, at its answer");
    assert.equal(ended?.above(500), 2 / 20);
    assert.equal(ended?.above(1500), 1 / 20, "the other still runs");
    windows.stopRunning("East US", "pointRead");
    windows.stopRunning("East US", "pointRead");
    assert.equal(windows.survival("East US", "pointRead")?.censored, 0, "a stop without a start counts nothing");
    windows.stopRunning("West US", "pointRead");
    assert.equal(windows.survival("West US", "pointRead"), undefined);
    // A busy region's survival, read from its newest buckets, counts them too.
    recordMany(windows, "North Europe", Array.from({ length: 100 }, () => 2));
    windows.startRunning("North Europe", "pointRead");
    assert.equal(windows.survival("North Europe", "pointRead")?.above(500), 1 / 101);
  });

  it("validates its options, naming them", () => {
    assert.throws(() => new LatencyWindows({ survivalBuckets: 20 }), /survivalBuckets must be at most buckets \(6\); got 20/);
    assert.throws(() => new LatencyWindows({ bucketMs: 0 }), /bucketMs .*got 0/);
    assert.throws(() => new LatencyWindows({ buckets: 1.5 }), /buckets .*got 1\.5/);
    assert.throws(() => new LatencyWindows({ refreshMs: -1 }), /refreshMs .*got -1/);
    assert.throws(() => new LatencyWindows({ survivalBuckets: 1.5 }), /survivalBuckets .*got 1\.5/);
    assert.equal(new LatencyWindows({ buckets: 2, survivalBuckets: 2 }).survival("East US", "pointRead"), undefined, "as many survival buckets as buckets are allowed");
  });
});
