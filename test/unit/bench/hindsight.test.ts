import assert from "node:assert/strict";
import { hindsightVerdicts, ratioInterval } from "../../../bench/support/hindsight.js";
import { seededRandom } from "../../../src/testing/seededRandom.js";

/** `count` latencies: `tail` of them 1000 ms, the rest spread over 5-10 ms. */
function sample(count: number, tail: number, seed: number): number[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => (i < tail ? 1000 : 5 + 5 * random()));
}

describe("ratioInterval", () => {
  it("holds 1.0 for two samples of one distribution, and the same interval for the same seed", () => {
    const a = sample(1000, 0, 1);
    const b = sample(1000, 0, 2);
    const interval = ratioInterval(a, b);
    assert.ok(interval !== undefined);
    assert.ok(interval[0] < 1 && interval[1] > 1, `interval ${interval.join("-")}`);
    assert.deepEqual(ratioInterval(a, b), interval);
  });

  it("lies wholly above 1.0 when one sample's slowest percent is a hundred times slower", () => {
    const interval = ratioInterval(sample(1000, 30, 1), sample(1000, 0, 2));
    assert.ok(interval !== undefined && interval[0] > 10, `interval ${interval?.join("-")}`);
  });

  it("gives none for samples too small to have a p99 of their own", () => {
    assert.equal(ratioInterval(sample(99, 0, 1), sample(1000, 0, 2)), undefined);
  });

  it("is given with a verdict only when both points carry their samples", () => {
    const learner = { mode: "adaptive", p50: 7, p99: 10, extra: 0.05, samples: sample(1000, 0, 1) };
    const withSamples = { mode: "fixed 10 ms", p50: 7, p99: 10, extra: 0.05, samples: sample(1000, 0, 2) };
    const without = { mode: "fixed 20 ms", p50: 7, p99: 9, extra: 0.05 };
    assert.ok(hindsightVerdicts([withSamples], [learner])[0]?.interval !== undefined);
    assert.equal(hindsightVerdicts([without], [learner])[0]?.interval, undefined);
  });
});
