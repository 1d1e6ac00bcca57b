import assert from "node:assert/strict";
import { createEmptyPipeline, createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelineRequest } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { mergeDetections, OperationDetection } from "../../../src/diagnostics/detection.js";
import { operationHeaderName, registerOperation, unregisterOperation } from "../../../src/diagnostics/dispatchRecording.js";
import { hedgingLayer } from "../../../src/client/hedgingLayer.js";
import { regionSteering } from "../../../src/policies/excludedRegionsPolicy.js";

const east = { name: "East US", endpoint: "https://acct-eastus.documents.azure.com/" };
const west = { name: "West US", endpoint: "https://acct-westus.documents.azure.com/" };
const regions = new RegionCache({ topology: { readRegions: [east, west] } });

/** A transport that answers each request as the script says for its host: a status, or a transport error. */
function transport(script: Record<string, (number | "reset")[]>): HttpClient & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    sendRequest: async (request) => {
      const host = new URL(request.url).host;
      seen.push(host);
      const next = script[host]?.shift() ?? 200;
      if (next === "reset") throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
      return { request, status: next, headers: createHttpHeaders({ "x-ms-request-charge": "1.5" }) };
    },
  };
}

function attempt(region: { endpoint: string }, id: string): PipelineRequest {
  return createPipelineRequest({ url: new URL("dbs/db/colls/c/docs/1", region.endpoint).href, headers: createHttpHeaders({ [operationHeaderName]: id }) });
}

function pipeline() {
  const built = createEmptyPipeline();
  // The hedging client's layer with no hedging in it: the detection record of each attempt, and nothing else.
  built.addPolicy(hedgingLayer(regions, regionSteering(regions), []));
  return built;
}

describe("the hedging detection record of an operation", () => {
  it("classifies the SDK's attempts: initial, operationRetry after a reply, transportRetry after none, regionFailover to another region", async () => {
    const operation = new OperationDetection();
    const id = registerOperation(operation);
    const wire = transport({ "acct-westus.documents.azure.com": [429, "reset"] });
    const send = (region: { endpoint: string }) => pipeline().sendRequest(wire, attempt(region, id)).catch(() => undefined);
    await send(west);
    await send(west);
    await send(west);
    await send(east);
    unregisterOperation(id);
    operation.operationEnded();
    assert.deepEqual(
      operation.requestedRegions().map(({ region, reason }) => [region, reason]),
      [
        ["West US", "initial"],
        ["West US", "operationRetry"],
        ["West US", "transportRetry"],
        ["East US", "regionFailover"],
      ],
    );
    assert.deepEqual(operation.respondedRegions(), ["West US", "West US", "East US"], "the reset got no reply");
    assert.equal(operation.requestCharge, 4.5);
    assert.equal(operation.hedgingStarted(), false);
    assert.equal(operation.final, true);
  });

  it("never lets its header reach the transport, and leaves requests of no operation alone", async () => {
    const headersSeen: (string | undefined)[] = [];
    const wire: HttpClient = {
      sendRequest: async (request) => {
        headersSeen.push(request.headers.get(operationHeaderName));
        return { request, status: 200, headers: createHttpHeaders() };
      },
    };
    await pipeline().sendRequest(wire, attempt(west, "no such operation"));
    await pipeline().sendRequest(wire, createPipelineRequest({ url: west.endpoint }));
    assert.deepEqual(headersSeen, [undefined, undefined]);
  });

  it("counts a hedge, stays open while a request runs after the operation ended, and settles once it ends", async () => {
    const operation = new OperationDetection();
    operation.requestSent("West US", "initial");
    operation.requestSent("East US", "hedging");
    operation.requestEnded("East US", true, 1);
    operation.operationEnded();
    assert.equal(operation.hedgingStarted(), true);
    assert.equal(operation.final, false, "the West US arm still drains");
    let settled = false;
    const waiting = operation.settled.then((record) => {
      settled = true;
      return record;
    });
    await Promise.resolve();
    assert.equal(settled, false);
    operation.requestEnded("West US", true, 1);
    assert.equal(await waiting, operation);
    assert.equal(operation.requestCharge, 2);
    assert.deepEqual(operation.respondedRegions(), ["East US", "West US"]);
    assert.ok(operation.requested("WESTUS") && operation.responded("east us") && !operation.requested("North Europe"));
  });

  it("merges the operations of a block in the order their requests went out", () => {
    const plan = new OperationDetection();
    const page = new OperationDetection();
    plan.requestSent("West US", "initial");
    page.requestSent("West US", "initial");
    plan.requestSent("East US", "hedging");
    for (const operation of [plan, page]) operation.operationEnded();
    plan.requestEnded("East US", true, 1);
    plan.requestEnded("West US", false, undefined);
    page.requestEnded("West US", true, 2);
    const merged = mergeDetections([plan, page]);
    assert.deepEqual(
      merged.requestedRegions().map(({ region, reason }) => `${region} ${reason}`),
      ["West US initial", "West US initial", "East US hedging"],
    );
    assert.deepEqual(merged.respondedRegions(), ["East US", "West US"]);
    assert.equal(merged.requestCharge, 3);
    assert.equal(merged.hedgingStarted(), true);
    assert.equal(merged.final, true);
  });
});
