import assert from "node:assert/strict";
import { DocumentRaceStrategy, MetadataRaceStrategy } from "../../../src/race/raceStrategies.js";
import { eastUs, westUs } from "../../support/hedgingFixtures.js";
import { makeRequest, makeResponse } from "../../support/requests.js";
import type { SinonFakeTimers } from "sinon";
import { HedgeBudget } from "../../../src/budget/hedgeBudget.js";
import type { LoadBudget } from "../../../src/budget/loadBudget.js";
import type { ArmResult } from "../../../src/cosmos/statusTables.js";
import type { LatencyClass } from "../../../src/learning/latencyWindows.js";
import type { RacePrimary } from "../../../src/race/raceStrategies.js";
import { useFakeClock } from "../../support/leakCheck.js";

const docs = "https://acct-westus.documents.azure.com/dbs/db/colls/c/docs";

describe("writeSafety", function () {
  describe("the document race of a batch", function () {
    const conflicts = { response: makeResponse(request(), 200, { body: [{ statusCode: 409 }, { statusCode: 409 }] }) };
    const created = { response: makeResponse(request(), 200, { body: [{ statusCode: 201 }, { statusCode: 201 }] }) };

    function request() {
      return makeRequest(docs, { method: "POST", headers: { "x-ms-cosmos-is-batch-request": "true" } });
    }

    it("holds a hedge's 200 that reports failed operations, so a primary in flight decides; a clean 200 wins", function () {
      const strategy = new DocumentRaceStrategy(100, 100, undefined, undefined, undefined, "batch");
      assert.equal(strategy.judge({ index: 1, region: eastUs, result: conflicts }), "wait");
      assert.equal(strategy.judge({ index: 1, region: eastUs, result: created }), "win");
      assert.equal(strategy.judge({ index: 0, region: westUs, result: conflicts }), "win", "the primary's own answer is the SDK's to read");
    });

    it("judges a point write's 200 by its status alone", function () {
      const strategy = new DocumentRaceStrategy(100, 100, undefined);
      assert.equal(strategy.judge({ index: 1, region: eastUs, result: conflicts }), "win");
    });
  });
});

/** A load budget that asks for `needed` evidence and records what it is asked. */
class RecordingLoadBudget {
  readonly withdrawals: Array<number | undefined> = [];
  /** Whether each withdrawal asked counts a refusal. */
  readonly counted: Array<boolean | undefined> = [];
  releases = 0;

  constructor(
    public needed: number,
    private readonly grant = true,
  ) {}

  evidenceNeeded(): number {
    return this.needed;
  }

  tryWithdraw(evidence?: number, countRefusal?: boolean): boolean {
    this.withdrawals.push(evidence);
    this.counted.push(countRefusal);
    return this.grant;
  }

  release(): void {
    this.releases++;
  }

  asBudget(): LoadBudget {
    return this as unknown as LoadBudget;
  }
}

/** A primary whose healthy tail is `tailMs`, counting the look-ups. */
function primaryWithTail(tailMs: number | undefined): RacePrimary & { readonly lookups: Array<[string, LatencyClass]> } {
  const lookups: Array<[string, LatencyClass]> = [];
  return {
    lookups,
    region: "East US",
    latencyClass: "pointRead",
    tails: {
      healthyTailMs: (region, latencyClass) => {
        lookups.push([region, latencyClass]);
        return tailMs;
      },
    },
  };
}

function answer(status: number, subStatus?: number): ArmResult {
  const request = makeRequest("https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1");
  return { response: makeResponse(request, status, subStatus === undefined ? {} : { headers: { "x-ms-substatus": String(subStatus) } }) };
}

const refused: ArmResult = { error: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) };

describe("DocumentRaceStrategy", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  it("launches early on a transient result", () => {
    assert.equal(new DocumentRaceStrategy(100, 50, undefined).earlyLaunchReason, "transientResult");
  });

  describe("delayBefore", () => {
    it("the first hedge at the threshold, every later one a step after the one before", () => {
      const strategy = new DocumentRaceStrategy(100, 50, undefined);
      assert.equal(strategy.delayBefore(1), 100);
      assert.equal(strategy.delayBefore(2), 50);
      assert.equal(strategy.delayBefore(3), 50);
    });

    it("a budget that covers its reserve keeps the threshold, and no tail is looked up", () => {
      const primary = primaryWithTail(400);
      assert.equal(new DocumentRaceStrategy(100, 50, new RecordingLoadBudget(0).asBudget(), primary).delayBefore(1), 100);
      assert.deepEqual(primary.lookups, []);
    });

    it("a short budget holds the first hedge until the read has the evidence it asks for, in whole milliseconds", () => {
      // Evidence 0.5 on a tail of 40 ms: (40 * 1.5) / 2 = 30 ms.
      const primary = primaryWithTail(40);
      assert.equal(new DocumentRaceStrategy(10, 50, new RecordingLoadBudget(0.5).asBudget(), primary).delayBefore(1), 30);
      assert.deepEqual(primary.lookups, [["East US", "pointRead"]]);
      // Evidence 1 on 19.3 ms: a timer set for 19.3 ms would fire at 19.
      assert.equal(new DocumentRaceStrategy(10, 50, new RecordingLoadBudget(1).asBudget(), primaryWithTail(19.3)).delayBefore(1), 20);
      // The later hedges keep their step.
      assert.equal(new DocumentRaceStrategy(10, 50, new RecordingLoadBudget(1).asBudget(), primaryWithTail(40)).delayBefore(2), 50);
    });

    it("never earlier than the threshold, and at the threshold when the tail is unknown or there is no primary", () => {
      const short = new RecordingLoadBudget(1).asBudget();
      assert.equal(new DocumentRaceStrategy(100, 50, short, primaryWithTail(40)).delayBefore(1), 100);
      assert.equal(new DocumentRaceStrategy(10, 50, short, primaryWithTail(undefined)).delayBefore(1), 10);
      assert.equal(new DocumentRaceStrategy(10, 50, short).delayBefore(1), 10);
    });
  });

  describe("judge", () => {
    const strategy = new DocumentRaceStrategy(100, 50, undefined);

    it("a transient result of any arm launches the next hedge", () => {
      for (const result of [answer(503), answer(410, 1002), answer(429), answer(404, 1002), refused]) {
        assert.equal(strategy.judge({ index: 0, region: eastUs, result }), "next");
        assert.equal(strategy.judge({ index: 1, region: westUs, result }), "next");
      }
    });

    it("the primary's final result wins, success or error", () => {
      for (const status of [200, 201, 304, 404, 409, 412]) assert.equal(strategy.judge({ index: 0, region: eastUs, result: answer(status) }), "win", `${status}`);
    });

    it("a hedge's success wins; its final error is held, so a primary still in flight decides", () => {
      assert.equal(strategy.judge({ index: 1, region: westUs, result: answer(200) }), "win");
      assert.equal(strategy.judge({ index: 2, region: westUs, result: answer(201) }), "win");
      for (const status of [400, 401, 404, 409, 412]) assert.equal(strategy.judge({ index: 1, region: westUs, result: answer(status) }), "wait", `${status}`);
    });

    it("a hedge's 304 is held like a lagging region's 404/0: nothing newer there says nothing of the primary's region", () => {
      for (const index of [1, 2]) assert.equal(strategy.judge({ index, region: westUs, result: answer(304) }), "wait");
      assert.equal(new DocumentRaceStrategy(100, 50, undefined, undefined, undefined, "batch").judge({ index: 1, region: westUs, result: answer(304) }), "wait");
    });
  });

  describe("admit and release", () => {
    it("without a budget every hedge is admitted, and a release is harmless", () => {
      const strategy = new DocumentRaceStrategy(100, 50, undefined);
      assert.equal(strategy.admit(), true);
      strategy.release();
    });

    it("a budget that covers its reserve is asked for a whole hedge, and its answer is the strategy's", () => {
      const granting = new RecordingLoadBudget(0);
      assert.equal(new DocumentRaceStrategy(100, 50, granting.asBudget(), primaryWithTail(40)).admit(), true);
      assert.deepEqual(granting.withdrawals, [1], "a whole hedge: full evidence");
      const refusing = new RecordingLoadBudget(0, false);
      assert.equal(new DocumentRaceStrategy(100, 50, refusing.asBudget()).admit(), false);
    });

    it("a short budget is asked with the read's straggler evidence: how far past the primary's healthy tail it has waited", async () => {
      const budget = new RecordingLoadBudget(0.5);
      const strategy = new DocumentRaceStrategy(10, 50, budget.asBudget(), primaryWithTail(40));
      await clock.tickAsync(30);
      assert.equal(strategy.admit(), true);
      // Waited 30 ms of a 40 ms tail: 2 * 30 / 40 - 1 = 0.5.
      assert.deepEqual(budget.withdrawals, [0.5]);
      const started = new DocumentRaceStrategy(10, 50, budget.asBudget(), primaryWithTail(40), performance.now() - 40);
      started.admit();
      assert.deepEqual(budget.withdrawals, [0.5, 1], "measured from the primary's launch when given");
    });

    it("after a refusal, names the one time to ask again: its primary's healthy tail; that ask counts no second refusal", async () => {
      const budget = new RecordingLoadBudget(0.5, false);
      const strategy = new DocumentRaceStrategy(10, 50, budget.asBudget(), primaryWithTail(40));
      await clock.tickAsync(10);
      assert.equal(strategy.admitAfter(), undefined, "nothing to ask again before a refusal");
      assert.equal(strategy.admit(), false);
      // The tail is 40 ms; 10 have passed.
      assert.equal(strategy.admitAfter(), 30);
      assert.equal(strategy.admitAfter(), undefined, "one ask again only");
      await clock.tickAsync(30);
      strategy.admit();
      assert.deepEqual(budget.counted, [true, false], "the first refusal counts; the read asked again does not count twice");
      strategy.admit(2);
      assert.deepEqual(budget.counted, [true, false, true], "a later hedge's refusal counts");
      assert.equal(strategy.admitAfter(2), undefined, "and is final");
    });

    it("a refusal is final when waiting cannot earn the hedge: no budget, no known tail, an empty balance, or a read at its tail already", async () => {
      const refuse = (needed: number, primary?: RacePrimary): DocumentRaceStrategy => {
        const strategy = new DocumentRaceStrategy(10, 50, new RecordingLoadBudget(needed, false).asBudget(), primary);
        strategy.admit();
        return strategy;
      };
      assert.equal(new DocumentRaceStrategy(10, 50, undefined, primaryWithTail(40)).admitAfter(), undefined);
      assert.equal(refuse(0.5).admitAfter(), undefined, "the shared strategy asked with full evidence");
      assert.equal(refuse(0.5, primaryWithTail(undefined)).admitAfter(), undefined);
      assert.equal(refuse(Number.POSITIVE_INFINITY, primaryWithTail(40)).admitAfter(), undefined);
      const late = new DocumentRaceStrategy(10, 50, new RecordingLoadBudget(0.5, false).asBudget(), primaryWithTail(40));
      await clock.tickAsync(40);
      late.admit();
      assert.equal(late.admitAfter(), undefined, "refused with full evidence (every slot in flight taken): waiting changes nothing");
    });

    it("the shared strategy (no primary) counts every race's refusal", () => {
      const budget = new RecordingLoadBudget(0, false);
      const shared = new DocumentRaceStrategy(10, 50, budget.asBudget());
      shared.admit();
      shared.admit();
      assert.deepEqual(budget.counted, [true, true]);
    });

    it("release gives the hedge back to the budget", () => {
      const budget = new RecordingLoadBudget(0);
      const strategy = new DocumentRaceStrategy(100, 50, budget.asBudget());
      strategy.release();
      assert.equal(budget.releases, 1);
    });
  });
});

describe("MetadataRaceStrategy", () => {
  it("sends its one hedge at the threshold", () => {
    const strategy = new MetadataRaceStrategy(1500, new HedgeBudget(1));
    assert.equal(strategy.delayBefore(), 1500);
  });

  it("the primary is authoritative: its success or definitive error wins, a regional failure does not (the race's fallback)", () => {
    const strategy = new MetadataRaceStrategy(1500, new HedgeBudget(1));
    assert.equal(strategy.judge({ index: 0, region: eastUs, result: answer(200) }), "win");
    assert.equal(strategy.judge({ index: 0, region: eastUs, result: answer(404) }), "win");
    assert.equal(strategy.judge({ index: 0, region: eastUs, result: answer(401) }), "win");
    assert.equal(strategy.judge({ index: 0, region: eastUs, result: answer(503) }), "wait");
    assert.equal(strategy.judge({ index: 0, region: eastUs, result: answer(403, 1008) }), "wait");
  });

  it("the hedge wins only with a success; anything else waits for the primary", () => {
    const strategy = new MetadataRaceStrategy(1500, new HedgeBudget(1));
    assert.equal(strategy.judge({ index: 1, region: westUs, result: answer(200) }), "win");
    assert.equal(strategy.judge({ index: 1, region: westUs, result: answer(404) }), "wait");
    assert.equal(strategy.judge({ index: 1, region: westUs, result: answer(503) }), "wait");
  });

  it("admits as many hedges as the client's cap holds, and release frees one", () => {
    const budget = new HedgeBudget(1);
    const strategy = new MetadataRaceStrategy(1500, budget);
    assert.equal(strategy.admit(), true);
    assert.equal(strategy.admit(), false);
    strategy.release();
    assert.equal(budget.inUse, 0);
    assert.equal(strategy.admit(), true);
  });
});
