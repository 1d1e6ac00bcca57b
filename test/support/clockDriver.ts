import type { SinonFakeTimers } from "sinon";

// Captured at load, before any test installs a fake clock.
const realSetImmediate = globalThis.setImmediate;

/** One real turn of the event loop: every pending promise callback runs before it ends. */
export function realTurn(): Promise<void> {
  return new Promise((resolve) => realSetImmediate(resolve));
}

/**
 * Fires the fake clock's timers one at a time, in order, with a real turn of
 * the event loop after each so that the promise chains a timer starts settle
 * before the next timer fires. Unlike `clock.tickAsync`, which waits a real
 * `setTimeout` (about a millisecond) per timer, this costs microseconds per
 * timer, so thousands of concurrent requests can be driven in a second.
 * Stops when no timer is left.
 * @param limitMs - fake milliseconds after which a timer still pending is a failure (a request that never ends).
 */
export async function runUntilIdle(clock: SinonFakeTimers, limitMs: number): Promise<void> {
  const deadline = clock.now + limitMs;
  await realTurn();
  while (clock.countTimers() > 0) {
    const firing = clock.next();
    if (firing > deadline) throw new Error(`Fake timers were still pending ${limitMs} ms after the start: something never ends.`);
    await realTurn();
  }
}
