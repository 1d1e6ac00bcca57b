import { strict as assert } from "node:assert";
import sinon from "sinon";
import type { SinonFakeTimers } from "sinon";
import { arrivalTimes, runOpenLoop } from "../../../bench/support/openLoop.js";
import type { OpenLoopRead } from "../../../bench/support/openLoop.js";
import { runUntilIdle } from "../../support/clockDriver.js";

describe("the benchmarks' open-loop load generator", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = sinon.useFakeTimers({ toNotFake: ["nextTick", "queueMicrotask"] });
  });

  afterEach(() => {
    clock.restore();
  });

  /** A read that takes `ms` fake milliseconds and reports when it started. */
  const takes = (ms: number) => (): Promise<number> => {
    const startedAt = performance.now();
    return new Promise((resolve) => setTimeout(() => resolve(startedAt), ms));
  };

  async function drive<T>(run: Promise<T>, limitMs = 60_000): Promise<T> {
    await runUntilIdle(clock, limitMs);
    return run;
  }

  const byIndex = <T>(reads: readonly OpenLoopRead<T>[]): OpenLoopRead<T>[] => [...reads].sort((a, b) => a.index - b.index);

  it("starts each read at its scheduled time, whatever the reads in flight are doing", async () => {
    // Every read takes 45 ms, far longer than the 10 ms between arrivals: a closed loop with one worker would start them 45 ms apart.
    const result = await drive(runOpenLoop({ ratePerSecond: 100, reads: 6, maxInFlight: 100 }, takes(45)));
    const reads = byIndex(result.reads);
    assert.deepEqual(reads.map((read) => read.detail), [0, 10, 20, 30, 40, 50]);
    assert.deepEqual(reads.map((read) => read.scheduledMs), [0, 10, 20, 30, 40, 50]);
    assert.deepEqual(reads.map((read) => read.latencyMs), [45, 45, 45, 45, 45, 45]);
    assert.equal(result.peakInFlight, 5);
    assert.equal(result.boundHits, 0);
    assert.equal(result.latencies.summary().count, 6);
  });

  it("times a read that started late from its scheduled start, not from when a slot got free", async () => {
    // One slot, reads of 25 ms every 10 ms: read 1 is due at 10 ms but can start only at 25 ms.
    const result = await drive(runOpenLoop({ ratePerSecond: 100, reads: 3, maxInFlight: 1 }, takes(25)));
    const reads = byIndex(result.reads);
    assert.deepEqual(reads.map((read) => read.detail), [0, 25, 50]);
    assert.deepEqual(reads.map((read) => read.startLagMs), [0, 15, 30]);
    assert.deepEqual(reads.map((read) => read.latencyMs), [25, 40, 55]);
    assert.equal(result.latencies.summary().max, 55);
    assert.equal(result.startLag.summary().max, 30);
  });

  it("never has more reads in flight than the bound, and counts every read that had to wait for it", async () => {
    let inFlight = 0;
    let most = 0;
    const read = async (): Promise<void> => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 100));
      inFlight -= 1;
    };
    const bounded = await drive(runOpenLoop({ ratePerSecond: 100, reads: 10, maxInFlight: 2 }, read));
    assert.equal(most, 2);
    assert.equal(bounded.peakInFlight, 2);
    assert.equal(bounded.boundHits, 8);
    assert.equal(bounded.reads.length, 10);
    // Slots free at 100, 110, 200, 210, ...: the last read, due at 90 ms, starts at 410 ms and ends at 510 ms.
    assert.equal(byIndex(bounded.reads)[9]?.startLagMs, 320);
    assert.equal(byIndex(bounded.reads)[9]?.latencyMs, 420);

    most = 0;
    const roomy = await drive(runOpenLoop({ ratePerSecond: 100, reads: 10, maxInFlight: 10 }, read));
    assert.equal(roomy.boundHits, 0);
    assert.equal(roomy.peakInFlight, 10);
  });

  it("draws the same Poisson schedule from the same seed, with gaps of mean 1 / rate", () => {
    const options = { ratePerSecond: 200, reads: 5000, arrivals: "poisson" as const, seed: 42, maxInFlight: 1 };
    const first = [...arrivalTimes(options)];
    assert.deepEqual([...arrivalTimes(options)], first);
    assert.notDeepEqual([...arrivalTimes({ ...options, seed: 43 })], first);
    assert.equal(first.length, 5000);
    const gaps = first.slice(1).map((at, i) => at - first[i]!);
    const mean = gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length;
    assert.ok(Math.abs(mean - 5) < 0.25, `mean gap ${mean} ms, expected about 5 ms`);
    // Exponential gaps: about e^-2 (13.5 %) of them exceed twice the mean; evenly spaced arrivals have none.
    const long = gaps.filter((gap) => gap > 10).length / gaps.length;
    assert.ok(long > 0.11 && long < 0.16, `share of gaps above 10 ms: ${long}`);
  });

  it("starts Poisson reads at the seeded arrival times", async () => {
    const options = { ratePerSecond: 50, reads: 20, arrivals: "poisson" as const, seed: 7, maxInFlight: 100 };
    const expected = [...arrivalTimes(options)].map((at) => Math.ceil(at));
    const result = await drive(runOpenLoop(options, takes(1)));
    // Fake timers fire on whole milliseconds, so a read starts at the first millisecond at or after its arrival.
    assert.deepEqual(byIndex(result.reads).map((read) => read.detail), expected);
  });

  it("stops offering reads at the duration and shifts the schedule by the offset", async () => {
    const result = await drive(runOpenLoop({ ratePerSecond: 100, durationMs: 50, offsetMs: 3, maxInFlight: 10 }, takes(1)));
    assert.deepEqual(byIndex(result.reads).map((read) => read.detail), [3, 13, 23, 33, 43]);
    assert.equal(result.wallMs, 44);
  });

  it("times and counts failed reads, those that throw at once included", async () => {
    const result = await drive(
      runOpenLoop({ ratePerSecond: 100, reads: 4, maxInFlight: 10 }, (index) => {
        if (index === 1) throw new Error("synchronous");
        if (index === 2) return new Promise((_, reject) => setTimeout(() => reject(new Error("late")), 30));
        return takes(5)();
      }),
    );
    const reads = byIndex(result.reads);
    assert.equal(result.errors, 2);
    assert.deepEqual(reads.map((read) => read.failed), [false, true, true, false]);
    assert.deepEqual(reads.map((read) => read.latencyMs), [5, 0, 30, 5]);
  });

  it("rejects bad options with the option's name and value, before any read", async () => {
    let reads = 0;
    const read = async (): Promise<void> => {
      reads += 1;
    };
    await assert.rejects(runOpenLoop({ ratePerSecond: 0, reads: 1, maxInFlight: 1 }, read), /ratePerSecond must be a positive finite number; got 0/);
    await assert.rejects(runOpenLoop({ ratePerSecond: 10, reads: 1.5, maxInFlight: 1 }, read), /reads must be a positive integer; got 1.5/);
    await assert.rejects(runOpenLoop({ ratePerSecond: 10, reads: 1, maxInFlight: 0 }, read), /maxInFlight must be a positive integer; got 0/);
    await assert.rejects(runOpenLoop({ ratePerSecond: 10, maxInFlight: 1 }, read), /needs reads or durationMs/);
    await assert.rejects(runOpenLoop({ ratePerSecond: 10, reads: 1, maxInFlight: 1, offsetMs: -1 }, read), /offsetMs must be a finite number >= 0; got -1/);
    assert.throws(() => arrivalTimes({ ratePerSecond: 10, reads: 1, maxInFlight: 1, arrivals: "burst" as "fixed" }), /arrivals must be "fixed" or "poisson"; got burst/);
    assert.equal(reads, 0);
  });
});
