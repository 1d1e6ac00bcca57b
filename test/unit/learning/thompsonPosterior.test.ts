import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { ThompsonRanking, thompsonDefaults } from "../../../src/learning/regionRanking.js";
import { seededRandom } from "../../../src/testing/seededRandom.js";
import { eastUs, westUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";

/**
 * ThompsonRanking against a reference model written from its documented
 * mathematics, not from its code: a normal model of the log-latency with a
 * normal-inverse-gamma prior (mean ln 50 ms worth one observation, variance
 * shape 2 and scale 1), decayed evidence (half-life 10 s) capped at ten
 * observations or two after a surprise (four spreads from the mean, the
 * spread at least 0.25), and censored observations imputed as the
 * conditional mean above the bound (the inverse Mills ratio, computed here
 * by numerical integration rather than a polynomial). The medians must agree
 * to a few parts in a million; the samples' ordering frequencies must agree
 * with the Student-t distributions the posteriors imply.
 */

const priorMean = Math.log(thompsonDefaults.priorMedianMs);
const priorWeight = 1;
const priorShape = 2;
const priorScale = 1;
const maxWeight = 10;
const surpriseWeight = 2;
const surpriseDeviations = 4;
const minSpread = 0.25;
const minLatencyMs = 0.5;

/** The standard normal density. */
function density(z: number): number {
  return Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
}

/** The standard normal upper tail by Simpson's rule over [z, z + 20], or by its asymptotic series far out where the density underflows. */
function upperTail(z: number): number {
  const steps = 20_000;
  const h = 20 / steps;
  let sum = density(z) + density(z + 20);
  for (let i = 1; i < steps; i++) sum += (i % 2 === 0 ? 2 : 4) * density(z + i * h);
  return (sum * h) / 3;
}

/** E[Z | Z > z] for a standard normal Z: the inverse Mills ratio, exact where it can be computed, else its asymptotic series. */
function inverseMills(z: number): number {
  if (z > 30) return z + 1 / z - 2 / z ** 3 + 10 / z ** 5;
  return density(z) / upperTail(z);
}

/** The reference model of one region's evidence. */
class ReferencePosterior {
  weight = 0;
  mean = 0;
  squares = 0;

  decay(elapsedMs: number): void {
    const factor = Math.pow(0.5, elapsedMs / thompsonDefaults.halfLifeMs);
    this.weight *= factor;
    this.squares *= factor;
  }

  /** Normal-inverse-gamma posterior: the conjugate update of the prior with the decayed evidence. */
  parameters(): { mean: number; weight: number; shape: number; scale: number } {
    const weight = priorWeight + this.weight;
    const mean = (priorWeight * priorMean + this.weight * this.mean) / weight;
    const scale = priorScale + this.squares / 2 + (priorWeight * this.weight * (this.mean - priorMean) ** 2) / (2 * weight);
    return { mean, weight, shape: priorShape + this.weight / 2, scale };
  }

  medianMs(): number {
    return Math.exp(this.parameters().mean);
  }

  /** The region's own mean and spread once it has two observations' worth of evidence, else the posterior's. */
  fit(): { mean: number; deviation: number } {
    if (this.weight < surpriseWeight) {
      const { mean, shape, scale } = this.parameters();
      return { mean, deviation: Math.sqrt(scale / (shape - 1)) };
    }
    return { mean: this.mean, deviation: Math.max(minSpread, Math.sqrt(this.squares / this.weight)) };
  }

  add(value: number): void {
    const { mean, deviation } = this.fit();
    const surprising = this.weight >= surpriseWeight && Math.abs(value - mean) > surpriseDeviations * deviation;
    const cap = surprising ? surpriseWeight : maxWeight - 1;
    if (this.weight > cap) {
      this.squares *= cap / this.weight;
      this.weight = cap;
    }
    // A weighted mean and sum of squared deviations, one observation more.
    const weight = this.weight + 1;
    const previousMean = this.mean;
    this.mean = previousMean + (value - previousMean) / weight;
    this.squares += (value - previousMean) * (value - this.mean);
    this.weight = weight;
  }

  observe(latencyMs: number): void {
    if (!Number.isFinite(latencyMs) || latencyMs < 0) return;
    this.add(Math.log(Math.max(latencyMs, minLatencyMs)));
  }

  observeCensored(atLeastMs: number): void {
    if (!Number.isFinite(atLeastMs) || atLeastMs < 0) return;
    const { mean, deviation } = this.fit();
    const bound = Math.log(Math.max(atLeastMs, minLatencyMs));
    if (bound <= mean) return;
    this.add(Math.max(bound, mean + deviation * inverseMills((bound - mean) / deviation)));
  }
}

type Step = { observe: number } | { censored: number } | { waitMs: number };

describe("ThompsonRanking against its reference model", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  /** Plays the steps on both and compares the medians after each; returns the reference. */
  async function play(steps: readonly Step[], tolerance = 2e-6): Promise<ReferencePosterior> {
    const ranking = new ThompsonRanking(seededRandom(1));
    const reference = new ReferencePosterior();
    for (const [index, step] of steps.entries()) {
      if ("observe" in step) {
        ranking.observe("East US", "pointRead", step.observe);
        reference.observe(step.observe);
      } else if ("censored" in step) {
        ranking.observeCensored("East US", "pointRead", step.censored);
        reference.observeCensored(step.censored);
      } else {
        await clock.tickAsync(step.waitMs);
        reference.decay(step.waitMs);
      }
      const actual = ranking.medianMs("East US", "pointRead");
      const expected = reference.medianMs();
      assert.ok(
        Number.isFinite(actual) && Math.abs(actual - expected) <= tolerance * expected,
        `after step ${index} (${JSON.stringify(step)}): median ${actual} ms, the model says ${expected} ms`,
      );
    }
    return reference;
  }

  const observations = (...latencies: number[]): Step[] => latencies.map((observe) => ({ observe }));

  it("starts at the prior's median and moves with each answer as the conjugate update says", async () => {
    const prior = new ThompsonRanking(seededRandom(1)).medianMs("East US", "pointRead");
    assert.ok(Math.abs(prior - thompsonDefaults.priorMedianMs) < 1e-9, `${prior}`);
    await play(observations(12, 9, 15, 11, 10, 30, 8));
  });

  it("takes 0 ms as the least latency it can record, and ignores negative and non-finite ones", async () => {
    await play([...observations(0, 0.2, 3), { observe: -4 }, { observe: Number.NaN }, { observe: Number.POSITIVE_INFINITY }, ...observations(2)]);
  });

  it("holds at most ten observations' worth of evidence, and the spread of what it keeps", async () => {
    const reference = await play([...observations(...Array.from({ length: 40 }, (_, i) => 10 + (i % 7))), { censored: 16 }, { censored: 19 }]);
    assert.equal(reference.weight, maxWeight);
  });

  it("shrinks its history to two observations on a surprise, and follows the new level within a few reads", async () => {
    const reference = await play([...observations(...Array.from({ length: 12 }, () => 10), 400, 410, 395, 405, 10, 11), { censored: 300 }]);
    assert.ok(reference.medianMs() > 20);
  });

  it("a first answer after a quiet spell counts against decayed evidence", async () => {
    await play([
      ...observations(10, 12, 11, 9, 14),
      { waitMs: thompsonDefaults.halfLifeMs },
      { censored: 15 },
      ...observations(40),
      { waitMs: 2 * thompsonDefaults.halfLifeMs },
      ...observations(40, 41),
      { waitMs: 3 * thompsonDefaults.halfLifeMs },
      { censored: 60 },
    ]);
  });

  it("imputes a censored arm as its expected latency above the bound, from the region's own spread", async () => {
    // The bounds sit from half a spread to several spreads above the median, where every term of the tail's approximation counts.
    await play([...observations(10, 14, 8, 12, 11, 9, 13), { censored: 13 }, { censored: 16 }, { censored: 25 }, { censored: 60 }, { censored: 12 }]);
  });

  it("imputes a censored arm from the posterior's spread while the region has less than two observations", async () => {
    await play([{ censored: 80 }]);
    await play([{ observe: 30 }, { censored: 45 }, { censored: 200 }]);
    await play([{ observe: 7 }, { censored: 9 }]);
  });

  it("ignores a bound at or below the median, and a non-finite one", async () => {
    await play([...observations(10, 10, 10, 10), { censored: 10 }, { censored: 5 }, { censored: -3 }, { censored: Number.NaN }, { censored: Number.POSITIVE_INFINITY }, { observe: 10 }]);
  });

  it("far in the tail, where the normal density underflows, still imputes a finite latency above the bound", async () => {
    const reference = await play([...observations(1, 1, 1, 1, 1, 1, 1, 1, 1, 1), { censored: 60_000 }], 1e-5);
    assert.ok(reference.medianMs() > 1);
  });
});

/** The Student-t density (unnormalized) with `dof` degrees of freedom. */
function studentKernel(t: number, dof: number): number {
  return Math.pow(1 + (t * t) / dof, -(dof + 1) / 2);
}

/**
 * P(a sample of A < a sample of B), where each posterior's sample of the
 * mean log-latency is `mean + sqrt(scale / (shape * weight)) * T(2 * shape)`,
 * by numerical integration over a grid.
 */
function probabilityFirst(a: ReturnType<ReferencePosterior["parameters"]>, b: ReturnType<ReferencePosterior["parameters"]>): number {
  const scaleOf = (p: typeof a) => Math.sqrt(p.scale / (p.shape * p.weight));
  const low = Math.min(a.mean, b.mean) - 80;
  const high = Math.max(a.mean, b.mean) + 80;
  const step = 0.0005;
  let massA = 0;
  let massB = 0;
  const points = Math.ceil((high - low) / step);
  const densityA = new Float64Array(points);
  const densityB = new Float64Array(points);
  for (let i = 0; i < points; i++) {
    const x = low + i * step;
    densityA[i] = studentKernel((x - a.mean) / scaleOf(a), 2 * a.shape);
    densityB[i] = studentKernel((x - b.mean) / scaleOf(b), 2 * b.shape);
    massA += densityA[i]!;
    massB += densityB[i]!;
  }
  let below = 0;
  let probability = 0;
  for (let i = 0; i < points; i++) {
    // B's sample above x, counting half of B's mass at x itself.
    const bAbove = 1 - (below + densityB[i]! / 2) / massB;
    probability += (densityA[i]! / massA) * bAbove;
    below += densityB[i]!;
  }
  return probability;
}

describe("ThompsonRanking's samples", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  const scenarios: ReadonlyArray<{ name: string; east: number[]; west: number[] }> = [
    { name: "a region with no evidence against one with two answers", east: [], west: [20, 28] },
    { name: "two regions a little apart", east: [10, 13, 9, 12], west: [12, 16, 11, 15, 13, 14] },
    { name: "a known fast region against a barely known slow one", east: [5, 6, 5, 7, 6, 5, 6, 5], west: [60] },
    // Here the unknown region goes first only from the far tail of its Student-t: the share tests the Gamma draw's shape.
    { name: "an unknown region against a well known, much faster one", east: [], west: [5, 5, 6, 5, 5, 6, 5, 5, 6, 5] },
  ];

  for (const { name, east, west } of scenarios) {
    it(`order the regions as often as the posteriors' Student-t distributions say: ${name}`, () => {
      const ranking = new ThompsonRanking(seededRandom(11));
      const eastModel = new ReferencePosterior();
      const westModel = new ReferencePosterior();
      for (const latency of east) {
        ranking.observe("East US", "pointRead", latency);
        eastModel.observe(latency);
      }
      for (const latency of west) {
        ranking.observe("West US", "pointRead", latency);
        westModel.observe(latency);
      }
      const draws = 20_000;
      let eastFirst = 0;
      for (let i = 0; i < draws; i++) if (ranking.order([eastUs, westUs], "pointRead")[0] === eastUs) eastFirst++;
      // A region with no successful answer is never sampled ahead of one that has answered: it follows in the order given.
      const expected = east.length === 0 ? 0 : probabilityFirst(eastModel.parameters(), westModel.parameters());
      const observed = eastFirst / draws;
      // Four standard errors of a binomial share.
      const tolerance = 4 * Math.sqrt((expected * (1 - expected)) / draws);
      if (expected === 0) assert.equal(observed, 0, "an untried region is never ranked first");
      assert.ok(Math.abs(observed - expected) <= tolerance, `East first in ${observed} of draws; the model says ${expected.toFixed(4)} ± ${tolerance.toFixed(4)}`);
    });
  }
});
