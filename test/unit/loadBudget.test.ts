import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import type { HedgeLoadBudgetOptions } from "../../src/hedging/loadBudget.js";
import { LoadBudget, loadBudgetDefaults, resolveLoadBudget } from "../../src/hedging/loadBudget.js";
import { useFakeClock } from "../support/leakCheck.js";

describe("LoadBudget", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  function budget(options: HedgeLoadBudgetOptions = {}): LoadBudget {
    return new LoadBudget(resolveLoadBudget(options));
  }

  /** Withdraws (and releases) until refused; returns how many hedges got through. */
  function drain(target: LoadBudget, limit = 10_000): number {
    let granted = 0;
    while (granted < limit && target.tryWithdraw()) {
      target.release();
      granted += 1;
    }
    return granted;
  }

  describe("resolveLoadBudget", () => {
    it("rejects a misspelt option, naming it", () => {
      assert.throws(
        () => resolveLoadBudget({ maxInFlight: 10 } as HedgeLoadBudgetOptions),
        (error: unknown) => error instanceof TypeError && /budget has no option "maxInFlight"/.test(error.message),
      );
    });

    it("defaults to a 15 % share, 1 hedge a second, 100 in flight, over 10 seconds", () => {
      assert.deepEqual(resolveLoadBudget({}), { maxExtraLoad: 0.15, minHedgesPerSecond: 1, maxHedgesInFlight: 100, windowMs: 10_000 });
      assert.equal(loadBudgetDefaults.maxExtraLoad, 0.15);
    });

    it("never defaults below the adaptive threshold's share, and an explicit share wins", () => {
      assert.equal(resolveLoadBudget({}, 0.05).maxExtraLoad, 0.15);
      assert.equal(resolveLoadBudget({}, 0.3).maxExtraLoad, 0.3);
      assert.equal(resolveLoadBudget({ maxExtraLoad: 0.02 }, 0.3).maxExtraLoad, 0.02);
    });

    const bad: ReadonlyArray<readonly [HedgeLoadBudgetOptions, string, string]> = [
      [{ maxExtraLoad: 0 }, "budget.maxExtraLoad", "got 0"],
      [{ maxExtraLoad: 1.5 }, "budget.maxExtraLoad", "got 1.5"],
      [{ maxExtraLoad: Number.NaN }, "budget.maxExtraLoad", "got NaN"],
      [{ minHedgesPerSecond: -1 }, "budget.minHedgesPerSecond", "got -1"],
      [{ minHedgesPerSecond: Number.POSITIVE_INFINITY }, "budget.minHedgesPerSecond", "got Infinity"],
      [{ maxHedgesInFlight: 0 }, "budget.maxHedgesInFlight", "got 0"],
      [{ maxHedgesInFlight: 2.5 }, "budget.maxHedgesInFlight", "got 2.5"],
    ];
    for (const [options, option, shown] of bad) {
      it(`${JSON.stringify(options)} is a RangeError naming ${option} and the value`, () => {
        assert.throws(
          () => resolveLoadBudget(options),
          (error: unknown) => {
            assert.ok(error instanceof RangeError, String(error));
            assert.ok(error.message.startsWith(`${option} `), error.message);
            assert.ok(error.message.includes(shown), error.message);
            return true;
          },
        );
      });
    }

    it("options that are not an object are a TypeError naming budget", () => {
      assert.throws(() => resolveLoadBudget("lots" as unknown as HedgeLoadBudgetOptions), /^TypeError: budget must be false or an options object; got "lots"/);
    });
  });

  it("a quiet client still hedges: the reserve is minHedgesPerSecond for every second of the window", () => {
    const target = budget();
    assert.equal(target.balance, 10);
    assert.equal(drain(target), 10);
    assert.equal(target.refusals, 1);
  });

  it("each request deposits maxExtraLoad and each hedge withdraws 1", () => {
    const target = budget({ maxExtraLoad: 0.1, minHedgesPerSecond: 0 });
    assert.equal(target.tryWithdraw(), false, "nothing deposited, no reserve");
    for (let i = 0; i < 100; i++) target.deposit();
    assert.ok(Math.abs(target.balance - 10) < 1e-9);
    assert.equal(drain(target), 10);
    assert.equal(target.tryWithdraw(), false);
  });

  it("bounds the hedges of a steady stream of slow requests to the share plus the reserve", async () => {
    const target = budget({ maxExtraLoad: 0.05, minHedgesPerSecond: 1 });
    let requests = 0;
    let hedges = 0;
    // 100 requests a second for a minute, every one of which would hedge.
    for (let second = 0; second < 60; second++) {
      for (let i = 0; i < 100; i++) {
        requests += 1;
        target.deposit();
        if (target.tryWithdraw()) {
          hedges += 1;
          target.release();
        }
        await clock.tickAsync(10);
      }
    }
    // Share: 5 % of 6000 = 300; reserve: at most 1 a second over the minute plus the first window's 10.
    assert.ok(hedges <= 300 + 60 + 10, `${hedges} hedges for ${requests} requests`);
    assert.ok(hedges >= 300, `the budget hands out what it allows: ${hedges}`);
  });

  describe("the floor is a minimum of the window's budget, not an addition to the share", () => {
    /**
     * Offers `perSecond` requests a second for `seconds`, evenly spaced, every one of
     * which asks for a hedge (as when every region is slow); returns the hedges granted.
     */
    async function everyRequestAsks(target: LoadBudget, perSecond: number, seconds: number): Promise<{ requests: number; hedges: number }> {
      const gapMs = 1000 / perSecond;
      let requests = 0;
      let hedges = 0;
      for (let i = 0; i < perSecond * seconds; i++) {
        requests += 1;
        target.deposit();
        if (target.tryWithdraw()) {
          hedges += 1;
          target.release();
        }
        await clock.tickAsync(gapMs);
      }
      return { requests, hedges };
    }

    it("at 30 requests a second for 10 s with a 15 % share, at most 45 hedges, not 45 + 10 of floor", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      const { requests, hedges } = await everyRequestAsks(target, 30, 10);
      assert.equal(requests, 300);
      assert.equal(hedges, 45);
    });

    it("a busy client's floor is spent by its first hedges, not granted again on top of them", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      for (let i = 0; i < 10; i++) target.deposit();
      assert.equal(drain(target), 10, "the floor: 10 hedges before the share covers one");
      // 10 requests have deposited 1.5; the floor of 10 is already spent, so the share must reach 11 before the next hedge.
      for (let i = 0; i < 63; i++) target.deposit();
      assert.equal(target.tryWithdraw(), false, "73 requests deposit 10.95: still short of the 11th hedge");
      target.deposit();
      assert.equal(target.tryWithdraw(), true, "74 requests deposit 11.1: the 11th hedge");
    });

    it("at 30 requests a second for a minute, every one asking, hedges stay within the share of the requests", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      const { requests, hedges } = await everyRequestAsks(target, 30, 60);
      assert.equal(requests, 1800);
      assert.ok(hedges <= 0.15 * requests, `${hedges} hedges for ${requests} requests`);
      assert.ok(hedges >= 0.15 * requests - 6, `the budget hands out what it allows: ${hedges}`);
    });

    it("at 0.5 requests a second the floor still lets every request hedge", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      const { requests, hedges } = await everyRequestAsks(target, 0.5, 60);
      assert.equal(requests, 30);
      assert.equal(hedges, 30);
      assert.equal(target.refusals, 0);
    });

    it("whichever is more decides: the floor below minHedgesPerSecond / maxExtraLoad requests a second, the share above", async () => {
      // 1 / 0.15 = 6.7 requests a second: at 5 the floor's 10 hedges a window decide, at 10 the share's 15.
      const quiet = await everyRequestAsks(budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 }), 5, 10);
      assert.deepEqual(quiet, { requests: 50, hedges: 10 });
      const busy = await everyRequestAsks(budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 }), 10, 10);
      assert.deepEqual(busy, { requests: 100, hedges: 15 });
    });
  });

  it("forgets deposits and withdrawals as they leave the window, lazily", async () => {
    const target = budget({ maxExtraLoad: 1, minHedgesPerSecond: 0 });
    for (let i = 0; i < 5; i++) target.deposit();
    assert.equal(drain(target), 5);
    await clock.tickAsync(5_000);
    assert.equal(target.balance, 0, "halfway through the window, the withdrawals still count");
    await clock.tickAsync(5_000);
    assert.equal(target.balance, 0, "after the window, neither deposits nor withdrawals count");
    target.deposit();
    assert.equal(target.balance, 1);
    assert.equal(clock.countTimers(), 0);
  });

  it("caps the hedges in flight whatever the balance, until they are released", () => {
    const target = budget({ maxHedgesInFlight: 2 });
    assert.equal(target.tryWithdraw(), true);
    assert.equal(target.tryWithdraw(), true);
    assert.equal(target.hedgesInFlight, 2);
    assert.equal(target.tryWithdraw(), false, "the third is refused");
    assert.equal(target.balance, 8, "a hedge refused for the cap withdraws nothing");
    target.release();
    assert.equal(target.hedgesInFlight, 1);
    assert.equal(target.tryWithdraw(), true);
    target.release();
    target.release();
    target.release();
    assert.equal(target.hedgesInFlight, 0, "a release without a hedge in flight is ignored");
  });
});
