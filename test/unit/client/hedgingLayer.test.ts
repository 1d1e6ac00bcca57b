import assert from "node:assert/strict";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelineResponse } from "@azure/core-rest-pipeline";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { cosmosHedgingPolicyName } from "../../../src/client/hedgingLayer.js";
import { OperationDetection } from "../../../src/diagnostics/detection.js";
import { operationHeaderName, registerOperation, unregisterOperation } from "../../../src/diagnostics/dispatchRecording.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { eastUs, pointRead, westUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";

/** A transport on which East US answers after `eastMs` and every other region at once, each with a charge of 1. */
function answering(eastMs: number): HttpClient {
  return {
    sendRequest: (request) =>
      new Promise<PipelineResponse>((resolve) => {
        const delay = new URL(request.url).host === new URL(eastUs.endpoint).host ? eastMs : 0;
        setTimeout(() => resolve({ request, status: 200, headers: createHttpHeaders({ "x-ms-request-charge": "1" }) }), delay);
      }),
  };
}

describe("the hedging client's layer", () => {
  it("is the one policy of a hedging client's pipeline", () => {
    const client = createHedgingHttpClient({ httpClient: answering(0) });
    assert.deepEqual(
      client.pipeline.getOrderedPolicies().map((policy) => policy.name),
      [cosmosHedgingPolicyName],
    );
  });

  it("sends the SDK's request and its hedge through a policy of the caller's below it, and notes both in the operation's record", async () => {
    const clock = useFakeClock();
    try {
      const client = createHedgingHttpClient({ httpClient: answering(5_000), crossRegion: { threshold: 100 } });
      client.regions.setTopology({ readRegions: [eastUs, westUs] });
      const below: string[] = [];
      client.pipeline.addPolicy({ name: "mine", sendRequest: (request, next) => (below.push(new URL(request.url).host), next(request)) }, { afterPhase: "Sign" });
      const operation = new OperationDetection();
      const id = registerOperation(operation);
      const request = pointRead(eastUs, new AbortController().signal);
      request.headers.set(operationHeaderName, id);
      const pending = client.sendRequest(request);
      await clock.tickAsync(150);
      const response = await pending;
      unregisterOperation(id);
      operation.operationEnded();
      assert.equal(getHedgeDiagnostics(response)?.winningRegion, "West US");
      assert.deepEqual(below, ["acct-eastus.documents.azure.com", "acct-westus.documents.azure.com"]);
      assert.deepEqual(
        operation.requestedRegions().map(({ region, reason }) => `${region} ${reason}`),
        ["East US initial", "West US hedging"],
      );
      assert.equal(request.headers.has(operationHeaderName), false, "the operation's id never reaches the wire");
      assert.equal(operation.final, false, "the East US primary has not ended yet (this transport ignores aborts)");
      await clock.tickAsync(5_000);
      await Promise.resolve();
      assert.equal(operation.final, true);
      assert.equal(operation.requestCharge, 2);
    } finally {
      clock.restore();
    }
  });

  it("ends the record of a request that a policy of the caller's below it refuses by throwing, hedge or primary", async () => {
    const clock = useFakeClock();
    try {
      const client = createHedgingHttpClient({ httpClient: answering(1_000), crossRegion: { threshold: 100, thresholdStep: 10_000 } });
      client.regions.setTopology({ readRegions: [eastUs, westUs] });
      let refused = "West US";
      client.pipeline.addPolicy(
        {
          name: "residencyGuard",
          // Not async: it throws rather than rejects.
          sendRequest: (request, next) => {
            if (new URL(request.url).host === new URL((refused === "West US" ? westUs : eastUs).endpoint).host) throw new Error(`${refused} refused`);
            return next(request);
          },
        },
        { afterPhase: "Sign" },
      );
      const read = async (): Promise<{ operation: OperationDetection; outcome: PipelineResponse | Error }> => {
        const operation = new OperationDetection();
        const id = registerOperation(operation);
        const request = pointRead(eastUs, new AbortController().signal);
        request.headers.set(operationHeaderName, id);
        const pending = client.sendRequest(request).catch((error: Error) => error);
        await clock.tickAsync(1_000);
        const outcome = await pending;
        unregisterOperation(id);
        operation.operationEnded();
        return { operation, outcome };
      };
      const hedgeRefused = await read();
      assert.equal((hedgeRefused.outcome as PipelineResponse).status, 200, "the primary's answer, as without the hedge");
      assert.deepEqual(hedgeRefused.operation.requestedRegions().map(({ region }) => region), ["East US", "West US"]);
      assert.equal(hedgeRefused.operation.final, true);
      refused = "East US";
      const primaryRefused = await read();
      assert.match(
        (primaryRefused.outcome as Error).message,
        /East US refused/,
        "the primary's failure goes back at once, unhedged, as any transport error does: the SDK's retry moves on",
      );
      assert.deepEqual(primaryRefused.operation.requestedRegions().map(({ region }) => region), ["East US"]);
      assert.equal(primaryRefused.operation.final, true);
      client.regions.setTopology({ readRegions: [eastUs] });
      const alone = await read();
      assert.match((alone.outcome as Error).message, /East US refused/, "with no region to hedge to, the caller gets the policy's error");
      assert.equal(alone.operation.final, true);
      // A request of no @azure/cosmos operation (no record to end) is refused as a rejection too, by the race itself.
      const unrecorded = client.sendRequest(pointRead(eastUs, new AbortController().signal));
      assert.ok(unrecorded instanceof Promise);
      await assert.rejects(unrecorded, /East US refused/);
      assert.equal(clock.countTimers(), 0, "no timer of the race outlives it");
    } finally {
      clock.restore();
    }
  });

  it("hands the hedging the controls as the steering left them: a read moved off an excluded region says so in its record", async () => {
    const client = createHedgingHttpClient({ httpClient: answering(0), excludedRegions: ["East US"] });
    client.regions.setTopology({ readRegions: [eastUs, westUs] });
    const response = await client.sendRequest(pointRead(eastUs));
    assert.equal(new URL(response.request.url).host, new URL(westUs.endpoint).host);
    assert.deepEqual(getHedgeDiagnostics(response)?.routing, { sdkRegion: "East US", rerouteReason: "excludedRegion" });
  });

  it("fails a request pinned to a region the account does not have before anything is sent, as a rejection", async () => {
    const sent: string[] = [];
    const client = createHedgingHttpClient({ httpClient: { sendRequest: async (request) => (sent.push(request.url), { request, status: 200, headers: createHttpHeaders() }) } });
    client.regions.setTopology({ readRegions: [eastUs, westUs] });
    const request = pointRead(eastUs);
    request.headers.set("x-cosmos-hedging-region", JSON.stringify("Mars"));
    const result = client.sendRequest(request);
    assert.ok(result instanceof Promise);
    await assert.rejects(result, (error: Error) => error instanceof RangeError && error.message.includes('"Mars"'));
    assert.deepEqual(sent, []);
  });
});
