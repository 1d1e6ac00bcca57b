import { seededRandom } from "../../src/testing/seededRandom.js";
import { LatencyRecorder } from "./stats.js";

/** How reads arrive: evenly spaced, or as a Poisson process (exponential gaps from a seeded generator). */
export type ArrivalProcess = "fixed" | "poisson";

/** The load an open-loop run offers. */
export interface OpenLoopOptions {
  /** Reads offered per second, whatever the reads already sent are doing. */
  ratePerSecond: number;
  /** Stop offering after this many reads; with `durationMs`, whichever comes first. */
  reads?: number;
  /** Stop offering reads scheduled at or after this many milliseconds from the start. */
  durationMs?: number;
  /** Default `"fixed"`. */
  arrivals?: ArrivalProcess;
  /** Seeds the Poisson gaps, so that every mode of a run meets the same arrival times. Default 1. */
  seed?: number;
  /** Shifts the whole schedule by this many milliseconds (modes sharing one account are staggered so they do not fire in lockstep). */
  offsetMs?: number;
  /**
   * At most this many reads in flight. A read that arrives while the bound is
   * full waits for a slot and is still timed from its scheduled start; the
   * result counts such reads, so a table shows when the generator, not the
   * mode, was the limit.
   */
  maxInFlight: number;
}

/** One read as an open-loop run timed it. */
export interface OpenLoopRead<T> {
  index: number;
  /** Milliseconds from the start of the run to the moment the schedule said the read should start. */
  scheduledMs: number;
  /** Milliseconds from the scheduled start to the actual start: the generator's own lag or a wait for the in-flight bound. */
  startLagMs: number;
  /** Milliseconds from the scheduled start to the end: what a caller arriving on schedule waited. */
  latencyMs: number;
  failed: boolean;
  /** What the read returned, when it did not fail. */
  detail: T | undefined;
}

/** What an open-loop run produced. */
export interface OpenLoopResult<T> {
  ratePerSecond: number;
  arrivals: ArrivalProcess;
  /** Every read in the order it completed. */
  reads: OpenLoopRead<T>[];
  /** Latency from the scheduled start of every read, failed ones included. */
  latencies: LatencyRecorder;
  /** How late reads started after their scheduled time. */
  startLag: LatencyRecorder;
  errors: number;
  /** Reads that arrived while `maxInFlight` reads were in flight and had to wait for a slot. */
  boundHits: number;
  /** The most reads in flight at once. */
  peakInFlight: number;
  /** Milliseconds from the start until the last read ended. */
  wallMs: number;
}

function assertPositive(name: string, value: number | undefined, integer: boolean): void {
  if (value === undefined) return;
  if (!(Number.isFinite(value) && value > 0) || (integer && !Number.isInteger(value))) {
    throw new RangeError(`${name} must be a positive ${integer ? "integer" : "finite number"}; got ${value}`);
  }
}

function validate(options: OpenLoopOptions): void {
  assertPositive("ratePerSecond", options.ratePerSecond, false);
  assertPositive("reads", options.reads, true);
  assertPositive("durationMs", options.durationMs, false);
  assertPositive("maxInFlight", options.maxInFlight, true);
  if (options.reads === undefined && options.durationMs === undefined) {
    throw new RangeError("An open-loop run needs reads or durationMs to end; got neither");
  }
  if (options.offsetMs !== undefined && !(Number.isFinite(options.offsetMs) && options.offsetMs >= 0)) {
    throw new RangeError(`offsetMs must be a finite number >= 0; got ${options.offsetMs}`);
  }
  if (options.arrivals !== undefined && options.arrivals !== "fixed" && options.arrivals !== "poisson") {
    throw new RangeError(`arrivals must be "fixed" or "poisson"; got ${String(options.arrivals)}`);
  }
}

/**
 * The scheduled start of each read, in milliseconds from the start of the
 * run, in order. Fixed arrivals are `i / rate` apart; Poisson arrivals have
 * exponential gaps of mean `1 / rate`, drawn from a generator seeded with
 * `seed`, so that a seed always gives the same schedule.
 */
export function arrivalTimes(options: OpenLoopOptions): Generator<number> {
  validate(options);
  return schedule(options);
}

function* schedule(options: OpenLoopOptions): Generator<number> {
  const meanGapMs = 1000 / options.ratePerSecond;
  const offset = options.offsetMs ?? 0;
  const random = seededRandom(options.seed ?? 1);
  let at = 0;
  for (let index = 0; options.reads === undefined || index < options.reads; index++) {
    if (options.arrivals === "poisson") at += -Math.log(1 - random()) * meanGapMs;
    else at = index * meanGapMs;
    if (options.durationMs !== undefined && at >= options.durationMs) return;
    yield offset + at;
  }
}

/**
 * Runs an open-loop load: reads start on the schedule of
 * {@link arrivalTimes}, not when an earlier read has ended, and each is timed
 * from its scheduled start. A closed loop (N workers, each waiting for its
 * read) sends fewer reads exactly while a mode is slow, so its slow period is
 * under-sampled (coordinated omission) and modes end up offered different
 * loads; here every mode given the same options is offered the same reads at
 * the same moments. Bounded in count or time, so a run always ends.
 */
export async function runOpenLoop<T>(
  options: OpenLoopOptions,
  read: (index: number) => Promise<T>,
  onRead?: (read: OpenLoopRead<T>) => void,
): Promise<OpenLoopResult<T>> {
  const arrivals = arrivalTimes(options);
  const result: OpenLoopResult<T> = {
    ratePerSecond: options.ratePerSecond,
    arrivals: options.arrivals ?? "fixed",
    reads: [],
    latencies: new LatencyRecorder(),
    startLag: new LatencyRecorder(),
    errors: 0,
    boundHits: 0,
    peakInFlight: 0,
    wallMs: 0,
  };
  const start = performance.now();
  const elapsed = (): number => performance.now() - start;
  const waiting: { index: number; scheduledMs: number }[] = [];
  let inFlight = 0;
  let nextIndex = 0;
  let next = arrivals.next();

  return new Promise((resolve) => {
    const finishIfDone = (): void => {
      if (next.done === true && inFlight === 0 && waiting.length === 0) {
        result.wallMs = elapsed();
        resolve(result);
      }
    };

    const launch = (index: number, scheduledMs: number): void => {
      inFlight += 1;
      result.peakInFlight = Math.max(result.peakInFlight, inFlight);
      const startLagMs = Math.max(0, elapsed() - scheduledMs);
      result.startLag.record(startLagMs);
      const settle = (failed: boolean, detail: T | undefined): void => {
        inFlight -= 1;
        const latencyMs = elapsed() - scheduledMs;
        const done: OpenLoopRead<T> = { index, scheduledMs, startLagMs, latencyMs, failed, detail };
        result.latencies.record(latencyMs);
        if (failed) result.errors += 1;
        result.reads.push(done);
        onRead?.(done);
        const queued = waiting.shift();
        if (queued !== undefined) launch(queued.index, queued.scheduledMs);
        finishIfDone();
      };
      // A read that throws synchronously is a failed read, not a crashed generator.
      Promise.resolve()
        .then(() => read(index))
        .then(
          (detail) => settle(false, detail),
          () => settle(true, undefined),
        );
    };

    const arrive = (index: number, scheduledMs: number): void => {
      if (inFlight < options.maxInFlight) {
        launch(index, scheduledMs);
        return;
      }
      result.boundHits += 1;
      waiting.push({ index, scheduledMs });
    };

    const tick = (): void => {
      // Every arrival whose time has come starts now, also those a late timer skipped past.
      while (next.done !== true && next.value <= elapsed()) {
        arrive(nextIndex++, next.value);
        next = arrivals.next();
      }
      if (next.done === true) finishIfDone();
      else setTimeout(tick, Math.max(0, next.value - elapsed()));
    };

    tick();
  });
}

/** The load every mode of a case is offered: the rate, the arrival process and the in-flight bound. */
export interface OfferedLoad {
  ratePerSecond: number;
  arrivals: ArrivalProcess;
  seed: number;
  maxInFlight: number;
}

/** The offered load in words, for the line above a table. */
export function describeLoad(load: OfferedLoad): string {
  const arrivals = load.arrivals === "poisson" ? `Poisson arrivals (seed ${load.seed})` : "evenly spaced arrivals";
  return `${load.ratePerSecond} reads/s offered to every mode, ${arrivals}, at most ${load.maxInFlight} reads in flight`;
}
