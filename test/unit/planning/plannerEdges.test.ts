import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { LoadBudget, resolveLoadBudget } from "../../../src/budget/loadBudget.js";
import { useFakeClock } from "../../support/leakCheck.js";

/** The load budget's window at its boundary. */
describe("planning at its edges", () => {
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
});
