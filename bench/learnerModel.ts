// npm run bench:learner-model [-- --seeds 10 --stall-every 8000 --share 0.1 --slow-share 0]: a model of the straggler
// case (with --share 0.02 --slow-share 0.08, of the mixed tail), not a
// measurement. `crossRegionHedgingPolicy` itself runs on fake timers (sinon) over a transport whose latencies are
// drawn from a seeded model: East answers in 1.5 ms plus an exponential of mean 1 ms (one read in a hundred takes an
// exponential of mean 6 ms more), a share of its reads take 1 s more (a second share 150 ms more), West answers in 31 ms plus an exponential of
// mean 1 ms; now and then the client's machine stalls for 150-400 ms, during which every answer takes 10-40 ms more.
// Each mode (the adaptive threshold, fixed thresholds with one hedge each) meets the same arrivals (30 reads/s,
// Poisson, after 1 s of healthy warm-up) and the same stalls; 1000 reads a mode and seed.
//
// Why a model: `npm run bench` measures through the real SDK, but its p99 rests on a thousand reads' slowest ten
// and moves by tens of percent from run to run, and a run takes twenty minutes of a quiet machine. The model runs
// in seconds, repeats exactly, and takes as many seeds as a comparison of two learners needs. Its figures say how
// a variant of the learner behaves on this workload, never what a client measures.
import { parseArgs } from "node:util";
import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import sinon from "sinon";
import { getHedgeDiagnostics } from "../src/diagnostics/diagnostics.js";
import { crossRegionHedgingPolicy } from "../src/policies/crossRegionHedgingPolicy.js";
import { seededRandom } from "../src/testing/seededRandom.js";
import { RegionCache } from "../src/topology/regionCache.js";
import { latencyTransport } from "../test/support/fakeTransport.js";
import { eastUs, pointRead, westUs } from "../test/support/hedgingFixtures.js";
import { markdownTable } from "./support/table.js";

const { values } = parseArgs({ options: { seeds: { type: "string" }, "stall-every": { type: "string" }, share: { type: "string" }, "slow-share": { type: "string" } } });
const seeds = Number(values.seeds ?? 10);
const stallEveryMs = Number(values["stall-every"] ?? 8000);
const stragglerShare = Number(values.share ?? 0.1);
const slowShare = Number(values["slow-share"] ?? 0);
if (!Number.isInteger(seeds) || seeds < 1) throw new RangeError(`--seeds must be a whole number of at least 1; got ${values.seeds}`);
if (!(stallEveryMs === 0 || stallEveryMs >= 1000)) throw new RangeError(`--stall-every must be 0 (no stalls) or at least 1000 ms; got ${values["stall-every"]}`);
if (!(stragglerShare >= 0 && stragglerShare < 1)) throw new RangeError(`--share must be at least 0 and below 1; got ${values.share}`);
if (!(slowShare >= 0 && stragglerShare + slowShare < 1)) throw new RangeError(`--slow-share must be at least 0, and below 1 with --share; got ${values["slow-share"]}`);

const reads = 1000;
const ratePerSecond = 30;
const warmUpMs = 1000;
const eastOrigin = new URL(eastUs.endpoint).origin;

type Threshold = number | "adaptive";
const modes: readonly Threshold[] = ["adaptive", 5, 8, 10, 12, 15, 20, 25, 35];

interface ModeRun {
  readonly p99: number;
  readonly extra: number;
  /** The adaptive threshold's 10th, 50th and 90th percentiles over the reads. */
  readonly thresholds: readonly [number, number, number];
}

const nearestRank = (sorted: readonly number[], quantile: number): number => sorted[Math.max(0, Math.ceil(sorted.length * quantile) - 1)] ?? Number.NaN;

/** One mode on one seed: its own policy, the seed's arrivals, stalls and latencies. */
async function runMode(clock: sinon.SinonFakeTimers, threshold: Threshold, seed: number): Promise<ModeRun> {
  const latencyRandom = seededRandom(seed);
  const scheduleRandom = seededRandom(seed + 1_000_000);
  const exponential = (mean: number, random: () => number): number => -mean * Math.log(1 - random());
  const startedAt = performance.now();
  const stalls: Array<{ from: number; to: number; extraMs: number }> = [];
  for (let at = 2000; stallEveryMs > 0 && at < 60_000; at += stallEveryMs * (0.5 + scheduleRandom())) {
    stalls.push({ from: at, to: at + 150 + 250 * scheduleRandom(), extraMs: 10 + 30 * scheduleRandom() });
  }
  let degraded = false;
  let sent = 0;
  const transport = latencyTransport((origin) => {
    sent += 1;
    const now = performance.now() - startedAt;
    const stallMs = stalls.find((stall) => now >= stall.from && now < stall.to)?.extraMs ?? 0;
    if (origin !== eastOrigin) return 31 + exponential(1, latencyRandom) + stallMs;
    const healthyMs = 1.5 + exponential(1, latencyRandom) + (latencyRandom() < 0.01 ? exponential(6, latencyRandom) : 0) + stallMs;
    if (!degraded) return healthyMs;
    const draw = latencyRandom();
    return draw < stragglerShare ? healthyMs + 1000 : draw < stragglerShare + slowShare ? healthyMs + 150 : healthyMs;
  });
  const pipeline = createEmptyPipeline();
  pipeline.addPolicy(
    crossRegionHedgingPolicy({
      regions: new RegionCache({ topology: { readRegions: [eastUs, westUs] } }),
      threshold,
      ...(threshold === "adaptive" ? {} : { thresholdStep: 10_000 }),
    }),
  );
  const latencies: number[] = [];
  const thresholds: number[] = [];
  const pending: Promise<void>[] = [];
  let scheduledMs = 0;
  const offer = (measured: boolean, count: number, untilMs: number): void => {
    for (let i = 0; i < count && scheduledMs < untilMs; i++) {
      scheduledMs += exponential(1000 / ratePerSecond, scheduleRandom);
      const at = startedAt + scheduledMs;
      setTimeout(
        () =>
          pending.push(
            pipeline.sendRequest(transport, pointRead(eastUs)).then((response) => {
              if (!measured) return;
              latencies.push(performance.now() - at);
              thresholds.push(getHedgeDiagnostics(response)?.thresholdMs ?? 0);
            }),
          ),
        at - performance.now(),
      );
    }
  };
  offer(false, Number.POSITIVE_INFINITY, warmUpMs);
  await clock.tickAsync(warmUpMs);
  degraded = true;
  const sentBefore = sent;
  const measuredFrom = scheduledMs;
  offer(true, reads, Number.POSITIVE_INFINITY);
  // Past the last arrival and every drain.
  await clock.tickAsync(scheduledMs - measuredFrom + 10_000);
  await Promise.all(pending);
  const sortedLatencies = [...latencies].sort((a, b) => a - b);
  const sortedThresholds = [...thresholds].sort((a, b) => a - b);
  return {
    p99: nearestRank(sortedLatencies, 0.99),
    extra: (sent - sentBefore - reads) / reads,
    thresholds: [nearestRank(sortedThresholds, 0.1), nearestRank(sortedThresholds, 0.5), nearestRank(sortedThresholds, 0.9)],
  };
}

const clock = sinon.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance", "Date"] });
const runs = new Map<Threshold, ModeRun[]>(modes.map((mode) => [mode, []]));
let atOrBelow = 0;
let comparable = 0;
try {
  for (let seed = 1; seed <= seeds; seed++) {
    const bySeed = new Map<Threshold, ModeRun>();
    for (const mode of modes) {
      const run = await runMode(clock, mode, seed);
      bySeed.set(mode, run);
      runs.get(mode)!.push(run);
    }
    const learner = bySeed.get("adaptive")!;
    const best = Math.min(...[...bySeed].filter(([mode, run]) => mode !== "adaptive" && run.extra <= learner.extra + 1e-9).map(([, run]) => run.p99));
    if (Number.isFinite(best)) {
      comparable += 1;
      if (learner.p99 <= best) atOrBelow += 1;
    }
  }
} finally {
  clock.restore();
}

const mean = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
console.log(
  `Model of the straggler case (${stragglerShare * 100} % of East's reads +1 s${slowShare > 0 ? `, ${slowShare * 100} % +150 ms` : ""}, West 31 ms away, ${stallEveryMs === 0 ? "no stalls" : `a stall of the client every ${stallEveryMs} ms on average`}), ` +
    `${reads} reads at ${ratePerSecond}/s per mode and seed, ${seeds} seeds; means over the seeds.\n`,
);
console.log(
  markdownTable(
    ["mode", "p99 ms", "extra requests", "threshold p10 / p50 / p90 ms"],
    modes.map((mode) => {
      const modeRuns = runs.get(mode)!;
      const spread = mode === "adaptive" ? [0, 1, 2].map((i) => mean(modeRuns.map((run) => run.thresholds[i]!)).toFixed(1)).join(" / ") : "-";
      return [mode === "adaptive" ? "adaptive" : `fixed ${mode} ms, one hedge`, mean(modeRuns.map((run) => run.p99)).toFixed(1), `${(mean(modeRuns.map((run) => run.extra)) * 100).toFixed(2)}%`, spread];
    }),
  ),
);
console.log(`\nThe adaptive p99 is at or below the best fixed threshold's at no more extra requests in ${atOrBelow} of ${comparable} seeds where one spends no more.`);
