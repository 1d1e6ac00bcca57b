import assert from "node:assert/strict";
import sinon from "sinon";
import type { SinonFakeTimers } from "sinon";

// Captured before any test installs fake timers: flushing pending rejection
// reports needs a real turn of the event loop.
const realSetImmediate = globalThis.setImmediate;

function realTurn(): Promise<void> {
  return new Promise((resolve) => realSetImmediate(resolve));
}

/**
 * Installs sinon fake timers for a hedging test: timers, `Date` and
 * `performance` only. `process.nextTick`, `queueMicrotask` and
 * `setImmediate` stay real, because code outside the test (Node's fs and
 * streams, the test runner's loader) queues work on them that must not
 * stall until the next tick of the fake clock.
 */
export function useFakeClock(): SinonFakeTimers {
  return sinon.useFakeTimers({
    toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date", "performance"],
  });
}

interface TrackedSignal {
  readonly signal: AbortSignal;
  readonly label: string;
  readonly listeners: Set<unknown>;
}

/**
 * Watches one test for what a race must never leave behind: a pending fake
 * timer, an abort listener still registered on a caller's signal, or an
 * unhandled promise rejection. Create it after installing the fake clock and
 * call {@link LeakCheck.verify} after the test.
 */
export class LeakCheck {
  private readonly signals: TrackedSignal[] = [];
  private readonly rejections: unknown[] = [];
  private readonly onUnhandled = (reason: unknown): void => {
    this.rejections.push(reason);
  };
  private stopped = false;

  constructor(private readonly clock: SinonFakeTimers) {
    process.on("unhandledRejection", this.onUnhandled);
  }

  /**
   * A caller's abort controller whose signal counts the `abort` listeners
   * registered on it and not removed. A `once` listener counts as removed
   * when the signal fires, as the platform removes it then.
   */
  controller(label = "caller signal"): AbortController {
    const controller = new AbortController();
    this.track(controller.signal, label);
    return controller;
  }

  /** Starts counting the `abort` listeners of an existing signal. */
  track(signal: AbortSignal, label = "caller signal"): AbortSignal {
    const listeners = new Set<unknown>();
    const onceListeners = new Set<unknown>();
    type Add = (type: string, listener: unknown, options?: unknown) => void;
    const add = signal.addEventListener.bind(signal) as Add;
    const remove = signal.removeEventListener.bind(signal) as Add;
    add("abort", () => {
      for (const listener of onceListeners) listeners.delete(listener);
      onceListeners.clear();
    });
    const tracked: { addEventListener: Add; removeEventListener: Add } = {
      addEventListener(type, listener, options) {
        if (type === "abort" && listener !== null) {
          listeners.add(listener);
          if (typeof options === "object" && options !== null && (options as { once?: unknown }).once === true) {
            onceListeners.add(listener);
          }
        }
        add(type, listener, options);
      },
      removeEventListener(type, listener, options) {
        if (type === "abort") {
          listeners.delete(listener);
          onceListeners.delete(listener);
        }
        remove(type, listener, options);
      },
    };
    Object.assign(signal, tracked);
    this.signals.push({ signal, label, listeners });
    return signal;
  }

  /** How many `abort` listeners are registered on a tracked signal right now. */
  listenerCount(signal: AbortSignal): number {
    const tracked = this.signals.find((entry) => entry.signal === signal);
    if (tracked === undefined) throw new Error("listenerCount: the signal is not tracked.");
    return tracked.listeners.size;
  }

  /** Unhandled rejections seen so far in this test. */
  get unhandledRejections(): readonly unknown[] {
    return this.rejections;
  }

  /**
   * Asserts that nothing leaked, then stops listening. Waits one real turn
   * of the event loop first, because Node reports an unhandled rejection only
   * after the microtask queue drains.
   */
  async verify(): Promise<void> {
    if (this.stopped) return;
    try {
      await realTurn();
      await realTurn();
      assert.deepEqual(this.rejections, [], "unhandled promise rejections during the test");
      assert.equal(this.clock.countTimers(), 0, "fake timers still pending after the test");
      for (const signal of this.signals) {
        assert.equal(signal.listeners.size, 0, `abort listeners left on ${signal.label}`);
      }
    } finally {
      this.dispose();
    }
  }

  /** Stops listening without asserting anything: for a test that failed before it could be verified. */
  dispose(): void {
    this.stopped = true;
    process.off("unhandledRejection", this.onUnhandled);
  }
}

const checked = new WeakSet<object>();

/**
 * Runs `check` at the end of each test of the enclosing `describe`, as part
 * of the test itself, so that a failed check (a leak) fails that test alone.
 * Mocha skips the rest of a `describe` when one of its `afterEach` hooks
 * fails: a check made there would hide every failure after the first. The
 * check runs only after a test body that passed (a failing body has already
 * failed its test); clean-up that must always run belongs in an `afterEach`
 * that cannot throw.
 */
export function checkEachTest(check: () => Promise<void> | void): void {
  beforeEach(function () {
    const test = this.currentTest;
    const body = test?.fn;
    if (test === undefined || body === undefined || checked.has(body)) return;
    // Mocha decides from a test function's arity, when the test is made, whether it takes a `done` callback: keep the arity.
    const wrapped: Mocha.Func | Mocha.AsyncFunc =
      body.length > 0
        ? function (this: Mocha.Context, done: Mocha.Done): void {
            (body as Mocha.Func).call(this, (error?: unknown) => {
              if (error !== undefined && error !== null) done(error);
              else Promise.resolve().then(check).then(() => done(), done);
            });
          }
        : async function (this: Mocha.Context): Promise<void> {
            await (body as Mocha.AsyncFunc).call(this);
            await check();
          };
    checked.add(wrapped);
    test.fn = wrapped;
  });
}
