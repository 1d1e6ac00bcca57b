import assert from "node:assert/strict";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import { OperationDetection } from "../../../src/diagnostics/detection.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { forgetOperation, linkAttempt, noteAttemptRecord, noteHandedAttempt, operationHeaderName, recordingSend, registerOperation } from "../../../src/diagnostics/dispatchRecording.js";
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
    it("links a request handed over with its operation, and a copy a policy of the caller's made of it", () => {
      const operation = new OperationDetection();
      const request = pointRead(eastUs);
      noteHandedAttempt(request, operation);
      assert.deepEqual(linkAttempt(request), { operation, sent: false });
      assert.equal(linkAttempt({ ...request })?.operation, operation, "a copy a policy made of it is the same attempt");
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
      await Promise.all([send(pointRead(eastUs)), send(pointRead(westUs))]);
      // The SDK's next attempts, after a reply: in the same region, then in another.
      await recordingSend({ operation, sent: false }, regions, answer("1"))(pointRead(eastUs));
      await recordingSend({ operation, sent: false }, regions, answer("0.5"))(pointRead(westUs));
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

  describe("the operation's latest record and reply", () => {
    it("keeps the record a policy made of an attempt, by the SDK's request, and whether the service replied to the SDK's request only", async () => {
      const operation = new OperationDetection();
      const request = pointRead(eastUs);
      noteHandedAttempt(request, operation);
      noteAttemptRecord(request, record);
      noteAttemptRecord(pointRead(eastUs), { ...record, skipReason: "notEligible" });
      assert.equal(operation.lastRecord, record, "a request of no operation changes nothing");
      const attempt = { operation, sent: false };
      const send = recordingSend(attempt, regions, (outgoing) => (outgoing === request ? Promise.reject(new Error("timed out")) : answer("1")(outgoing)));
      const hedge = pointRead(westUs);
      await Promise.allSettled([send(request), send(hedge)]);
      assert.equal(operation.lastReplied, false, "the SDK's own request got no reply, whatever its hedge got");
      const retry = pointRead(eastUs);
      const response: PipelineResponse = await recordingSend({ operation, sent: false }, regions, async (outgoing) => ({ request: outgoing, status: 503, headers: createHttpHeaders() }))(retry);
      assert.equal(response.status, 503);
      assert.equal(operation.lastReplied, true, "a reply of any status");
    });
  });
});

