import assert from "node:assert/strict";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import { OperationDetection } from "../../../src/diagnostics/detection.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { attachHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { attemptSettled, forgetOperation, linkAttempt, noteHandedAttempt, operationHeaderName, recordingSend, registerOperation } from "../../../src/diagnostics/dispatchRecording.js";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { eastUs, pointRead, westUs } from "../../support/hedgingFixtures.js";

const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });

function answer(charge: string): SendRequest {
  return async (request) => ({ request, status: 200, headers: createHttpHeaders({ "x-ms-request-charge": charge }) });
}

const record: HedgeDiagnostics = {
  policy: "crossRegion",
  operation: "pointRead",
  arms: [],
  hedgeFired: false,
  hedgeWon: false,
  terminalState: "skipped",
  totalRequestCharge: 1,
  final: true,
  skipReason: "disabled",
};

describe("dispatchRecording", () => {
  describe("linkAttempt", () => {
    it("links a request handed over with its operation, and the same request only", () => {
      const operation = new OperationDetection();
      const request = pointRead(eastUs);
      noteHandedAttempt(request, operation);
      assert.deepEqual(linkAttempt(request), { operation, sent: false });
      assert.equal(linkAttempt({ ...request }), undefined, "a copy is not the attempt");
      assert.equal(linkAttempt(pointRead(eastUs)), undefined, "a request of no operation");
    });

    it("links a request by the id its header carries, removes the header, and forgets an ended operation's id", () => {
      const operation = new OperationDetection();
      const id = registerOperation(operation);
      assert.equal(registerOperation(operation), id, "one id per operation");
      const request = pointRead(eastUs);
      request.headers.set(operationHeaderName, id);
      assert.equal(linkAttempt(request)?.operation, operation);
      assert.equal(request.headers.has(operationHeaderName), false, "the header never leaves the process");
      forgetOperation(operation);
      const late = pointRead(eastUs);
      late.headers.set(operationHeaderName, id);
      assert.equal(linkAttempt(late), undefined);
      assert.equal(late.headers.has(operationHeaderName), false);
    });
  });

  describe("recordingSend", () => {
    it("notes the SDK's request with its reason and every further request of the attempt as a hedge, with each reply's region and charge", async () => {
      const operation = new OperationDetection();
      const attempt = { operation, sent: false };
      const send = recordingSend(attempt, regions, answer("2.5"));
      await attemptSettled(attempt, Promise.all([send(pointRead(eastUs)), send(pointRead(westUs))]).then(([first]) => first));
      // The SDK's next attempts, after a reply: in the same region, then in another.
      const again = { operation, sent: false };
      await attemptSettled(again, recordingSend(again, regions, answer("1"))(pointRead(eastUs)));
      const moved = { operation, sent: false };
      await attemptSettled(moved, recordingSend(moved, regions, answer("0.5"))(pointRead(westUs)));
      operation.operationEnded();
      assert.deepEqual(operation.requestedRegions(), [
        { region: "East US", reason: "initial" },
        { region: "West US", reason: "hedging" },
        { region: "East US", reason: "operationRetry" },
        { region: "West US", reason: "regionFailover" },
      ]);
      assert.deepEqual(operation.respondedRegions(), ["East US", "West US", "East US", "West US"]);
      assert.equal(operation.requestCharge, 6.5);
      assert.equal(operation.hedgingStarted(), true);
      assert.equal(operation.final, true);
    });

    it("ends a request that failed without a reply, or whose send threw, unanswered, so that the record still becomes final", async () => {
      const operation = new OperationDetection();
      const failing = recordingSend({ operation, sent: false }, regions, () => Promise.reject(new Error("socket hang up")));
      await assert.rejects(failing(pointRead(eastUs)), /socket hang up/);
      const throwing = recordingSend({ operation, sent: false }, regions, () => {
        throw new TypeError("a policy threw");
      });
      await assert.rejects(throwing(pointRead(eastUs)), /a policy threw/);
      operation.operationEnded();
      assert.deepEqual(operation.requestedRegions().map(({ reason }) => reason), ["initial", "transportRetry"]);
      assert.deepEqual(operation.respondedRegions(), []);
      assert.equal(operation.final, true);
    });
  });

  describe("attemptSettled", () => {
    it("notes whether the service replied and keeps the latest hedging record of the operation", async () => {
      const operation = new OperationDetection();
      const response: PipelineResponse = { request: pointRead(eastUs), status: 503, headers: createHttpHeaders() };
      attachHedgeDiagnostics(response, record);
      assert.equal(await attemptSettled({ operation, sent: true }, Promise.resolve(response)), response);
      assert.deepEqual([operation.lastReplied, operation.lastRecord], [true, record]);
      const error = new Error("timed out");
      await assert.rejects(attemptSettled({ operation, sent: true }, Promise.reject(error)), (thrown) => thrown === error);
      assert.deepEqual([operation.lastReplied, operation.lastRecord], [false, record], "an error without a record keeps the last one");
    });
  });
});

