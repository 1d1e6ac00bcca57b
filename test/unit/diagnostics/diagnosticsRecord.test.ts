import assert from "node:assert/strict";
import { describeArm, describeDrainedArm } from "../../../src/diagnostics/diagnosticsRecord.js";
import type { ArmResult } from "../../../src/cosmos/statusTables.js";
import type { RaceArm } from "../../../src/race/race.js";
import { westUs } from "../../support/hedgingFixtures.js";
import { makeRequest, makeResponse } from "../../support/requests.js";

const raceStart = 5000;
const request = makeRequest("https://acct-westus.documents.azure.com/dbs/db/colls/c/docs/1");

function arm(fields: Partial<RaceArm> = {}): RaceArm {
  return { index: 1, region: westUs, reason: "threshold", startedAt: 5100.4, ...fields };
}

function answered(status: number, headers: Record<string, string> = {}): ArmResult {
  return { response: makeResponse(request, status, { headers }) };
}

describe("diagnosticsRecord", () => {
  describe("describeArm", () => {
    it("an arm that answered: its region, reason, whole-millisecond offset and duration, status, sub-status, activity id and charge", () => {
      const record = describeArm(
        arm({ endedAt: 5142.6, result: answered(404, { "x-ms-substatus": "1002", "x-ms-activity-id": "a-1", "x-ms-request-charge": "2.5" }) }),
        raceStart,
        1,
      );
      assert.deepEqual(record, {
        region: "West US",
        reason: "threshold",
        startOffsetMs: 100,
        outcome: "returned",
        durationMs: 42,
        status: 404,
        subStatus: 1002,
        activityId: "a-1",
        requestCharge: 2.5,
      });
    });

    it("leaves out a sub-status of 0 and what the response does not carry", () => {
      assert.deepEqual(describeArm(arm({ endedAt: 5110.4, result: answered(200, { "x-ms-substatus": "0" }) }), raceStart, 0), {
        region: "West US",
        reason: "threshold",
        startOffsetMs: 100,
        outcome: "lost",
        durationMs: 10,
        status: 200,
      });
    });

    it("an arm still running when the race was decided: no duration and no result", () => {
      assert.deepEqual(describeArm(arm({ aborted: true }), raceStart, undefined), { region: "West US", reason: "threshold", startOffsetMs: 100, outcome: "aborted" });
    });

    it("a drained arm is timed to the decision, without what it got later", () => {
      const record = describeArm(arm({ drain: { decidedAt: 5130.4, endedAt: 5900, end: "settled", result: answered(200) } }), raceStart, 0);
      assert.deepEqual(record, { region: "West US", reason: "threshold", startOffsetMs: 100, outcome: "drained", durationMs: 30 });
    });

    it("an error: its name, its string code and its message, without credentials and bounded", () => {
      const error = Object.assign(new Error(`failed with sig=abc123 ${"x".repeat(400)}`), { code: `E${"C".repeat(200)}`, name: `Name${"n".repeat(200)}` });
      const record = describeArm(arm({ endedAt: 5101, result: { error } }), raceStart, 1);
      assert.equal(record.error?.name.length, 100);
      assert.equal(record.error?.code?.length, 100);
      assert.equal(record.error?.message.length, 300);
      assert.ok(!record.error?.message.includes("abc123"), record.error?.message);
      assert.equal(record.status, undefined);
    });

    it("an error without a string code has none; a thrown non-Error is named by its type", () => {
      const numeric = describeArm(arm({ endedAt: 5101, result: { error: Object.assign(new Error("odd"), { code: 42 }) } }), raceStart, 1);
      assert.deepEqual(numeric.error, { name: "Error", message: "odd" });
      const thrown = describeArm(arm({ endedAt: 5101, result: { error: "failed: sig=abc123DEF" } }), raceStart, 1);
      assert.equal(thrown.error?.name, "string");
      assert.ok(!thrown.error?.message.includes("abc123"), thrown.error?.message);
    });
  });

  describe("describeDrainedArm", () => {
    it("once its drain has ended: how it ended, what it got and how long it ran in all", () => {
      const record = describeDrainedArm(arm({ drain: { decidedAt: 5130, endedAt: 5900.2, end: "settled", result: answered(200, { "x-ms-request-charge": "4" }) } }), raceStart);
      assert.deepEqual(record, { region: "West US", reason: "threshold", startOffsetMs: 100, outcome: "drained", drainEnd: "settled", durationMs: 800, status: 200, requestCharge: 4 });
    });

    it("a drain cut off before an answer: its end and duration only", () => {
      const record = describeDrainedArm(arm({ drain: { decidedAt: 5130, endedAt: 10100.4, end: "timeLimit" } }), raceStart);
      assert.deepEqual(record, { region: "West US", reason: "threshold", startOffsetMs: 100, outcome: "drained", drainEnd: "timeLimit", durationMs: 5000 });
    });

    it("a drain still running: timed to the decision, without an end", () => {
      assert.deepEqual(describeDrainedArm(arm({ drain: { decidedAt: 5130.4 } }), raceStart), {
        region: "West US",
        reason: "threshold",
        startOffsetMs: 100,
        outcome: "drained",
        durationMs: 30,
      });
    });
  });
});
