import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import type { HedgeLoadBudgetOptions } from "../../../src/budget/loadBudget.js";
import { LoadBudget, loadBudgetDefaults, resolveLoadBudget } from "../../../src/budget/loadBudget.js";
import { DocumentRaceStrategy } from "../../../src/race/raceStrategies.js";
import type { HealthyTails } from "../../../src/race/raceStrategies.js";
import { useFakeClock } from "../../support/leakCheck.js";

describe("LoadBudget", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  describe("the load budget's window", () => {
    it("counts a deposit for exactly the window: still there a millisecond before ten seconds, gone at ten", async () => {
      const budget = new LoadBudget(resolveLoadBudget({ maxExtraLoad: 0.5, minHedgesPerSecond: 0 }));
      for (let i = 0; i < 4; i++) budget.deposit();
      assert.equal(budget.balance, 2);
      await clock.tickAsync(9_999);
      assert.equal(budget.balance, 2, "a deposit made 9.999 s ago still counts");
      await clock.tickAsync(1);
      assert.equal(budget.balance, 0, "one made 10 s ago does not");
    });

    it("a null budget is refused with a message that says false is the way to turn it off", () => {
      assert.throws(() => resolveLoadBudget(null as unknown as object), (error: unknown) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, /^budget must be false or an options object; got null/);
        return true;
      });
    });
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

    it("defaults to a 15 % share, 1 hedge a second, 100 in flight, over 10 and 60 seconds", () => {
      assert.deepEqual(resolveLoadBudget({}), {
        maxExtraLoad: 0.15,
        minHedgesPerSecond: 1,
        maxHedgesInFlight: 100,
        windowMs: 10_000,
        longWindowMs: 60_000,
      });
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

    it("the windows are whole seconds, the long one no shorter than the short one", () => {
      const settings = resolveLoadBudget({});
      assert.throws(() => new LoadBudget({ ...settings, windowMs: 1500 }), /^RangeError: windowMs must be a whole number of seconds; got 1500\./);
      assert.throws(() => new LoadBudget({ ...settings, longWindowMs: 5000 }), /^RangeError: longWindowMs must be at least windowMs \(10000\); got 5000\./);
    });

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

  describe("two windows: the share plus the floor over 10 s, the share or the floor over 60 s", () => {
    /**
     * Offers `perSecond` requests a second for `seconds`, evenly spaced, every one of
     * which asks for a hedge when `asks` (as when every region is slow); returns the hedges granted.
     */
    async function offer(target: LoadBudget, perSecond: number, seconds: number, asks = true): Promise<{ requests: number; hedges: number }> {
      const gapMs = 1000 / perSecond;
      // Whole milliseconds from the start, so that rounding never moves a request into the next second.
      const start = performance.now();
      let requests = 0;
      let hedges = 0;
      for (let i = 0; i < perSecond * seconds; i++) {
        requests += 1;
        target.deposit();
        if (asks && target.tryWithdraw()) {
          hedges += 1;
          target.release();
        }
        await clock.tickAsync(start + Math.round((i + 1) * gapMs) - performance.now());
      }
      return { requests, hedges };
    }

    it("at 30 requests a second for a minute, every one asking, hedges are 15 % of the minute's requests: 270 of 1800", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      const { requests, hedges } = await offer(target, 30, 60);
      assert.equal(requests, 1800);
      assert.ok(hedges <= 0.15 * requests, `${hedges} hedges for ${requests} requests`);
      assert.ok(hedges >= 0.15 * requests - 6, `the budget hands out what it allows: ${hedges}`);
      assert.equal(hedges, 270);
    });

    it("the first 10 s of that minute may spend the share plus the floor: 55 hedges for 300 requests", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      assert.deepEqual(await offer(target, 30, 10), { requests: 300, hedges: 55 });
      // The minute's floor of 60 covers 5 more before the share (4.5 a second) must catch up with it.
      assert.deepEqual(await offer(target, 30, 3), { requests: 90, hedges: 5 });
    });

    it("a burst of stragglers within 10 s is hedged beyond 15 % of those 10 s, up to the share plus the floor", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      // 50 s at 30 requests a second with nothing slow, then 10 s in which every request is.
      await offer(target, 30, 50, false);
      const first = await offer(target, 30, 1);
      assert.deepEqual(first, { requests: 30, hedges: 30 }, "a whole second of stragglers, every one hedged");
      const rest = await offer(target, 30, 9);
      assert.equal(first.hedges + rest.hedges, 55, "10 + 15 % of the 300 requests of those 10 s, more than their 45");
      assert.equal(target.refusals, 300 - 55);
    });

    it("whichever is more decides over the minute: the floor below minHedgesPerSecond / maxExtraLoad requests a second, the share above", async () => {
      // 1 / 0.15 = 6.7 requests a second: at 5 the floor's 60 hedges a minute decide, at 10 the share's 90.
      const quiet = await offer(budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 }), 5, 60);
      assert.deepEqual(quiet, { requests: 300, hedges: 60 });
      const busy = await offer(budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 }), 10, 60);
      assert.deepEqual(busy, { requests: 600, hedges: 90 });
    });

    it("at 0.5 requests a second the floor still lets every request hedge", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      const { requests, hedges } = await offer(target, 0.5, 60);
      assert.equal(requests, 30);
      assert.equal(hedges, 30);
      assert.equal(target.refusals, 0);
    });

    it("a hedge goes only when both windows cover it", () => {
      const spike = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      for (let i = 0; i < 400; i++) spike.deposit();
      // 10 s: 10 + 60 = 70; 60 s: max(60, 60) = 60.
      assert.equal(drain(spike), 60, "the minute decides");
      const burst = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      for (let i = 0; i < 100; i++) burst.deposit();
      // 10 s: 10 + 15 = 25; 60 s: max(60, 15) = 60.
      assert.equal(drain(burst), 25, "the 10 seconds decide");
    });

    it("a second's requests and hedges leave the short window 10 s later and the long one 60 s later", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      let granted = drain(target);
      assert.equal(granted, 10, "no requests: the short window's floor");
      await clock.tickAsync(9_999);
      assert.equal(target.balance, 0, "the first second's hedges still count at 9.999 s");
      await clock.tickAsync(1);
      assert.equal(target.balance, 10, "at 10 s they leave the short window; the long one still has 50");
      for (let second = 10; second <= 50; second += 10) {
        granted += drain(target);
        await clock.tickAsync(second === 50 ? 9_999 : 10_000);
      }
      assert.equal(granted, 60, "a client without requests hedges minHedgesPerSecond over the minute");
      assert.equal(target.balance, 0, "at 59.999 s the short window covers 10 more, the minute none");
      await clock.tickAsync(1);
      assert.equal(target.balance, 10, "at 60 s the first second's 10 leave the minute");
      await clock.tickAsync(120_000);
      assert.equal(target.balance, 10, "after two idle minutes, only the floor: nothing is remembered");
      assert.equal(clock.countTimers(), 0);
    });
  });

  describe("when the budget is short, the reads most likely to be stragglers get the last hedges", () => {
    /** A budget of 55 hedges over the short window: 300 requests deposit 45, the floor adds 10; its reserve is a quarter of that. */
    function filled(): LoadBudget {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      for (let i = 0; i < 300; i++) target.deposit();
      return target;
    }

    it("keeps a reserve of a quarter of the short window's allowance that only evidence may spend", () => {
      const target = filled();
      assert.equal(loadBudgetDefaults.reserveShare, 0.25);
      assert.ok(Math.abs(target.reserve - 13.75) < 1e-9, String(target.reserve));
      assert.equal(target.evidenceNeeded(), 0, "a full budget asks for no evidence");
      let slowish = 0;
      while (target.tryWithdraw(0)) {
        target.release();
        slowish += 1;
      }
      // 55 - 1 - 13.75: a read with no evidence must leave a hedge and the whole reserve.
      assert.equal(slowish, 41);
      // 14 left: a hedge and 13 of the 13.75 in reserve, so the next read must show 1 - 13 / 13.75 of full evidence.
      assert.ok(Math.abs(target.evidenceNeeded() - (1 - 13 / 13.75)) < 1e-6, String(target.evidenceNeeded()));
      let stragglers = 0;
      while (target.tryWithdraw(1)) {
        target.release();
        stragglers += 1;
      }
      assert.equal(stragglers, 14, "full evidence spends the reserve to the last hedge");
      assert.equal(slowish + stragglers, 55, "the overall bound is unchanged");
      assert.equal(target.evidenceNeeded(), Number.POSITIVE_INFINITY, "an empty budget admits nothing");
      assert.equal(target.tryWithdraw(1), false);
    });

    it("within the reserve, more evidence dips deeper: half the evidence spends half the reserve", () => {
      const target = filled();
      while (target.tryWithdraw(0)) target.release();
      let half = 0;
      while (target.tryWithdraw(0.5)) {
        target.release();
        half += 1;
      }
      // The balance starts at 14: evidence 0.5 must find 1 + 6.875 there, so 7 go (from 14 down to 8).
      assert.equal(half, 7);
      assert.equal(target.tryWithdraw(0.4), false, "less evidence than the last admitted is refused");
      assert.equal(target.tryWithdraw(1), true, "more is admitted");
    });

    it("the default evidence is full: a caller that knows nothing of the read spends as before", () => {
      assert.equal(drain(filled()), 55);
    });
  });

  describe("a document race asks the budget with its read's straggler evidence", () => {
    const region = "East US";
    /** A primary whose healthy p99 is 10 ms. */
    const tails: HealthyTails = { healthyTailMs: () => 10 };
    const primary = { tails, region, latencyClass: "pointRead" as const };

    /** Spends a filled budget's hedges with no evidence until only the reserve is left. */
    function shortBudget(): LoadBudget {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      for (let i = 0; i < 300; i++) target.deposit();
      while (target.tryWithdraw(0)) target.release();
      return target;
    }

    it("hedges at its threshold, looking up no tail, while the budget covers its reserve", () => {
      const target = budget();
      let lookups = 0;
      const counting: HealthyTails = {
        healthyTailMs: () => {
          lookups += 1;
          return 10;
        },
      };
      const strategy = new DocumentRaceStrategy(12, 100, target, { tails: counting, region, latencyClass: "pointRead" });
      assert.equal(strategy.delayBefore(1), 12);
      assert.equal(strategy.delayBefore(2), 100);
      assert.equal(strategy.admit(), true);
      assert.equal(lookups, 0);
    });

    it("when the budget is short, waits until the read has the evidence asked for, then is admitted", async () => {
      const target = shortBudget();
      // Seven full-evidence hedges more leave 7 of the 13.75 in reserve.
      for (let i = 0; i < 7; i++) assert.equal(target.tryWithdraw(1), true);
      const needed = target.evidenceNeeded();
      // A fixed threshold of 5 ms, half the tail: no evidence yet when it passes.
      const strategy = new DocumentRaceStrategy(5, 100, target, primary);
      const delay = strategy.delayBefore(1);
      // Tail 10 ms, full evidence at the tail: the wait is 10 * (1 + needed) / 2, in whole milliseconds as timers fire.
      assert.equal(delay, Math.ceil((10 * (1 + needed)) / 2), `${delay} for ${needed}`);
      assert.ok(delay > 5 && delay <= 10, String(delay));
      await clock.tickAsync(5);
      assert.equal(new DocumentRaceStrategy(5, 100, target, primary, performance.now() - 5).admit(), false, "a read that barely passed its threshold is refused");
      await clock.tickAsync(delay - 5);
      assert.equal(strategy.admit(), true, "the same read, once it has waited as long as asked, gets the hedge");
    });

    it("the last hedge goes to the read furthest past its region's healthy tail, not to one that barely passed its threshold", async () => {
      const target = shortBudget();
      // 14 hedges left (see shortBudget); 13 full-evidence hedges leave the last one.
      for (let i = 0; i < 13; i++) assert.equal(target.tryWithdraw(1), true);
      assert.ok(Math.abs(target.balance - 1) < 1e-9, String(target.balance));
      assert.ok(Math.abs(target.evidenceNeeded() - 1) < 1e-6, `the last hedge needs full evidence: ${target.evidenceNeeded()}`);
      // Two reads of a primary whose healthy tail is 10 ms: one 6 ms in (evidence 2 * 6 / 10 - 1 = 0.2), one 30 ms in (evidence 1).
      const slowish = new DocumentRaceStrategy(5, 100, target, primary, performance.now() - 6);
      const straggler = new DocumentRaceStrategy(5, 100, target, primary, performance.now() - 30);
      assert.equal(slowish.delayBefore(1), 10, "the slowish read's hedge waits for the tail, where it would have full evidence");
      assert.equal(slowish.admit(), false, "asking first, 6 ms in, does not get it");
      assert.equal(straggler.admit(), true, "the straggler gets the last hedge");
      assert.equal(target.tryWithdraw(1), false, "and nothing is left");
    });

    it("a burst of slowish reads cannot starve the stragglers that follow", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      for (let i = 0; i < 300; i++) target.deposit();
      // 60 reads whose threshold passes at 5 ms, half the tail, and that are hedged there, as a fixed threshold below the tail would.
      let slowish = 0;
      for (let i = 0; i < 60; i++) {
        const strategy = new DocumentRaceStrategy(5, 100, target, primary);
        await clock.tickAsync(strategy.delayBefore(1));
        // A slowish read answers before the tail: one whose hedge waits longer never asks.
        if (strategy.delayBefore(1) <= 5 && strategy.admit()) {
          target.release();
          slowish += 1;
        }
      }
      assert.ok(slowish <= 55 - 13, `the burst leaves the reserve: ${slowish}`);
      // Then ten stragglers, which outlast the tail: every one is hedged, by the tail at the latest.
      let stragglers = 0;
      for (let i = 0; i < 10; i++) {
        const strategy = new DocumentRaceStrategy(5, 100, target, primary);
        assert.ok(strategy.delayBefore(1) <= 10);
        await clock.tickAsync(strategy.delayBefore(1));
        if (strategy.admit()) {
          target.release();
          stragglers += 1;
        }
      }
      assert.equal(stragglers, 10);
    });

    it("a read refused because the balance fell while it waited is asked once more at its primary's tail, and gets the hedge", async () => {
      const target = shortBudget();
      // Seven full-evidence hedges more leave 7 of the 13.75 in reserve: the read starts with the budget short, as the
      // policy gives a strategy with a primary only then.
      for (let i = 0; i < 7; i++) assert.equal(target.tryWithdraw(1), true);
      const straggler = new DocumentRaceStrategy(5, 100, target, primary);
      const delay = straggler.delayBefore(1);
      assert.ok(delay > 5 && delay < 10, String(delay));
      // Other reads spend it down to the last hedge before that delay passes.
      while (target.evidenceNeeded() < 1 - 1e-6) assert.equal(target.tryWithdraw(1), true);
      await clock.tickAsync(delay);
      assert.equal(straggler.admit(), false, "the evidence it waited for is no longer enough");
      const refusals = target.refusals;
      const againMs = straggler.admitAfter();
      assert.equal(againMs, 10 - delay, "asked once more at the tail, 10 ms");
      await clock.tickAsync(againMs ?? 0);
      assert.equal(straggler.admit(), true, "asked again at the tail, the straggler gets the last hedge");
      assert.equal(target.refusals, refusals);
      assert.equal(target.tryWithdraw(1), false);
      assert.equal(target.refusals, refusals + 1, "a refusal of another read counts");
    });

    it("a read asked again and refused is counted once, and a balance that covers no hedge is final", async () => {
      const target = budget({ maxExtraLoad: 0.15, minHedgesPerSecond: 1 });
      for (let i = 0; i < 300; i++) target.deposit();
      while (target.tryWithdraw(1)) target.release();
      const refusals = target.refusals;
      const read = new DocumentRaceStrategy(6, 100, target, primary);
      await clock.tickAsync(6);
      assert.equal(read.admit(), false);
      assert.equal(target.refusals, refusals + 1);
      assert.equal(read.admitAfter(), undefined, "no balance: waiting cannot earn a hedge");
    });

    it("without a known tail the read counts as a likely straggler and is budgeted as before", () => {
      const target = shortBudget();
      const unknown = new DocumentRaceStrategy(5, 100, target, { tails: { healthyTailMs: () => undefined }, region, latencyClass: "pointRead" });
      assert.equal(unknown.delayBefore(1), 5);
      assert.equal(unknown.admit(), true);
      assert.equal(new DocumentRaceStrategy(5, 100, target).admit(), true, "nor without a primary");
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
