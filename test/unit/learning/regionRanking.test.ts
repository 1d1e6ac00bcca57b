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

    it("leaves a read addressed to a region that is not demoted as it is while another region is demoted", () => {
      for (let i = 0; i < 5; i++) tracker.observe({ primary: "West US", hedgeWinner: "North Europe" });
      assert.equal(regions.isDemoted("West US"), true);
      for (let i = 0; i < 3; i++) assert.deepEqual(tracker.route(eastUs, candidates()), { targets: candidates() });
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

    it("ranks a region known only from a censored bound among those that answered, ahead of the untried", () => {
      const ranking = new ThompsonRanking(seededRandom(3));
      ranking.observeCensored("West US", "pointRead", 200);
      assert.equal(firstShare(ranking, "West US"), 1, "West US, known to take at least 200 ms, goes before East US, never tried");
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
