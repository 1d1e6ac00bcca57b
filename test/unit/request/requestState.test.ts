import assert from "node:assert/strict";
import { createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { operationOf, requestStateOf, stateIfAny } from "../../../src/request/requestState.js";
import { requestControlsOf, setRequestControls } from "../../../src/request/requestControls.js";
import { markForCoreTransport, reachesCoreTransport } from "../../../src/race/armAbort.js";
import { linkAttempt, noteHandedAttempt } from "../../../src/diagnostics/dispatchRecording.js";
import { OperationDetection } from "../../../src/diagnostics/detection.js";

const docUrl = "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/item1";
const queryUrl = "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs";

function pointRead(): PipelineRequest {
  return createPipelineRequest({ url: docUrl, method: "GET" });
}

describe("RequestState", () => {
  it("keeps everything the package knows of a request in one property, out of its keys and JSON", () => {
    const request = pointRead();
    const symbols = Object.getOwnPropertySymbols(request).length;
    const json = JSON.stringify(request);
    const keys = Object.keys(request);
    setRequestControls(request, { region: "West US" });
    assert.equal(operationOf(request), "pointRead");
    markForCoreTransport(request, true);
    const operation = new OperationDetection();
    noteHandedAttempt(request, operation);
    assert.equal(Object.getOwnPropertySymbols(request).length, symbols + 1, "one property, however many things are kept");
    assert.deepEqual(Object.keys(request), keys);
    assert.equal(JSON.stringify(request), json);
    const state = stateIfAny(request);
    assert.ok(state !== undefined);
    assert.equal(state.owner, request);
    assert.deepEqual(state.controls, { region: "West US" });
    assert.equal(state.kind, "pointRead");
    assert.equal(state.toCoreTransport, true);
    assert.equal(state.operation, operation);
    assert.equal(linkAttempt(request)?.operation, operation);
  });

  it("makes nothing for a request nobody asked about", () => {
    const request = pointRead();
    assert.equal(stateIfAny(request), undefined);
    assert.equal(reachesCoreTransport(request), false);
    assert.equal(stateIfAny(request), undefined, "reading makes no state");
    assert.equal(requestStateOf(request), requestStateOf(request), "one state per request");
  });

  it("classifies a request once, however its method or URL change afterwards", () => {
    const request = pointRead();
    assert.equal(operationOf(request), "pointRead");
    request.url = queryUrl;
    request.method = "POST";
    assert.equal(operationOf(request), "pointRead", "the first answer is kept");
  });

  it("gives a copy of a request a state of its own, and leaves the original's as it was: a copy carries its operation and controls, not its kind or mark", () => {
    const request = pointRead();
    operationOf(request);
    markForCoreTransport(request, true);
    noteHandedAttempt(request, new OperationDetection());
    setRequestControls(request, { excludedRegions: ["East US"], sdkOptionsKnown: true });
    const copy: PipelineRequest = { ...request, url: queryUrl, method: "POST" };
    assert.ok(Object.getOwnPropertySymbols(copy).length > 0, "the spread copies the property");
    assert.equal(operationOf(copy), "create", "classified afresh");
    assert.equal(reachesCoreTransport(copy), false);
    assert.equal(linkAttempt(copy)?.operation, stateIfAny(request)?.operation, "the same attempt of the same operation");
    assert.deepEqual(requestControlsOf(copy), { excludedRegions: ["East US"], sdkOptionsKnown: true }, "the SDK's options travel with the copy");
    assert.equal(stateIfAny(request)?.kind, "pointRead", "the original's state is untouched");
    assert.equal(stateIfAny(request)?.owner, request);
    const proxy = new Proxy(request, {});
    assert.equal(operationOf(proxy), "pointRead");
    assert.equal(stateIfAny(request)?.owner, request, "a proxy's state never replaces its target's");
  });

  it("keeps the state of a request that takes no new property, and the state made before it was frozen", () => {
    const frozen = Object.freeze(pointRead());
    assert.equal(operationOf(frozen), "pointRead");
    markForCoreTransport(frozen, true);
    assert.equal(reachesCoreTransport(frozen), true);
    assert.equal(requestControlsOf(frozen), requestControlsOf(frozen));

    const early = pointRead();
    markForCoreTransport(early, true);
    Object.freeze(early);
    assert.equal(operationOf(early), "pointRead");
    assert.equal(reachesCoreTransport(early), true, "the state made before freezing is still the request's");
    markForCoreTransport(early, false);
    assert.equal(reachesCoreTransport(early), false);
  });

  it("goes on from a copy of a state frozen with its request, keeping what it held", () => {
    const request = pointRead();
    setRequestControls(request, { region: "West US" });
    markForCoreTransport(request, true);
    const frozenState = stateIfAny(request);
    assert.ok(frozenState !== undefined);
    Object.freeze(frozenState);
    Object.freeze(request);
    assert.equal(operationOf(request), "pointRead", "classifying writes to the copy, not the frozen state");
    const state = stateIfAny(request);
    assert.notEqual(state, frozenState);
    assert.deepEqual([state?.owner, state?.controls, state?.toCoreTransport, state?.kind], [request, { region: "West US" }, true, "pointRead"]);
    assert.equal(stateIfAny(request), state, "one copy, kept");
  });
});
