import assert from "node:assert/strict";
import { armOutcome, decidedDurationMs, drainedDurationMs, timedOut } from "../../../src/learning/armFacts.js";
import type { RaceArm } from "../../../src/race/race.js";
import { eastUs } from "../../support/hedgingFixtures.js";
import { makeRequest, makeResponse } from "../../support/requests.js";

function arm(fields: Partial<RaceArm> = {}): RaceArm {
  return { index: 1, region: eastUs, reason: "threshold", startedAt: 1000, ...fields };
}

function codeError(code: string, name = "Error"): Error {
  return Object.assign(new Error(`failed: ${code}`), { code, name });
}

const request = makeRequest("https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1");

describe("armFacts", () => {
  describe("armOutcome", () => {
    it("aborted first, then drained, then returned or lost by the returned index", () => {
      const drain = { decidedAt: 1010 };
      assert.equal(armOutcome(arm({ aborted: true, drain }), 1), "aborted");
      assert.equal(armOutcome(arm({ drain }), 1), "drained");
      assert.equal(armOutcome(arm(), 1), "returned");
      assert.equal(armOutcome(arm(), 0), "lost");
      assert.equal(armOutcome(arm(), undefined), "lost", "the caller aborted: nobody's outcome was returned");
    });
  });

  describe("decidedDurationMs", () => {
    it("runs to the arm's end, rounded to whole milliseconds", () => {
      assert.equal(decidedDurationMs(arm({ endedAt: 1012.4 })), 12);
      assert.equal(decidedDurationMs(arm({ endedAt: 1012.5 })), 13);
    });

    it("a drained arm runs to its race's decision, not to its drain's end", () => {
      assert.equal(decidedDurationMs(arm({ drain: { decidedAt: 1030.2, endedAt: 1500 } })), 30);
    });

    it("is unknown for an arm still running", () => {
      assert.equal(decidedDurationMs(arm()), undefined);
    });
  });

  describe("drainedDurationMs", () => {
    it("runs to the drain's end once it has ended, to the decision while it runs, and is unknown for an arm never drained", () => {
      assert.equal(drainedDurationMs(arm({ drain: { decidedAt: 1030, endedAt: 1499.6 } })), 500);
      assert.equal(drainedDurationMs(arm({ drain: { decidedAt: 1030.4 } })), 30);
      assert.equal(drainedDurationMs(arm({ endedAt: 1040 })), undefined);
    });
  });

  describe("timedOut", () => {
    it("a 408 response, and no other status", () => {
      assert.equal(timedOut({ response: makeResponse(request, 408) }), true);
      for (const status of [200, 404, 410, 429, 503]) assert.equal(timedOut({ response: makeResponse(request, status) }), false, `${status}`);
    });

    it("an Error named TimeoutError or carrying a timeout code", () => {
      assert.equal(timedOut({ error: codeError("", "TimeoutError") }), true);
      for (const code of ["ETIMEDOUT", "ESOCKETTIMEDOUT", "ECONNABORTED"]) assert.equal(timedOut({ error: codeError(code) }), true, code);
    });

    it("not another transport error, a code that is not a string, a thrown non-Error, or no result", () => {
      assert.equal(timedOut({ error: codeError("ECONNREFUSED") }), false);
      assert.equal(timedOut({ error: Object.assign(new Error("odd"), { code: 408 }) }), false);
      assert.equal(timedOut({ error: { name: "TimeoutError", code: "ETIMEDOUT" } }), false);
      assert.equal(timedOut({ error: "ETIMEDOUT" }), false);
      assert.equal(timedOut(undefined), false);
    });
  });
});
