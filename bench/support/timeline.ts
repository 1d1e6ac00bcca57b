import { performance } from "node:perf_hooks";
import { LatencyRecorder } from "./stats.js";

/** What one read reports about itself. */
export interface ReadDetail {
  /** The region whose answer the caller got. */
  region: string | undefined;
  /** Request units of every arm that answered, losers included. */
  charge: number;
  /** Requests beyond the first that this read sent. */
  extraRequests: number;
}

/** A read as a timeline records it. */
export interface TimedRead extends ReadDetail {
  /** Seconds from the start of the timeline. */
  second: number;
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

/** A mode's read operation, run over and over by its workers. */
export interface TimelineMode {
  name: string;
  read: (index: number) => Promise<ReadDetail>;
}

/** Everything one mode did over the timeline. */
export interface ModeTimeline {
  name: string;
  reads: TimedRead[];
  latencies: LatencyRecorder;
}

/**
 * Runs every mode at once against the same account for the length of the
 * phases, so that all modes meet the same faults at the same moments and a
 * noisy machine slows them alike. Bounded in time: it stops by itself.
 */
export async function runTimeline(
  modes: readonly TimelineMode[],
  phases: readonly Phase[],
  options: { concurrencyPerMode: number; onSecond?: (second: number, phase: string, timelines: readonly ModeTimeline[]) => void },
): Promise<ModeTimeline[]> {
  const totalSeconds = phases.reduce((sum, phase) => sum + phase.seconds, 0);
  const timelines: ModeTimeline[] = modes.map((mode) => ({ name: mode.name, reads: [], latencies: new LatencyRecorder() }));
  const start = performance.now();
  const elapsedSeconds = (): number => (performance.now() - start) / 1000;
  let running = true;

  const worker = async (mode: TimelineMode, timeline: ModeTimeline, offset: number): Promise<void> => {
    let index = offset;
    while (running) {
      const began = performance.now();
      const second = (began - start) / 1000;
      try {
        const detail = await mode.read(index);
        const latencyMs = performance.now() - began;
        timeline.latencies.record(latencyMs);
        timeline.reads.push({ ...detail, second, latencyMs, failed: false });
      } catch {
        timeline.reads.push({ region: undefined, charge: 0, extraRequests: 0, second, latencyMs: performance.now() - began, failed: true });
      }
      index += options.concurrencyPerMode;
    }
  };

  const workers = modes.flatMap((mode, m) =>
    Array.from({ length: options.concurrencyPerMode }, (_, w) => worker(mode, timelines[m]!, w)),
  );

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
  running = false;
  await Promise.all(workers);
  return timelines;
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
