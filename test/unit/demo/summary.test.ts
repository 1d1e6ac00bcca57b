import { strict as assert } from "node:assert";
import { describeOutcome, excessOver, latenciesBetween, percentileEstimate, ranking } from "../../../demo/summary.js";
import type { ModeOutcome } from "../../../demo/summary.js";

/** 1, 2, ..., n milliseconds, shuffled, so that the estimate must sort them. */
function latencies(n: number): number[] {
  return Array.from({ length: n }, (_, i) => ((i * 7919) % n) + 1);
}

describe("the demo's summary", () => {
  it("estimates a percentile with the order statistics that bound its 95 % interval", () => {
    // n = 600, q = 0.99: rank 594, spread 1.96 × √5.94 = 4.78, so ranks 589 to 599.
    assert.deepEqual(percentileEstimate(latencies(600), 0.99), { value: 594, low: 589, high: 599, count: 600 });
    // The median of 600: rank 300, spread 1.96 × √150 = 24.0, so ranks 275 to 325.
    assert.deepEqual(percentileEstimate(latencies(600), 0.5), { value: 300, low: 275, high: 325, count: 600 });
  });

  it("keeps the interval's ranks inside a small sample", () => {
    assert.deepEqual(percentileEstimate([5, 1, 3], 0.99), { value: 5, low: 3, high: 5, count: 3 });
    assert.ok(Number.isNaN(percentileEstimate([], 0.99).value));
  });

  const read = (second: number, latencyMs: number) => ({ second, latencyMs, failed: false, region: "East US", charge: 1, extraRequests: 0 });

  it("takes the reads scheduled within a phase", () => {
    assert.deepEqual(latenciesBetween([read(3.9, 1), read(4, 2), read(23.99, 3), read(24, 4)], 4, 24), [2, 3]);
  });

  it("pairs each read with the yardstick's read scheduled with it, whatever order they ended in, so a stall both met cancels out", () => {
    // Both modes met a 900 ms stall at 5 s; the mode's straggler at 6 s took 130 ms where the yardstick took 30.
    const mode = [read(6.01, 130), read(5.01, 902), read(4.01, 3), read(24.01, 5)];
    const yardstick = [read(4, 2), read(5, 900), read(6, 30), read(24, 4)];
    assert.deepEqual(excessOver(mode, yardstick, 4, 24), [1, 2, 100]);
  });

  it("ranks best first, and ties neighbours whose intervals overlap", () => {
    const estimate = (value: number, low: number, high: number) => ({ value, low, high, count: 600 });
    assert.equal(
      ranking([
        { name: "off", estimate: estimate(1005, 1003, 1010) },
        { name: "adaptive + thompson", estimate: estimate(52, 48, 60) },
        { name: "fixed 100 ms", estimate: estimate(136, 133, 140) },
        { name: "adaptive", estimate: estimate(50, 47, 55) },
        { name: "oracle", estimate: estimate(34, 33, 36) },
      ]),
      "oracle < adaptive ≈ adaptive + thompson < fixed 100 ms < off",
    );
  });

  it("says in one sentence what a mode did, read by read against the yardstick, the brown-out against the oracle", () => {
    const estimate = (value: number) => ({ value, low: value - 4, high: value + 4, count: 600 });
    const outcome = (name: string, p99: number, excess: number, p50: number, requests: number, errors = 0): ModeOutcome => ({
      name,
      stragglersP99: estimate(p99),
      stragglersExcessP99: estimate(excess),
      brownOutP50: estimate(p50),
      requestsPerRead: requests,
      requestUnitsPerRead: requests - 0.02,
      errors,
    });
    const oracle = outcome("oracle", 34, 0, 33, 1);
    assert.equal(
      describeOutcome(outcome("fixed 100 ms", 136, 104, 33, 1.1, 2), oracle, oracle),
      "fixed 100 ms: with stragglers, p99 136 ms; read by read, 99 % of them at most 104 ms slower than the oracle read started with them " +
        "(95 % interval 100-108 ms); in the brown-out, half the reads within 33.0 ms (1.0 × the oracle's 33.0 ms); " +
        "each read cost 1.10 requests and 1.08 RU, drained losers counted; 2 reads failed.",
    );
    assert.equal(
      describeOutcome(oracle, oracle, oracle),
      "oracle: with stragglers, p99 34.0 ms; in the brown-out, half the reads within 33.0 ms; each read cost 1.00 requests and 0.98 RU, drained losers counted.",
    );
  });
});
