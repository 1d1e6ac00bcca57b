import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { SinonFakeTimers } from "sinon";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { LatencyObservation, LatencyWindows } from "../../src/learning/latencyWindows.js";
import { crossRegionHedgingPolicy } from "../../src/policies/crossRegionHedgingPolicy.js";
import { loserDrainDefaults } from "../../src/race/loserDrain.js";
import { RegionCache } from "../../src/topology/regionCache.js";
import { latencyTransport } from "./fakeTransport.js";
import { eastUs, pointRead, westUs } from "./hedgingFixtures.js";

// Workloads at a given read rate, on the fake clock, for the tests that pin how the learner behaves at 30 to 1000
// reads a second: a stall of the client looks alike at every rate, a lasting tail does not, and a rule that counts
// slow answers in a span of time tells them apart at one rate only.

/** An exponential draw of mean `mean`. */
export function exponential(mean: number, random: () => number): number {
  return -mean * Math.log(1 - random());
}

/** A healthy point read of the near region, as in `npm run bench:learner-model`: 1.5 ms plus an exponential of mean 1, one in a hundred an exponential of mean 6 more. */
export function healthyMs(random: () => number): number {
  return 1.5 + exponential(1, random) + (random() < 0.01 ? exponential(6, random) : 0);
}

/** Poisson arrival times, in milliseconds, at `ratePerSecond` over `[fromMs, toMs)`. */
export function arrivals(random: () => number, ratePerSecond: number, fromMs: number, toMs: number): number[] {
  const times: number[] = [];
  for (let at = fromMs + exponential(1000 / ratePerSecond, random); at < toMs; at += exponential(1000 / ratePerSecond, random)) times.push(at);
  return times;
}

/** One read of a window-level workload: when it was sent, how long it took, and as what its answer is recorded. */
export interface TimedLatency {
  readonly sentAt: number;
  readonly latencyMs: number;
  readonly observation: LatencyObservation;
}

/**
 * Records each read in `windows` when it answers, in the order they answer,
 * moving the fake clock to each answer (times count from the call), and reads
 * the region's survival before each, as the policy's plan of every read
 * does; `inspect.at` is called at every whole `everyMs` of the clock on the
 * way.
 */
export function recordAsAnswered(
  clock: SinonFakeTimers,
  windows: LatencyWindows,
  region: string,
  reads: readonly TimedLatency[],
  inspect?: { readonly everyMs: number; readonly at: (nowMs: number) => void },
): void {
  const origin = performance.now();
  const byAnswer = [...reads].sort((a, b) => a.sentAt + a.latencyMs - (b.sentAt + b.latencyMs));
  let nextInspection = inspect?.everyMs ?? Number.POSITIVE_INFINITY;
  for (const read of byAnswer) {
    const answeredAt = read.sentAt + read.latencyMs;
    while (inspect !== undefined && nextInspection <= answeredAt) {
      clock.tick(origin + nextInspection - performance.now());
      inspect.at(nextInspection);
      nextInspection += inspect.everyMs;
    }
    clock.tick(Math.max(0, origin + answeredAt - performance.now()));
    windows.survival(region, "pointRead");
    windows.record(region, "pointRead", read.latencyMs, read.observation);
  }
}

/** The nearest-rank `quantile` of some latencies. */
export function nearestRank(latencies: readonly number[], quantile: number): number {
  const sorted = [...latencies].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length * quantile) - 1)] ?? Number.NaN;
}

/** A read through `crossRegionHedgingPolicy`: when it was sent (ms on the fake clock), how long it took, and its diagnostics. */
export interface PolicyRead {
  readonly sentAt: number;
  readonly latencyMs: number;
  readonly diagnostics: HedgeDiagnostics;
}

/**
 * Open-loop reads through an adaptive `crossRegionHedgingPolicy` on the
 * fake clock (which must start at 0), East preferred and West the hedge
 * region: one read at each of `sendAt`, each arm answering after
 * `latencyOf(origin, sentAtMs)`. Resolves once every read and every drained
 * loser has finished.
 */
export async function readThroughPolicy(
  clock: SinonFakeTimers,
  sendAt: readonly number[],
  latencyOf: (region: "East US" | "West US", sentAtMs: number) => number,
): Promise<PolicyRead[]> {
  const pipeline = createEmptyPipeline();
  pipeline.addPolicy(crossRegionHedgingPolicy({ regions: new RegionCache({ topology: { readRegions: [eastUs, westUs] } }), threshold: "adaptive" }));
  const eastOrigin = new URL(eastUs.endpoint).origin;
  const transport = latencyTransport((origin) => latencyOf(origin === eastOrigin ? "East US" : "West US", performance.now()));
  const reads: PolicyRead[] = [];
  const pending: Promise<void>[] = [];
  for (const at of sendAt) {
    setTimeout(() => {
      // The timer's own time, which the transport sees as the primary's: the clock fires timers on whole milliseconds.
      const sentAt = performance.now();
      pending.push(
        pipeline.sendRequest(transport, pointRead(eastUs)).then((response) => {
          const diagnostics = getHedgeDiagnostics(response);
          if (diagnostics !== undefined) reads.push({ sentAt, latencyMs: performance.now() - sentAt, diagnostics });
        }),
      );
    }, at - performance.now());
  }
  await clock.tickAsync((sendAt[sendAt.length - 1] ?? 0) - performance.now() + 2_000 + loserDrainDefaults.maxDrainMs);
  await Promise.all(pending);
  return reads.sort((a, b) => a.sentAt - b.sentAt);
}
