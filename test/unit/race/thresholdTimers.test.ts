import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { ThresholdTimers } from "../../../src/race/thresholdTimers.js";
import type { WaitingRead } from "../../../src/race/thresholdTimers.js";
import { useFakeClock } from "../../support/leakCheck.js";

/** A read that notes when its threshold passed, by the fake clock. */
function read(thresholdMs: number, passedAt: Map<string, number>, name: string, onPassed?: () => void): WaitingRead {
  return {
    startedAt: performance.now(),
    thresholdMs,
    thresholdPassed() {
      passedAt.set(name, performance.now());
      onPassed?.();
    },
    waitingIn: undefined,
    waitingBefore: undefined,
    waitingAfter: undefined,
  };
}

describe("ThresholdTimers", function () {
  let clock: SinonFakeTimers;

  beforeEach(function () {
    clock = useFakeClock();
  });

  afterEach(function () {
    clock.restore();
  });

  it("tells each read of a threshold when its own threshold has passed, in the order they started, under one timer", function () {
    const timers = new ThresholdTimers();
    const passed = new Map<string, number>();
    timers.add(read(100, passed, "a"));
    clock.tick(30);
    timers.add(read(100, passed, "b"));
    clock.tick(5);
    timers.add(read(100, passed, "c"));
    assert.equal(clock.countTimers(), 1, "one timer for the three");
    clock.tick(64);
    assert.deepEqual([...passed], [], "not a millisecond early");
    clock.tick(1);
    assert.deepEqual([...passed], [["a", 100]]);
    clock.tick(30);
    assert.deepEqual([...passed], [["a", 100], ["b", 130]]);
    clock.tick(5);
    assert.deepEqual([...passed], [["a", 100], ["b", 130], ["c", 135]]);
    assert.equal(clock.countTimers(), 0, "nothing left once the last has passed");
  });

  it("never tells a read that left before its threshold, and clears the timer when the last read leaves", function () {
    const timers = new ThresholdTimers();
    const passed = new Map<string, number>();
    const a = read(100, passed, "a");
    const b = read(100, passed, "b");
    const c = read(100, passed, "c");
    timers.add(a);
    timers.add(b);
    timers.add(c);
    timers.remove(b);
    timers.remove(b);
    timers.remove(a);
    clock.tick(100);
    assert.deepEqual([...passed], [["c", 100]], "the middle and the first left");
    const d = read(100, passed, "d");
    timers.add(d);
    timers.remove(d);
    assert.equal(clock.countTimers(), 0, "the last read leaving takes the timer with it");
    clock.tick(1000);
    assert.equal(passed.has("d"), false);
  });

  it("keeps reads of different thresholds apart, each by its own timer", function () {
    const timers = new ThresholdTimers();
    const passed = new Map<string, number>();
    timers.add(read(500, passed, "slow"));
    timers.add(read(50, passed, "fast"));
    assert.equal(clock.countTimers(), 2);
    clock.tick(50);
    assert.deepEqual([...passed], [["fast", 50]]);
    clock.tick(450);
    assert.deepEqual([...passed], [["fast", 50], ["slow", 500]]);
  });

  it("does not tell a read that an earlier one's turn ended, and goes on with the rest", function () {
    const timers = new ThresholdTimers();
    const passed = new Map<string, number>();
    const b = read(100, passed, "b");
    timers.add(read(100, passed, "a", () => timers.remove(b)));
    timers.add(b);
    clock.tick(1);
    const c = read(100, passed, "c");
    timers.add(c);
    clock.tick(99);
    assert.deepEqual([...passed], [["a", 100]], "a ended b's wait as it was told");
    clock.tick(1);
    assert.deepEqual([...passed], [["a", 100], ["c", 101]]);
    assert.equal(clock.countTimers(), 0);
  });

  it("still tells the reads behind one whose threshold handling threw, as a timer of each read's own would", function () {
    const timers = new ThresholdTimers();
    const passed = new Map<string, number>();
    timers.add(
      read(100, passed, "a", () => {
        throw new Error("a's threshold handling failed");
      }),
    );
    clock.tick(10);
    timers.add(read(100, passed, "b"));
    assert.throws(() => clock.tick(90), /a's threshold handling failed/);
    clock.tick(10);
    assert.equal(passed.get("b"), 110);
    assert.equal(clock.countTimers(), 0);
  });

  it("waits again for a read added after the others had all passed", function () {
    const timers = new ThresholdTimers();
    const passed = new Map<string, number>();
    timers.add(read(100, passed, "a"));
    clock.tick(100);
    clock.tick(50);
    timers.add(read(100, passed, "b"));
    clock.tick(99);
    assert.equal(passed.has("b"), false);
    clock.tick(1);
    assert.equal(passed.get("b"), 250);
  });
  it("sets its one timer for the first read's threshold, and after a turn for the next one's, never earlier: no timer goes off for nothing", function () {
    clock.tick(1_000);
    const timers = new ThresholdTimers();
    const passed = new Map<string, number>();
    timers.add(read(100, passed, "a"));
    assert.equal(clock.next(), 1_100, "the first timer goes off at a's threshold");
    assert.deepEqual([...passed], [["a", 1_100]]);
    timers.add(read(100, passed, "b"));
    clock.tick(40);
    timers.add(read(100, passed, "c"));
    assert.equal(clock.next(), 1_200, "a list emptied and waited on again: its timer at b's threshold");
    assert.equal(clock.next(), 1_240, "the next at c's, not at once");
    assert.deepEqual([...passed], [["a", 1_100], ["b", 1_200], ["c", 1_240]]);
    assert.equal(clock.countTimers(), 0);
  });

  it("keeps one timer when a read told of its threshold starts another's wait of the same threshold", function () {
    const timers = new ThresholdTimers();
    const passed = new Map<string, number>();
    timers.add(
      read(100, passed, "a", () => {
        timers.add(read(100, passed, "b"));
      }),
    );
    timers.add(read(100, passed, "c"));
    clock.tick(100);
    assert.deepEqual([...passed.keys()], ["a", "c"]);
    assert.equal(clock.countTimers(), 1, "b's wait under the one timer its add set, not a second set as the turn ended");
    clock.tick(100);
    assert.deepEqual([...passed.keys()], ["a", "c", "b"]);
    assert.equal(clock.countTimers(), 0);
  });
});
