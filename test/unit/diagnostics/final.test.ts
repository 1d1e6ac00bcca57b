import assert from "node:assert/strict";
import { finalWhen, whenFinal } from "../../../src/diagnostics/final.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";

describe("whenFinal", () => {
  const record = (): HedgeDiagnostics => ({ policy: "crossRegion", operation: "pointRead", arms: [], hedgeFired: true, hedgeWon: true, terminalState: "hedgeWon", totalRequestCharge: 1, final: false });

  it("settles with a record once its drains have completed, and marks it final", async () => {
    const live = record();
    let complete!: () => void;
    finalWhen(live, [new Promise<void>((resolve) => (complete = resolve))]);
    assert.equal(live.final, false);
    complete();
    assert.equal(await whenFinal(live), live);
    assert.equal(live.final, true);
  });

  it("settles at once for a record with nothing to wait for, and for a frozen one without changing it", async () => {
    const done = { ...record(), final: true };
    assert.equal(await whenFinal(done), done);
    const frozen = Object.freeze(record());
    finalWhen(frozen, [Promise.resolve()]);
    assert.equal(await whenFinal(frozen), frozen);
    assert.equal(frozen.final, false);
  });
});
