import assert from "node:assert/strict";
import { crossValidatedBest, hindsightBest, hindsightVerdicts, nearestRankP99, ratioInterval, seedsInterval, tQuantile975, verdictOf } from "../../../bench/support/hindsight.js";
import type { YardstickPoint } from "../../../bench/support/hindsight.js";
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

describe("verdictOf", () => {
  it("calls a tie what a ratio's interval cannot tell from 1.0, and below or above only an interval wholly on one side", () => {
    assert.equal(verdictOf(ratioInterval(sample(1000, 0, 1), sample(1000, 0, 2))), "tie", "two samples of one distribution");
    assert.equal(verdictOf(ratioInterval(sample(1000, 30, 1), sample(1000, 0, 2))), "above");
    assert.equal(verdictOf(ratioInterval(sample(1000, 0, 2), sample(1000, 30, 1))), "below");
    assert.equal(verdictOf([0.97, 1]), "tie", "an interval reaching 1.0 holds it");
    assert.equal(verdictOf([1, 1.02]), "tie");
    assert.equal(verdictOf(undefined), "-");
  });
});

describe("seedsInterval", () => {
  const range = (over: ReturnType<typeof seedsInterval>): [number, number] | undefined => (over === undefined ? undefined : [over.low, over.high]);

  it("is the geometric mean of the seeds with Student's t interval of their logarithms, each seed the mean of its passes", () => {
    const over = seedsInterval([[0.9], [0.95, 1.05], [1.1]])!;
    const logs = [Math.log(0.9), (Math.log(0.95) + Math.log(1.05)) / 2, Math.log(1.1)];
    const centre = (logs[0]! + logs[1]! + logs[2]!) / 3;
    const sd = Math.sqrt(logs.reduce((sum, value) => sum + (value - centre) ** 2, 0) / 2);
    assert.ok(Math.abs(over.mean - Math.exp(centre)) < 1e-12);
    // Three seeds, two degrees of freedom: t = 4.303.
    assert.ok(Math.abs(over.low - Math.exp(centre - (4.303 * sd) / Math.sqrt(3))) < 1e-12);
    assert.ok(Math.abs(over.high - Math.exp(centre + (4.303 * sd) / Math.sqrt(3))) < 1e-12);
    assert.equal(over.seeds, 3);
    assert.equal(over.passes, 4);
  });

  it("counts the passes of a seed as one replicate, so that correlated passes do not narrow the interval", () => {
    const seeds = [[0.88, 0.9], [0.97, 0.99], [0.84, 0.86]];
    const clustered = seedsInterval(seeds)!;
    const asIfIndependent = seedsInterval(seeds.flat().map((ratio) => [ratio]))!;
    assert.ok(clustered.high - clustered.low > asIfIndependent.high - asIfIndependent.low);
    assert.equal(verdictOf(range(asIfIndependent)), "below");
    assert.equal(verdictOf(range(clustered)), "tie");
  });

  it("calls a tie what seeds spread around 1.0, and below or above only seeds that sit clearly on one side", () => {
    // The WAN case's passes of runs 27, 28 and 30, one seed a pass: seeds 7, 8 and 9 in each run.
    assert.equal(verdictOf(range(seedsInterval([[1.09, 1.0, 1.23], [0.91, 0.86, 1.0], [0.94, 0.93, 0.93]]))), "tie");
    assert.equal(verdictOf(range(seedsInterval([[0.93, 0.96], [0.86, 0.91], [0.87, 0.92], [0.9, 0.89]]))), "below");
    assert.equal(verdictOf(range(seedsInterval([[1.08], [1.1], [1.09], [1.12]]))), "above");
  });

  it("narrows with more seeds of the same spread", () => {
    const few = seedsInterval([[0.95], [1.05], [0.95], [1.05]])!;
    const many = seedsInterval([[0.95], [1.05], [0.95], [1.05], [0.95], [1.05], [0.95], [1.05]])!;
    assert.ok(many.high - many.low < few.high - few.low);
  });

  it("gives none under two seeds, and leaves out ratios that are not positive numbers and seeds left without one", () => {
    assert.equal(seedsInterval([[1.02, 0.98]]), undefined);
    assert.equal(seedsInterval([]), undefined);
    assert.equal(seedsInterval([[1.02], [Number.NaN], [0]]), undefined);
    assert.deepEqual(seedsInterval([[1.02], [Number.NaN, 0.98], []]), seedsInterval([[1.02], [0.98]]));
  });
});

describe("tQuantile975", () => {
  it("reads the table up to 30 degrees of freedom and stays within 0.001 of Student's t past it", () => {
    assert.equal(tQuantile975(1), 12.706);
    assert.equal(tQuantile975(30), 2.042);
    // Student's t at 97.5 %: 2.021 at 40, 2.000 at 60, 1.980 at 120.
    assert.ok(Math.abs(tQuantile975(40) - 2.021) < 0.001);
    assert.ok(Math.abs(tQuantile975(60) - 2.0) < 0.001);
    assert.ok(Math.abs(tQuantile975(120) - 1.98) < 0.001);
  });
});

describe("crossValidatedBest", () => {
  const point = (mode: string, samples: number[], extra = 0.1): YardstickPoint => ({
    mode,
    p50: 5,
    p99: nearestRankP99(samples),
    extra,
    samples,
  });

  /**
   * The geometric mean, over seeded trials, of a learner's p99 over the in-sample and the cross-validated best of four
   * fixed points, the learner and every point drawn from the same distribution: 1.0 is a yardstick without bias.
   */
  function learnerRatios(draw: (seed: number) => number[], trials: number, seedStride: number): { inSample: number; crossValidated: number } {
    let inSample = 0;
    let crossValidated = 0;
    for (let trial = 0; trial < trials; trial++) {
      const sweep = [0, 1, 2, 3].map((i) => point(`fixed ${i}`, draw(seedStride * trial + i)));
      const learner = point("adaptive", draw(seedStride * trial + 99));
      inSample += Math.log(learner.p99 / hindsightBest(sweep, learner.extra)!.p99);
      crossValidated += Math.log(learner.p99 / crossValidatedBest(sweep, learner.extra)!.p99);
    }
    return { inSample: Math.exp(inSample / trials), crossValidated: Math.exp(crossValidated / trials) };
  }

  it("measures each half's choice on the other half, so a point that was lucky on one half is not credited with it", () => {
    // Halves are alternate blocks of 50 reads. "lucky" has all its slow reads in the second block: the best p99 of the
    // first half, and the worst of the second.
    const lucky = Array.from({ length: 1000 }, (_, i) => (i >= 50 && i < 80 ? 200 : 5));
    const steady = Array.from({ length: 1000 }, (_, i) => (i < 8 || (i >= 50 && i < 58) ? 100 : 5));
    const best = crossValidatedBest([point("lucky", lucky), point("steady", steady)], 0.1);
    assert.ok(best !== undefined);
    assert.deepEqual(best.modes, ["lucky", "steady"]);
    // lucky's second half (30 reads of 200 ms of 500) and steady's first half (8 of 100 ms): the p99 (10th slowest of 1000) is 200.
    assert.equal(best.samples.length, 1000);
    assert.equal(best.p99, 200);
    // In sample, over all its reads, steady (p99 100) beats lucky (200).
    assert.equal(hindsightBest([point("lucky", lucky), point("steady", steady)], 0.1)?.mode, "steady");
  });

  it("keeps a stall of consecutive reads in one half, so that the luck of a point spared by the stalls is not carried over", () => {
    // Every point and the learner from one distribution whose slow reads (2 %) come in runs of six, as a stall of the
    // machine slows reads that finish one after another.
    const draw = (seed: number): number[] => {
      const random = seededRandom(seed);
      const latencies: number[] = [];
      while (latencies.length < 1000) {
        if (random() < 0.02 / 6) for (let k = 0; k < 6 && latencies.length < 1000; k++) latencies.push(50 + 100 * random());
        else latencies.push(5 + 5 * random());
      }
      return latencies;
    };
    const { inSample, crossValidated } = learnerRatios(draw, 100, 1000);
    // 2.75 and 1.42 over these seeded trials; halves of alternate reads gave about 2.5, hardly better than in sample.
    assert.ok(inSample > 2, `in-sample ratio ${inSample.toFixed(3)}`);
    assert.ok(crossValidated < 1.6, `cross-validated ratio ${crossValidated.toFixed(3)}`);
  });

  it("leaves out the points that spent more than the learner, and gives none when every point did", () => {
    const fast = Array.from({ length: 1000 }, () => 5);
    const slow = Array.from({ length: 1000 }, (_, i) => (i < 20 ? 100 : 5));
    assert.deepEqual(crossValidatedBest([point("fast", fast, 0.2), point("slow", slow, 0.1)], 0.1)?.modes, ["slow", "slow"]);
    assert.equal(crossValidatedBest([point("fast", fast, 0.2)], 0.1), undefined);
    // A point the in-sample best may choose but that cannot be split: no cross-validated best at all.
    assert.equal(crossValidatedBest([point("slow", slow), { mode: "no samples", p50: 5, p99: 5, extra: 0.1 }], 0.1), undefined);
  });

  it("comes out near 1.0 for a learner drawn from the same distribution as the points, where the in-sample best is biased low", () => {
    const draw = (seed: number): number[] => {
      const random = seededRandom(seed);
      return Array.from({ length: 1000 }, () => (random() < 0.02 ? 50 + 100 * random() : 5 + 5 * random()));
    };
    const { inSample, crossValidated } = learnerRatios(draw, 40, 100);
    // 1.32 and 1.10 over these 40 seeded trials.
    assert.ok(inSample > 1.2, `in-sample ratio ${inSample.toFixed(3)}`);
    assert.ok(crossValidated < 1.15, `cross-validated ratio ${crossValidated.toFixed(3)}`);
  });
});
