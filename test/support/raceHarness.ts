import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { FakeTransport } from "./fakeTransport.js";
import { LeakCheck, checkEachTest, useFakeClock } from "./leakCheck.js";

/** What every race test works with: the fake clock, the leak check and the scriptable transport. */
export interface RaceHarness {
  readonly clock: SinonFakeTimers;
  readonly leaks: LeakCheck;
  readonly transport: FakeTransport;
}

/**
 * Gives each test of the enclosing `describe` a fresh fake clock, leak check
 * and fake transport, and fails the test (that test alone) if a timer, a
 * listener or an unhandled rejection is left behind, or a request reached the
 * transport that no test scripted.
 */
export function useRaceHarness(): RaceHarness {
  const current: { clock?: SinonFakeTimers; leaks?: LeakCheck; transport?: FakeTransport } = {};
  beforeEach(() => {
    current.clock = useFakeClock();
    current.leaks = new LeakCheck(current.clock);
    current.transport = new FakeTransport();
  });
  checkEachTest(async () => {
    await current.leaks?.verify();
    assert.deepEqual(current.transport?.unscripted, [], "requests nobody scripted");
  });
  afterEach(() => {
    current.leaks?.dispose();
    current.clock?.restore();
  });
  const required = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("useRaceHarness's values exist only inside a test.");
    return value;
  };
  return {
    get clock() {
      return required(current.clock);
    },
    get leaks() {
      return required(current.leaks);
    },
    get transport() {
      return required(current.transport);
    },
  };
}
