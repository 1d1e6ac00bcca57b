import assert from "node:assert/strict";
import { HedgeBudget } from "../../../src/budget/hedgeBudget.js";

describe("HedgeBudget", () => {
  it("hands out at most limit slots until one is released", () => {
    const budget = new HedgeBudget(2);
    assert.equal(budget.tryAcquire(), true);
    assert.equal(budget.tryAcquire(), true);
    assert.equal(budget.inUse, 2);
    assert.equal(budget.tryAcquire(), false);
    assert.equal(budget.inUse, 2, "a refusal takes nothing");
    budget.release();
    assert.equal(budget.inUse, 1);
    assert.equal(budget.tryAcquire(), true);
    assert.equal(budget.tryAcquire(), false);
  });

  it("ignores a release without an acquire, so it never hands out more than the limit", () => {
    const budget = new HedgeBudget(1);
    budget.release();
    assert.equal(budget.inUse, 0);
    assert.equal(budget.tryAcquire(), true);
    assert.equal(budget.tryAcquire(), false);
  });

  it("rejects a limit that is not a whole number of at least 1, naming the option and the value", () => {
    for (const bad of [0, -1, 2.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => new HedgeBudget(bad, "maxConcurrentHedges"), {
        name: "RangeError",
        message: `maxConcurrentHedges must be a whole number of at least 1; got ${String(bad)}.`,
      });
    }
    assert.throws(() => new HedgeBudget("3" as unknown as number), { name: "RangeError", message: /^limit .*got "3"\.$/ });
  });
});
