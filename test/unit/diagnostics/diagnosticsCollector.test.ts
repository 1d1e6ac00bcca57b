import assert from "node:assert/strict";
import { setImmediate } from "node:timers/promises";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import {
  collectHedgeDiagnostics,
  getCollectedHedgeDiagnostics,
  recordForCollectors,
} from "../../../src/diagnostics/diagnosticsCollector.js";

function record(operation: HedgeDiagnostics["operation"]): HedgeDiagnostics {
  return { policy: "crossRegion", operation, arms: [], hedgeFired: false, hedgeWon: false, terminalState: "skipped", totalRequestCharge: 1, final: true };
}

describe("collectHedgeDiagnostics", () => {
  it("takes the result of a synchronous block as well as of an asynchronous one", async () => {
    const sync = await collectHedgeDiagnostics(() => {
      recordForCollectors(record("pointRead"));
      return 42;
    });
    assert.equal(sync.result, 42);
    assert.deepEqual(sync.diagnostics, [record("pointRead")]);
    const async = await collectHedgeDiagnostics(async () => {
      await setImmediate();
      recordForCollectors(record("query"));
      return "done";
    });
    assert.deepEqual({ result: async.result, diagnostics: async.diagnostics }, { result: "done", diagnostics: [record("query")] });
    // No @azure/cosmos operation ran in the block: its detection record is empty, and final.
    assert.deepEqual(async.detection.requestedRegions(), []);
    assert.equal(async.detection.hedgingStarted(), false);
    assert.equal(async.detection.final, true);
    await async.settled;
  });

  it("records nothing outside a block, and nothing into a block that has settled", async () => {
    recordForCollectors(record("pointRead"));
    let later: (() => void) | undefined;
    const { diagnostics } = await collectHedgeDiagnostics(() => {
      later = () => recordForCollectors(record("query"));
    });
    later?.();
    assert.deepEqual(diagnostics, []);
  });

  it("rejects with a thrown primitive unchanged, which cannot carry the records", async () => {
    await assert.rejects(
      collectHedgeDiagnostics(() => {
        recordForCollectors(record("pointRead"));
        throw "plain string";
      }),
      (error: unknown) => error === "plain string",
    );
    assert.equal(getCollectedHedgeDiagnostics("plain string"), undefined);
    assert.equal(getCollectedHedgeDiagnostics(new Error("never in a block")), undefined);
  });

  it("leaves on an error that went through nested blocks the outermost block's records", async () => {
    const failure = new Error("inner failure");
    await assert.rejects(
      collectHedgeDiagnostics(async () => {
        recordForCollectors(record("queryPlan"));
        await collectHedgeDiagnostics(() => {
          recordForCollectors(record("query"));
          throw failure;
        });
      }),
      failure,
    );
    assert.deepEqual(getCollectedHedgeDiagnostics(failure)?.map((entry) => entry.operation), ["queryPlan", "query"]);
  });

  for (const bad of [undefined, null, 5, "fn", {}]) {
    it(`rejects ${JSON.stringify(bad) ?? "undefined"} for fn with a TypeError naming it`, async () => {
      await assert.rejects(collectHedgeDiagnostics(bad as never), (error: unknown) => error instanceof TypeError && /^fn must be a function; got /.test(error.message));
    });
  }
});
