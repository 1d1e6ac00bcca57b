import type { OfferedLoad, OpenLoopResult } from "./openLoop.js";
import { runOpenLoop } from "./openLoop.js";
import { LatencyRecorder } from "./stats.js";

/** What one read reports about itself. */
export interface ReadDetail {
  /** The region whose answer the caller got. */
  region: string | undefined;
  /** Request units of every arm that answered, losers included. */
  charge: number;
  /** Requests beyond the first that this read sent. */
  extraRequests: number;
  /** Whether the hedge budget refused a hedge of this read. */
  refused?: boolean;
  /** The threshold the hedging policy chose for this read, in milliseconds, and where it came from. */
  threshold?: { readonly ms: number; readonly source: string };
}

/** A read as a timeline records it. */
export interface TimedRead extends ReadDetail {
  /** Seconds from the start of the timeline to the read's scheduled start. */
  second: number;
  /** From the scheduled start to the answer. */
  latencyMs: number;
  failed: boolean;
}

/** A stretch of the timeline during which the account behaves one way. */
export interface Phase {
  label: string;
  seconds: number;
  /** Changes the account at the start of the phase; returns what undoes it at the end. */
  begin?: () => () => void;
  /** Whether charts shade this phase as a fault window. */
  fault?: boolean;
}

/** A mode's read operation, started on the offered schedule. */
export interface TimelineMode {
  name: string;
  read: (index: number) => Promise<ReadDetail>;
}

/** What one mode has done so far. */
export interface ModeTimeline {
  name: string;
  /** Every read that has ended, in the order they ended. */
  reads: TimedRead[];
}

/** Everything one mode did over the timeline. */
export interface FinishedTimeline extends ModeTimeline {
  /** The open-loop run: latency from the scheduled start of every read, in-flight bound hits, start lag. */
  load: OpenLoopResult<ReadDetail>;
}

/**
 * Runs every mode at once against the same account for the length of the
 * phases, each offered the same open-loop load (the same arrival times,
 * staggered by a fraction of the mean gap so the modes do not fire in
 * lockstep), so that all modes meet the same faults at the same moments with
 * the same number of reads. Bounded in time: it stops by itself.
 */
export async function runTimeline(
  modes: readonly TimelineMode[],
  phases: readonly Phase[],
  options: { load: OfferedLoad; onSecond?: (second: number, phase: string, timelines: readonly ModeTimeline[]) => void },
): Promise<FinishedTimeline[]> {
  const totalSeconds = phases.reduce((sum, phase) => sum + phase.seconds, 0);
  const timelines: ModeTimeline[] = modes.map((mode) => ({ name: mode.name, reads: [] }));
  const start = performance.now();
  const elapsedSeconds = (): number => (performance.now() - start) / 1000;
  const staggerMs = 1000 / options.load.ratePerSecond / Math.max(1, modes.length);

  const runs = modes.map((mode, m) => {
    const timeline = timelines[m]!;
    return runOpenLoop({ ...options.load, durationMs: totalSeconds * 1000, offsetMs: m * staggerMs }, mode.read, (read) => {
      const detail = read.detail ?? { region: undefined, charge: 0, extraRequests: 0 };
      timeline.reads.push({ ...detail, second: read.scheduledMs / 1000, latencyMs: read.latencyMs, failed: read.failed });
    }).then((load): FinishedTimeline => ({ ...timeline, load }));
  });

  let phaseStart = 0;
  for (const phase of phases) {
    const undo = phase.begin?.();
    const phaseEnd = phaseStart + phase.seconds;
    while (elapsedSeconds() < phaseEnd) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, Math.max(10, (phaseEnd - elapsedSeconds()) * 1000))));
      options.onSecond?.(Math.min(totalSeconds, elapsedSeconds()), phase.label, timelines);
    }
    undo?.();
    phaseStart = phaseEnd;
  }
  return Promise.all(runs);
}

/** The fault windows of a timeline, for shading charts. */
export function faultWindows(phases: readonly Phase[]): { label: string; fromSeconds: number; toSeconds: number }[] {
  const windows: { label: string; fromSeconds: number; toSeconds: number }[] = [];
  let at = 0;
  for (const phase of phases) {
    if (phase.fault) windows.push({ label: phase.label, fromSeconds: at, toSeconds: at + phase.seconds });
    at += phase.seconds;
  }
  return windows;
}

/** Per-second percentile of each mode's latency, for time charts. */
export function perSecondPercentile(
  timelines: readonly ModeTimeline[],
  percentile: number,
): { second: number; series: string; value: number }[] {
  const values: { second: number; series: string; value: number }[] = [];
  for (const timeline of timelines) {
    const buckets = new Map<number, LatencyRecorder>();
    for (const read of timeline.reads) {
      const second = Math.floor(read.second);
      const bucket = buckets.get(second) ?? new LatencyRecorder();
      bucket.record(read.latencyMs);
      buckets.set(second, bucket);
    }
    for (const [second, bucket] of [...buckets].sort((a, b) => a[0] - b[0])) {
      values.push({ second, series: timeline.name, value: Math.max(0.1, bucket.valueAt(percentile)) });
    }
  }
  return values;
}

/** A figure per mode and second, over the reads scheduled in that second: their sum (per second) or their mean (per read). */
export function perSecond(
  timelines: readonly ModeTimeline[],
  value: (read: TimedRead) => number,
  aggregate: "sum" | "mean",
): { second: number; series: string; value: number }[] {
  return timelines.flatMap((timeline) => {
    const buckets = new Map<number, { sum: number; count: number }>();
    for (const read of timeline.reads) {
      const bucket = buckets.get(Math.floor(read.second)) ?? { sum: 0, count: 0 };
      bucket.sum += value(read);
      bucket.count += 1;
      buckets.set(Math.floor(read.second), bucket);
    }
    return [...buckets]
      .sort((a, b) => a[0] - b[0])
      .map(([second, { sum, count }]) => ({ second, series: timeline.name, value: aggregate === "sum" ? sum : sum / count }));
  });
}
