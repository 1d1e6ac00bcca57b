import type { LatencyClass } from "./latencyWindows.js";
import type { RegionCache, RegionEndpoint } from "../topology/regionCache.js";
import { normalizeRegionName } from "../topology/regionNames.js";

/**
 * How the `crossRegionHedgingPolicy` orders the hedges of a read (the
 * primary always goes where the SDK sent it): `"preferred"` hedges in the
 * preferred order; `"demotion"` demotes a region after
 * {@link demotionDefaults}.consecutiveWins straight hedge wins of another
 * region over it, hedges first to that region and puts the demoted one last
 * until it serves well again; `"thompson"` samples a latency posterior per
 * region for every read and orders the hedges by it.
 */
export type RegionRouting = "preferred" | "demotion" | "thompson";

/**
 * Why the region ranking sent a read where it went: `demoted`, the region
 * the request addressed is demoted and the read went first to the region
 * that beat it; `probe`, the addressed region is demoted and this read is
 * one of the probes that find out whether it serves well again;
 * `thompson`, the order of the arms was sampled from the regions' latency
 * posteriors.
 */
export type HedgeRankingReason = "demoted" | "probe" | "thompson";

/** The constants of consecutive-win demotion. */
export const demotionDefaults = {
  /** Straight hedge wins of other regions over a primary that demote it (the Rust driver spec's default). */
  consecutiveWins: 5,
  /** The share of a demoted region's would-be reads sent to it as probes. */
  probeShare: 0.01,
  /** Milliseconds after which a demoted region gets a probe whatever the share: at least one a second. */
  probeIntervalMs: 1_000,
} as const;

/** A routing decision of the ranking for one read. */
export interface RankedTargets {
  /** The arms' regions, the primary first. */
  readonly targets: readonly RegionEndpoint[];
  /** Set when the ranking chose or confirmed the primary. */
  readonly reason?: HedgeRankingReason;
}

interface ProbeState {
  wouldBe: number;
  lastProbeAt: number;
}

/** What a finished race says about its primary, for {@link DemotionTracker.observe}. */
export interface RaceVerdict {
  /** The primary arm's region. */
  readonly primary: string;
  /** The region of the hedge whose result was returned, when a hedge won. */
  readonly hedgeWinner?: string;
  /** The primary's duration in milliseconds, when its own final result was returned. */
  readonly primaryWonInMs?: number;
}

/**
 * Consecutive-win demotion. The demotions themselves live in the shared
 * {@link RegionCache}, whose read order follows them; this tracker counts
 * straight hedge wins per primary, paces the probes of demoted regions, and
 * restores a region when a read it served as the primary was fast.
 */
export class DemotionTracker {
  private readonly streaks = new Map<string, number>();
  private readonly probes = new Map<string, ProbeState>();

  constructor(
    private readonly regions: RegionCache,
    private readonly settings: typeof demotionDefaults = demotionDefaults,
  ) {}

  /**
   * Where a read addressed to `addressed` goes. `candidates` are the race's
   * regions: `addressed` first, then the others in the read order of the
   * {@link RegionCache}. A read to a demoted region goes first to
   * the best region that is not demoted (the read order puts the region it
   * was demoted in favour of there), unless it is the demoted region's turn
   * for a probe: about one read in a hundred, and at least one a second.
   */
  route(addressed: RegionEndpoint, candidates: readonly RegionEndpoint[]): RankedTargets {
    if (this.regions.demotedRegions.length === 0 || !this.regions.isDemoted(addressed)) return { targets: candidates };
    const key = normalizeRegionName(addressed.name);
    const now = performance.now();
    let probe = this.probes.get(key);
    if (probe === undefined) {
      probe = { wouldBe: 0, lastProbeAt: now };
      this.probes.set(key, probe);
    }
    probe.wouldBe += 1;
    if (now - probe.lastProbeAt >= this.settings.probeIntervalMs || probe.wouldBe * this.settings.probeShare >= 1) {
      probe.wouldBe = 0;
      probe.lastProbeAt = now;
      return { targets: candidates, reason: "probe" };
    }
    // The candidates after the addressed region follow the read order, which already puts the region it was demoted in favour of first.
    const primary = candidates.find((region) => !this.regions.isDemoted(region));
    if (primary === undefined) return { targets: candidates };
    // The demoted region, just found slow, is the last hedge, as it is last in the read order.
    return {
      targets: [primary, ...candidates.filter((region) => region !== primary && region !== addressed), addressed],
      reason: "demoted",
    };
  }

  /** Whether a primary win has nothing to reset or restore: no streak runs and no region is demoted. */
  get idle(): boolean {
    return this.streaks.size === 0 && this.regions.demotedRegions.length === 0;
  }

  /**
   * Learns from a finished read race. A hedge win extends the primary's
   * streak, and the streak's end demotes it in favour of the winner; if the
   * winner is itself demoted, it is restored instead, having just beaten the
   * region that replaced it. A primary win resets the streak, and restores a
   * demoted primary whose answer took at most `restoreWithinMs()`: the
   * healthy latency it must match, asked for only then.
   */
  observe(verdict: RaceVerdict, restoreWithinMs: () => number = () => 0): void {
    // The common case, a primary win with nothing to reset or restore, needs no name normalized.
    if (verdict.hedgeWinner === undefined && this.idle) return;
    const key = normalizeRegionName(verdict.primary);
    if (verdict.hedgeWinner !== undefined) {
      const streak = (this.streaks.get(key) ?? 0) + 1;
      if (streak < this.settings.consecutiveWins) {
        this.streaks.set(key, streak);
        return;
      }
      this.streaks.delete(key);
      if (this.regions.isDemoted(verdict.hedgeWinner)) {
        this.restore(verdict.hedgeWinner);
      } else if (!this.regions.isDemoted(verdict.primary)) {
        this.regions.demoteRegion(verdict.primary, verdict.hedgeWinner);
        this.probes.set(key, { wouldBe: 0, lastProbeAt: performance.now() });
      }
      return;
    }
    if (verdict.primaryWonInMs === undefined) return;
    this.streaks.delete(key);
    if (this.regions.isDemoted(verdict.primary) && verdict.primaryWonInMs <= restoreWithinMs()) this.restore(verdict.primary);
  }

  private restore(region: string): void {
    this.regions.restoreRegion(region);
    this.probes.delete(normalizeRegionName(region));
  }
}

/** The constants of Thompson-sampling routing. */
export const thompsonDefaults = {
  /** Milliseconds after which an observation counts half: old evidence fades, so a region that recovers is found again. */
  halfLifeMs: 10_000,
  /** The prior's median latency in milliseconds, before a region has been observed. */
  priorMedianMs: 50,
} as const;

/** Prior pseudo-observations behind the prior mean: one, so the first real latency dominates. */
const priorWeight = 1;
/**
 * The most evidence a posterior holds, in observations. At a high request
 * rate the half-life alone would pile up thousands of them, and a region
 * that slows down would take as many to look slow; ten still pin a region's
 * median within a fraction of the gap between a near region and a far one.
 */
const maxWeight = 10;
/**
 * A latency this many spreads of a region's recent latencies from their
 * mean is a surprise: the region has likely changed (a brown-out, a
 * recovery), so its history then counts as no more than
 * {@link surpriseWeight} observations and the posterior follows the new
 * evidence within a read or two.
 */
const surpriseDeviations = 4;
const surpriseWeight = 2;
/** The least spread of log-latencies assumed, a factor of about 1.3: a region answering in the same millisecond every time is not that precise. */
const minSpread = 0.25;
/** Prior shape and scale of the log-latency variance: its mean is 1, a factor of e either way. */
const priorShape = 2;
const priorScale = 1;
/** Latencies are rounded to whole milliseconds; below this a logarithm would run off to minus infinity. */
const minLatencyMs = 0.5;

/** Decayed sufficient statistics of one region's log-latencies. */
interface Posterior {
  weight: number;
  mean: number;
  /** Weighted sum of squared deviations from the mean. */
  squares: number;
  updatedAt: number;
  /** The region's latest settled arm was an error: until it answers successfully it is ranked after every other region. */
  failing: boolean;
}

/** A normal deviate (Box–Muller); `1 - u` keeps the logarithm finite. */
function normal(random: () => number): number {
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** A Gamma(shape, 1) deviate (Marsaglia and Tsang). */
function gamma(shape: number, random: () => number): number {
  if (shape < 1) return gamma(shape + 1, random) * Math.pow(1 - random(), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = normal(random);
    const v = (1 + c * x) ** 3;
    if (v <= 0) continue;
    const u = 1 - random();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** The standard normal density. */
function density(x: number): number {
  return Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);
}

/** The standard normal upper tail, from the complementary error function (Numerical Recipes' erfcc, relative error below 1.2e-7). */
function upperTail(x: number): number {
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * z);
  const erfc =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? erfc / 2 : 1 - erfc / 2;
}

/**
 * Thompson-sampling routing: per region and latency class, a normal model
 * of the log-latency with unknown mean and variance under a
 * normal-inverse-gamma prior, fed with exponentially decayed evidence. Each
 * read samples a mean per region from its posterior and goes to the regions
 * in the order of the samples, so a region is tried about as often as it
 * may be the fastest: rarely once it is clearly slower, more often again as
 * its evidence decays.
 *
 * A cancelled or timed-out arm is a censored observation: its latency is
 * known only to exceed the time it ran. When that bound lies above the
 * region's current median, it is imputed as the expected log-latency above
 * the bound under the current estimate (the E-step of a censored-normal
 * EM), so a primary cut short by a faster hedge counts as slow; a bound
 * below the median says nothing new and is ignored. Evidence far outside what a posterior expects shrinks
 * its history, so a brown-out or a recovery is followed within a few reads.
 */
export class ThompsonRanking {
  private readonly posteriors = new Map<string, Posterior>();
  private readonly priorMean: number;

  constructor(
    private readonly random: () => number = () => Math.random(),
    private readonly settings: typeof thompsonDefaults = thompsonDefaults,
  ) {
    this.priorMean = Math.log(settings.priorMedianMs);
  }

  /** Records a successful answer's latency. */
  observe(region: string, latencyClass: LatencyClass, latencyMs: number): void {
    if (!Number.isFinite(latencyMs) || latencyMs < 0) return;
    const posterior = this.posterior(region, latencyClass);
    posterior.failing = false;
    this.add(posterior, Math.log(Math.max(latencyMs, minLatencyMs)));
  }

  /**
   * Records that a region answered with an error (or failed to connect): a
   * fast error must not make a region look fast, so it goes after every
   * region that is not failing until it answers successfully again (as a
   * hedge, which it still gets).
   */
  observeFailure(region: string, latencyClass: LatencyClass): void {
    this.posterior(region, latencyClass).failing = true;
  }

  /** Records that a region's latency exceeded `atLeastMs`: its arm was cancelled or timed out after running that long. */
  observeCensored(region: string, latencyClass: LatencyClass, atLeastMs: number): void {
    if (!Number.isFinite(atLeastMs) || atLeastMs < 0) return;
    const posterior = this.posterior(region, latencyClass);
    const { mean, deviation } = this.fit(posterior);
    const bound = Math.log(Math.max(atLeastMs, minLatencyMs));
    // A bound below the median is what the posterior already expects; adding its imputation would only
    // ratchet the mean up with every cancelled arm, since censored data alone have no finite estimate.
    if (bound <= mean) return;
    const standardized = (bound - mean) / deviation;
    const tail = upperTail(standardized);
    // Far in the tail the inverse Mills ratio tends to its asymptote, where the quotient of two tiny numbers is unreliable.
    const mills = standardized > 6 || tail < 1e-12 ? standardized + 1 / standardized : density(standardized) / tail;
    this.add(posterior, Math.max(bound, mean + deviation * mills));
  }

  /**
   * Orders regions by a sample of each one's mean log-latency, fastest
   * first. Only regions that have answered successfully are sampled: the
   * others (never observed, or failing since their last success) follow in
   * the order given, so that the prior's optimism never moves a read to a
   * region that has not shown it can answer it.
   */
  order(regions: readonly RegionEndpoint[], latencyClass: LatencyClass): RegionEndpoint[] {
    const proven: Array<{ region: RegionEndpoint; sample: number }> = [];
    const unproven: RegionEndpoint[] = [];
    for (const region of regions) {
      const posterior = this.posterior(region.name, latencyClass);
      if (posterior.failing || posterior.weight === 0) unproven.push(region);
      else proven.push({ region, sample: this.sample(posterior) });
    }
    return [...proven.sort((a, b) => a.sample - b.sample).map((entry) => entry.region), ...unproven];
  }

  /** The posterior median latency of a region in milliseconds (the exponential of the posterior mean of its log-latency). */
  medianMs(region: string, latencyClass: LatencyClass): number {
    return Math.exp(this.estimate(this.posterior(region, latencyClass)).mean);
  }

  private posterior(region: string, latencyClass: LatencyClass): Posterior {
    const key = `${latencyClass}\u0000${normalizeRegionName(region)}`;
    const now = performance.now();
    let posterior = this.posteriors.get(key);
    if (posterior === undefined) {
      posterior = { weight: 0, mean: 0, squares: 0, updatedAt: now, failing: false };
      this.posteriors.set(key, posterior);
    } else if (now > posterior.updatedAt) {
      const decay = Math.pow(0.5, (now - posterior.updatedAt) / this.settings.halfLifeMs);
      posterior.weight *= decay;
      posterior.squares *= decay;
      posterior.updatedAt = now;
    }
    return posterior;
  }

  private add(posterior: Posterior, value: number): void {
    const { mean, deviation } = this.fit(posterior);
    const surprising = posterior.weight >= surpriseWeight && Math.abs(value - mean) > surpriseDeviations * deviation;
    const cap = surprising ? surpriseWeight : maxWeight - 1;
    if (posterior.weight > cap) {
      const keep = cap / posterior.weight;
      posterior.weight *= keep;
      posterior.squares *= keep;
    }
    const weight = posterior.weight + 1;
    const delta = value - posterior.mean;
    posterior.mean += delta / weight;
    posterior.squares += delta * (value - posterior.mean);
    posterior.weight = weight;
  }

  /** The normal-inverse-gamma posterior's parameters. */
  private parameters(posterior: Posterior): { mean: number; weight: number; shape: number; scale: number } {
    const weight = priorWeight + posterior.weight;
    const mean = (priorWeight * this.priorMean + posterior.weight * posterior.mean) / weight;
    const shift = posterior.mean - this.priorMean;
    const scale = priorScale + posterior.squares / 2 + (priorWeight * posterior.weight * shift * shift) / (2 * weight);
    return { mean, weight, shape: priorShape + posterior.weight / 2, scale };
  }

  /**
   * The mean and spread of a region's own recent log-latencies (what the
   * E-step and the surprise test need), or the posterior's while it has
   * too little evidence of its own.
   */
  private fit(posterior: Posterior): { mean: number; deviation: number } {
    if (posterior.weight < surpriseWeight) return this.estimate(posterior);
    return { mean: posterior.mean, deviation: Math.max(minSpread, Math.sqrt(posterior.squares / posterior.weight)) };
  }

  private estimate(posterior: Posterior): { mean: number; deviation: number } {
    const { mean, shape, scale } = this.parameters(posterior);
    return { mean, deviation: Math.sqrt(scale / (shape - 1)) };
  }

  private sample(posterior: Posterior): number {
    const { mean, weight, shape, scale } = this.parameters(posterior);
    const variance = scale / gamma(shape, this.random);
    return mean + Math.sqrt(variance / weight) * normal(this.random);
  }
}
