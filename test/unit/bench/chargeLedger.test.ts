import { strict as assert } from "node:assert";
import sinon from "sinon";
import type { SinonFakeTimers } from "sinon";
import { ChargeLedger } from "../../../bench/support/chargeLedger.js";
import type { HedgeArmDiagnostics, HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { runUntilIdle } from "../../support/clockDriver.js";

function record(policy: HedgeDiagnostics["policy"], charge: number, arms: HedgeArmDiagnostics[] = []): HedgeDiagnostics {
  return { policy, operation: "pointRead", arms, hedgeFired: arms.length > 1, hedgeWon: false, terminalState: "primaryWon", totalRequestCharge: charge, final: true };
}

function arm(outcome: HedgeArmDiagnostics["outcome"]): HedgeArmDiagnostics {
  return { region: "West US", reason: "threshold", startOffsetMs: 100, outcome };
}

describe("the benchmarks' charge ledger", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = sinon.useFakeTimers({ toNotFake: ["nextTick", "queueMicrotask"] });
  });

  afterEach(() => {
    clock.restore();
  });

  it("sums the data-plane records received since the last clear", async () => {
    const ledger = new ChargeLedger();
    ledger.onDiagnostics(record("crossRegion", 5));
    ledger.clear();
    ledger.onDiagnostics(record("crossRegion", 1));
    ledger.onDiagnostics(record("crossRegion", 2.5));
    ledger.onDiagnostics(record("metadata", 7));
    assert.deepEqual(await ledger.settledCharge(), { charge: 3.5, drainsRunning: 0 });
  });

  it("waits for a drained loser to end and counts the charge it adds to its record", async () => {
    const ledger = new ChargeLedger();
    const loser = arm("drained");
    const raced = record("crossRegion", 1, [arm("returned"), loser]);
    ledger.onDiagnostics(raced);
    // The policy completes the published record in place when the drain ends.
    setTimeout(() => {
      loser.drainEnd = "settled";
      raced.totalRequestCharge += 1;
    }, 800);
    const settled = ledger.settledCharge();
    await runUntilIdle(clock, 10_000);
    assert.deepEqual(await settled, { charge: 2, drainsRunning: 0 });
  });

  it("gives up after its limit and says how many drains were still running", async () => {
    const ledger = new ChargeLedger();
    ledger.onDiagnostics(record("crossRegion", 1, [arm("returned"), arm("drained")]));
    const settled = ledger.settledCharge(1000);
    await runUntilIdle(clock, 10_000);
    assert.deepEqual(await settled, { charge: 1, drainsRunning: 1 });
    assert.equal(clock.now, 1000);
  });

  it("buckets the charge by the second each record arrived, a drained loser's charge included once it has ended", async () => {
    const ledger = new ChargeLedger();
    const startedAt = performance.now();
    clock.tick(400);
    ledger.onDiagnostics(record("crossRegion", 1));
    const loser = arm("drained");
    const raced = record("crossRegion", 1, [arm("returned"), loser]);
    clock.tick(300);
    ledger.onDiagnostics(raced);
    clock.tick(1500);
    ledger.onDiagnostics(record("crossRegion", 2));
    ledger.onDiagnostics(record("metadata", 9));
    setTimeout(() => {
      loser.drainEnd = "settled";
      raced.totalRequestCharge += 1;
    }, 800);
    const settled = ledger.settledCharge();
    await runUntilIdle(clock, 10_000);
    await settled;
    assert.deepEqual([...ledger.chargeBySecond(startedAt)], [[0, 3], [2, 2]]);
  });
});
