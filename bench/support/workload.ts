import { performance } from "node:perf_hooks";
import { LatencyRecorder } from "./stats.js";

/** One completed operation of a workload. */
export interface Sample {
  /** Milliseconds from the start of the workload to the start of the operation. */
  startedAt: number;
  /** The operation's latency in milliseconds. */
  latencyMs: number;
  /** Whatever the operation reports about itself (for example the serving region). */
  detail?: unknown;
}

/** What running a workload produced. */
export interface WorkloadResult {
  latencies: LatencyRecorder;
  samples: Sample[];
  errors: number;
  wallMs: number;
}

/**
 * Runs `total` operations with `concurrency` in flight at once. Bounded in
 * count, so a benchmark always ends by itself.
 */
export async function runWorkload(
  total: number,
  concurrency: number,
  operation: (index: number) => Promise<unknown>,
  onProgress?: (done: number) => void,
): Promise<WorkloadResult> {
  const latencies = new LatencyRecorder();
  const samples: Sample[] = [];
  let next = 0;
  let done = 0;
  let errors = 0;
  const start = performance.now();
  const worker = async (): Promise<void> => {
    while (next < total) {
      const index = next++;
      const began = performance.now();
      let detail: unknown;
      try {
        detail = await operation(index);
      } catch {
        errors += 1;
      }
      const latencyMs = performance.now() - began;
      latencies.record(latencyMs);
      samples.push({ startedAt: began - start, latencyMs, detail });
      done += 1;
      onProgress?.(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return { latencies, samples, errors, wallMs: performance.now() - start };
}
