import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { createEmptyPipeline, createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpMethods, Pipeline, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import sinon from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { AccountTopologyInit, RegionEndpoint } from "../../../src/topology/regionCache.js";
import { hedgeDiagnosticsHeaderName, pluginHeaderValue, requestControlHeaders } from "../../../src/cosmos/headers.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { classifyOperation } from "../../../src/cosmos/operationKind.js";
import { setRequestControls } from "../../../src/request/requestControls.js";
import {
  crossRegionHedgingDefaults,
  crossRegionHedgingPolicy,
  crossRegionHedgingPolicyName,
} from "../../../src/policies/crossRegionHedgingPolicy.js";
import type { CrossRegionHedgingPolicyOptions, CrossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { eastUs, northEurope, observe, pointRead, query, requestTo, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { captureAzureLogs } from "../../support/logCapture.js";
import { ok, pipelineOf, scriptedSender } from "../../support/scriptedPolicy.js";
import { demotionDefaults } from "../../../src/learning/regionRanking.js";
import { seededRandom } from "../../../src/testing/seededRandom.js";
import type { ScriptStep } from "../../support/fakeTransport.js";
import { latencyTransport } from "../../support/fakeTransport.js";

const threeRegions: AccountTopologyInit = { readRegions: [eastUs, westUs, northEurope] };
const slow = 10_000;

type Pending = ReturnType<typeof observe<PipelineResponse>>;

describe("crossRegionHedgingPolicy", () => {
  const harness = useRaceHarness();

  function pipelineWith(options: CrossRegionHedgingPolicyOptions): Pipeline {
    const pipeline = createEmptyPipeline();
    // Losers are aborted at once here, so each test ends with its race; draining has its own tests (loserDrain.test.ts).
    pipeline.addPolicy(crossRegionHedgingPolicy({ drainLosers: false, ...options }));
    return pipeline;
  }

  function regionsWith(topology: AccountTopologyInit = threeRegions, preferredRegions?: string[]): RegionCache {
    return new RegionCache({ topology, ...(preferredRegions !== undefined ? { preferredRegions } : {}) });
  }

  function send(pipeline: Pipeline, request: PipelineRequest): Pending {
    return observe(pipeline.sendRequest(harness.transport, request));
  }

  function signal(): AbortSignal {
    return harness.leaks.controller().signal;
  }

  function responseOf(pending: Pending): PipelineResponse {
    const state = pending.state();
    assert.ok(state.done, "the request has settled");
    assert.ok("value" in state, `the request resolved (it rejected with ${"error" in state ? String(state.error) : ""})`);
    return state.value;
  }

  function errorOf(pending: Pending): unknown {
    const state = pending.state();
    assert.ok(state.done, "the request has settled");
    assert.ok("error" in state, "the request rejected");
    return state.error;
  }

  function diagnosticsOf(value: unknown): HedgeDiagnostics {
    const diagnostics = getHedgeDiagnostics(value);
    assert.ok(diagnostics !== undefined, "diagnostics are attached");
    return diagnostics;
  }

  /** Sends a request whose primary answers only after `slow` and reports how many arms went out. */
  async function armsSentFor(pipeline: Pipeline, request: PipelineRequest, status = 200): Promise<PipelineResponse> {
    harness.transport.script(request.url, { status, delayMs: slow });
    const pending = send(pipeline, request);
    await harness.clock.tickAsync(slow);
    return responseOf(pending);
  }

  it("has the core-rest-pipeline shape", () => {
    const policy = crossRegionHedgingPolicy({ regions: regionsWith() });
    assert.equal(policy.name, crossRegionHedgingPolicyName);
    assert.equal(crossRegionHedgingPolicyName, "crossRegionHedgingPolicy");
    assert.equal(typeof policy.sendRequest, "function");
  });

  describe("writes", () => {
    const writes: ReadonlyArray<readonly [string, HttpMethods, string, Record<string, string>]> = [
      ["create", "POST", "dbs/db/colls/c/docs", {}],
      ["upsert", "POST", "dbs/db/colls/c/docs", { "x-ms-documentdb-is-upsert": "True" }],
      ["replace", "PUT", "dbs/db/colls/c/docs/1", {}],
      ["patch", "PATCH", "dbs/db/colls/c/docs/1", {}],
      ["delete", "DELETE", "dbs/db/colls/c/docs/1", {}],
      ["batch", "POST", "dbs/db/colls/c/docs", { "x-ms-cosmos-is-batch-request": "True" }],
    ];

    for (const [operation, method, path, headers] of writes) {
      it(`${operation} is sent once on a single-write account, even with enableMultiWriteRegionHedge`, async () => {
        const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100, enableMultiWriteRegionHedge: true });
        const request = requestTo(eastUs, method, path, { headers, body: '{"id":"1"}', abortSignal: signal() });
        const response = await armsSentFor(pipeline, request, 201);
        assert.equal(harness.transport.received.length, 1);
        const diagnostics = diagnosticsOf(response);
        assert.equal(diagnostics.operation, operation);
        assert.equal(diagnostics.skipReason, "notEligible");
        assert.equal(diagnostics.terminalState, "skipped");
        assert.deepEqual(diagnostics.arms, []);
      });
    }

    it("a write a policy of the caller's made by spreading a read it had classified is sent once", async () => {
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy({
        name: "readToReplace",
        sendRequest: (request, next) => {
          if (classifyOperation(request) !== "pointRead") return next(request);
          return next({ ...request, method: "PUT", body: '{"id":"1"}' });
        },
      }, { phase: "Serialize" });
      pipeline.addPolicy(crossRegionHedgingPolicy({ regions: regionsWith(), threshold: 100, drainLosers: false }));
      const response = await armsSentFor(pipeline, pointRead(eastUs, signal()), 200);
      assert.deepEqual(harness.transport.received.map((received) => `${received.method} ${received.origin}`), ["PUT https://acct-eastus.documents.azure.com"]);
      assert.equal(diagnosticsOf(response).operation, "replace");
    });

    const multiWrite: AccountTopologyInit = {
      readRegions: [eastUs, westUs, northEurope],
      writeRegions: [eastUs, westUs],
      multipleWriteLocations: true,
    };

    // A patch or batch is hedged only when every operation in it may be applied twice (see writeSafety).
    const repeatableBodies: Partial<Record<string, string>> = {
      patch: JSON.stringify({ operations: [{ op: "set", path: "/v", value: 1 }] }),
      batch: JSON.stringify([{ operationType: "Create", resourceBody: { id: "1" } }]),
    };
    // An upsert is hedged only with its If-Match (see writeSafety).
    const repeatableHeaders: Partial<Record<string, Record<string, string>>> = { upsert: { "If-Match": '"etag-1"' } };

    for (const [name, method, body, headers] of [
      ["a patch with incr", "PATCH", JSON.stringify({ operations: [{ op: "incr", path: "/v", value: 1 }] }), {}],
      ["a bulk request with a patch that appends", "POST", JSON.stringify([{ operationType: "Patch", id: "1", resourceBody: { operations: [{ op: "add", path: "/l/-", value: 1 }] } }]), { "x-ms-cosmos-is-batch-request": "true" }],
      ["an upsert without If-Match", "POST", '{"id":"1"}', { "x-ms-documentdb-is-upsert": "True" }],
      ["a bulk request with an upsert without ifMatch", "POST", JSON.stringify([{ operationType: "Upsert", resourceBody: { id: "1" } }]), { "x-ms-cosmos-is-batch-request": "true" }],
    ] as const) {
      it(`${name} is sent once even with enableMultiWriteRegionHedge: a second application would change the answer`, async () => {
        const pipeline = pipelineWith({ regions: regionsWith(multiWrite), threshold: 100, enableMultiWriteRegionHedge: true });
        const path = method === "PATCH" ? "dbs/db/colls/c/docs/1" : "dbs/db/colls/c/docs";
        const request = requestTo(eastUs, method, path, { headers, body, abortSignal: signal() });
        const response = await armsSentFor(pipeline, request, 200);
        assert.equal(harness.transport.received.length, 1);
        assert.equal(diagnosticsOf(response).skipReason, "notEligible");
      });
    }

    for (const [operation, method, path, headers] of writes) {
      it(`${operation} is not hedged on a multi-write account without enableMultiWriteRegionHedge`, async () => {
        const pipeline = pipelineWith({ regions: regionsWith(multiWrite), threshold: 100 });
        const request = requestTo(eastUs, method, path, { headers, body: '{"id":"1"}', abortSignal: signal() });
        const response = await armsSentFor(pipeline, request, 201);
        assert.equal(harness.transport.received.length, 1);
        assert.equal(diagnosticsOf(response).skipReason, "notEligible");
      });

      it(`${operation} is hedged to the write regions on a multi-write account with enableMultiWriteRegionHedge`, async () => {
        const pipeline = pipelineWith({ regions: regionsWith(multiWrite), threshold: 100, enableMultiWriteRegionHedge: true });
        const body = repeatableBodies[operation] ?? '{"id":"1"}';
        const request = requestTo(eastUs, method, path, { headers: { ...headers, ...repeatableHeaders[operation] }, body, abortSignal: signal() });
        harness.transport.script(eastUs.endpoint, { status: 201, delayMs: slow });
        harness.transport.script(westUs.endpoint, { status: 201, delayMs: 20 });
        const pending = send(pipeline, request);
        await harness.clock.tickAsync(99);
        assert.equal(harness.transport.received.length, 1);
        await harness.clock.tickAsync(21);
        const diagnostics = diagnosticsOf(responseOf(pending));
        assert.equal(diagnostics.operation, operation);
        assert.equal(diagnostics.terminalState, "hedgeWon");
        assert.deepEqual(
          diagnostics.arms.map((arm) => arm.region),
          ["East US", "West US"],
          "North Europe is a read region only",
        );
        assert.equal(harness.transport.received[1]?.method, method);
        assert.equal(harness.transport.received[1]?.request.body, body);
      });
    }
  });

  describe("a hedged write whose primary answers without winning", () => {
    const multiWriteRegions: AccountTopologyInit = {
      readRegions: [eastUs, westUs, northEurope],
      writeRegions: [eastUs, westUs],
      multipleWriteLocations: true,
    };
    const create = () => requestTo(eastUs, "POST", "dbs/db/colls/c/docs", { body: '{"id":"1"}', abortSignal: signal() });
    /** Writes hedged at 100 ms, one hedge a write. */
    const hedgedWrites = (): Pipeline => pipelineWith({ regions: regionsWith(multiWriteRegions), threshold: 100, thresholdStep: 5_000, enableMultiWriteRegionHedge: true });

    // The hedge in flight may have created the document: the SDK's retry of the 503 would meet it (a 409) through
    // the hedged client where plain's retry creates it.
    it("past the threshold, a 503 waits for the hedge in flight, whose 201 is the write's answer, and asks no region more", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(multiWriteRegions), threshold: 100, thresholdStep: 50, enableMultiWriteRegionHedge: true });
      harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 130 });
      harness.transport.script(westUs.endpoint, { status: 201, delayMs: 300 });
      const pending = send(pipeline, create());
      await harness.clock.tickAsync(130);
      assert.equal(pending.state().done, false, "the 503 waits for West US");
      await harness.clock.tickAsync(270);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.equal(diagnostics.terminalState, "hedgeWon");
      assert.deepEqual(diagnostics.arms.map((arm) => [arm.region, arm.status, arm.outcome]), [
        ["East US", 503, "lost"],
        ["West US", 201, "returned"],
      ]);
      assert.equal(harness.transport.received.length, 2);
    });

    it("past the threshold, a 503 waits for the hedge in flight, and goes back as the race's fallback when the hedge fails too", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(multiWriteRegions), threshold: 100, enableMultiWriteRegionHedge: true });
      harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 130 });
      harness.transport.script(westUs.endpoint, { status: 503, delayMs: 300 });
      const pending = send(pipeline, create());
      await harness.clock.tickAsync(400);
      const response = responseOf(pending);
      assert.equal(response.status, 503);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.equal(diagnostics.winningRegion, "East US");
    });

    // A bulk request one of whose operations fails on its own (a stale ifMatch): every hedge's 200 carries that failure,
    // so none wins, yet the hedge applied the other operations, which the SDK's retry of the 503 would meet (a 409, a
    // 404) where plain's retry applies them (fourth hostile review: plain [200, 412, 201, 204], hedged [412, 412, 409, 404]).
    const bulk = () =>
      requestTo(eastUs, "POST", "dbs/db/colls/c/docs", {
        headers: { "x-ms-cosmos-is-batch-request": "True" },
        body: JSON.stringify([
          { operationType: "Upsert", resourceBody: { id: "a" }, ifMatch: '"stale"' },
          { operationType: "Create", resourceBody: { id: "b" } },
        ]),
        abortSignal: signal(),
      });
    const appliedButOne = JSON.stringify([{ statusCode: 412 }, { statusCode: 201 }]);

    for (const [order, primaryMs, hedgeMs] of [
      ["the hedge's 200 first, then the primary's 503", 400, 150],
      ["the primary's 503 first, waiting for the hedge's 200", 130, 300],
    ] as const) {
      it(`a bulk request whose hedge answered 200 with an operation's own failure, ${order}: the hedge's answer is the write's`, async () => {
        const pipeline = hedgedWrites();
        harness.transport.script(eastUs.endpoint, { status: 503, delayMs: primaryMs });
        harness.transport.script(westUs.endpoint, { status: 200, delayMs: hedgeMs, body: appliedButOne });
        const pending = send(pipeline, bulk());
        await harness.clock.tickAsync(Math.min(primaryMs, 100 + hedgeMs));
        assert.equal(pending.state().done, false, "the first answer is no win");
        await harness.clock.tickAsync(Math.max(primaryMs, 100 + hedgeMs) - Math.min(primaryMs, 100 + hedgeMs));
        const response = responseOf(pending);
        assert.equal(response.status, 200);
        assert.equal(response.bodyAsText, appliedButOne);
        const diagnostics = diagnosticsOf(response);
        assert.equal(diagnostics.terminalState, "hedgeWon");
        assert.equal(diagnostics.winningRegion, "West US");
        assert.equal(harness.transport.received.length, 2, "no region more");
      });
    }

    it("a bulk request whose hedge answered 200 with an operation's own failure, then the primary's own 200: the primary's answer", async () => {
      const pipeline = hedgedWrites();
      const primaryAnswer = JSON.stringify([{ statusCode: 200 }, { statusCode: 201 }]);
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 400, body: primaryAnswer });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 150, body: JSON.stringify([{ statusCode: 412 }, { statusCode: 409 }]) });
      const pending = send(pipeline, bulk());
      await harness.clock.tickAsync(400);
      const response = responseOf(pending);
      assert.equal(response.bodyAsText, primaryAnswer);
      assert.equal(diagnosticsOf(response).terminalState, "primaryWon");
    });

    // A write's hedge the service may have applied is never cut to give its socket up: the SDK's retry of the primary's
    // 503 would meet what it applied (sixth hostile review's second round: a create 409 where plain's was 201).
    it("a write's hedge is not cut to give its socket up to a request of the SDK's: the 503 waits for it, and its 201 is the answer", async () => {
      const pool: { sockets: Record<string, unknown[]>; maxSockets: number } = { sockets: {}, maxSockets: 1 };
      const pipeline = hedgedWrites();
      harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 130 });
      harness.transport.script(westUs.endpoint, { status: 201, delayMs: 400 });
      const write = create();
      write.agent = pool as unknown as NonNullable<PipelineRequest["agent"]>;
      const pending = send(pipeline, write);
      await harness.clock.tickAsync(150);
      pool.sockets[`${new URL(westUs.endpoint).hostname}:443:`] = [{}];
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const read = pointRead(westUs, signal());
      read.agent = write.agent;
      const other = send(pipeline, read);
      await harness.clock.tickAsync(10);
      assert.equal(responseOf(other).status, 200);
      assert.equal(pending.state().done, false, "the 503 still waits for West US");
      await harness.clock.tickAsync(340);
      const response = responseOf(pending);
      assert.equal(response.status, 201);
      assert.equal(diagnosticsOf(response).terminalState, "hedgeWon");
    });

    // The create's hedge was applied before the primary's create reached its region, which answers 409 for the document
    // the hedge created: plain's one create is a 201 (sixth hostile review's second round: 409 x9 where plain had 201 x9).
    it("a primary's 409 while its hedge runs waits for it: the hedge's 201 is the create's answer", async () => {
      const pipeline = hedgedWrites();
      harness.transport.script(eastUs.endpoint, { status: 409, delayMs: 300 });
      harness.transport.script(westUs.endpoint, { status: 201, delayMs: 400 });
      const pending = send(pipeline, create());
      await harness.clock.tickAsync(300);
      assert.equal(pending.state().done, false, "the 409 waits for West US");
      await harness.clock.tickAsync(200);
      const response = responseOf(pending);
      assert.equal(response.status, 201);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "hedgeWon");
      assert.deepEqual(diagnostics.arms.map((arm) => [arm.region, arm.status, arm.outcome]), [
        ["East US", 409, "lost"],
        ["West US", 201, "returned"],
      ]);
    });

    // A genuine conflict whose hedge region hangs: plain's 409 came at 0.3 s, the hedged one waited for the SDK's timeout
    // and ended a TimeoutError (a quick check of the second round by a third helper).
    it("a primary's 409 whose hedge hangs goes back once it has waited as long again as it took, the hedge cut", async () => {
      const pipeline = hedgedWrites();
      harness.transport.script(eastUs.endpoint, { status: 409, delayMs: 300 });
      harness.transport.script(westUs.endpoint, { status: 201, delayMs: 20_000 });
      const pending = send(pipeline, create());
      await harness.clock.tickAsync(599);
      assert.equal(pending.state().done, false, "the 409 waits for West US");
      await harness.clock.tickAsync(1);
      const response = responseOf(pending);
      assert.equal(response.status, 409);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.deepEqual(diagnostics.arms.map((arm) => [arm.region, arm.outcome]), [
        ["East US", "returned"],
        ["West US", "aborted"],
      ]);
      assert.equal(harness.transport.receivedBy(westUs.endpoint)[0]?.outcome, "aborted");
    });

    it("a primary's 409 whose hedge meets the same conflict goes back when the hedge answers; before the threshold, at once", async () => {
      const pipeline = hedgedWrites();
      harness.transport.script(eastUs.endpoint, { status: 409, delayMs: 300 });
      harness.transport.script(westUs.endpoint, { status: 409, delayMs: 250 });
      const pending = send(pipeline, create());
      await harness.clock.tickAsync(350);
      const response = responseOf(pending);
      assert.equal(response.status, 409);
      assert.equal(diagnosticsOf(response).winningRegion, "East US");
      harness.transport.script(eastUs.endpoint, { status: 409, delayMs: 30 });
      const early = send(pipeline, create());
      await harness.clock.tickAsync(30);
      assert.equal(responseOf(early).status, 409);
      assert.equal(diagnosticsOf(responseOf(early)).terminalState, "primaryWon");
      assert.equal(harness.transport.received.length, 3);
    });

    it("before the threshold, a 503 goes back at once, unhedged, as a read's does: no hedge went out", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(multiWriteRegions), threshold: 100, enableMultiWriteRegionHedge: true });
      harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 30 });
      harness.transport.script(westUs.endpoint, { status: 201, delayMs: 10 });
      const pending = send(pipeline, create());
      await harness.clock.tickAsync(30);
      assert.equal(responseOf(pending).status, 503);
      await harness.clock.tickAsync(1000);
      assert.equal(harness.transport.received.length, 1);
    });
  });

  describe("requests that pass through unhedged", () => {
    it("a retry of the SDK's (marked by its plugin): one send where the SDK sent it, skipReason sdkRetry; its first attempt is hedged", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      const retry = pointRead(eastUs, signal());
      retry.headers.set(requestControlHeaders.sdkRetry, pluginHeaderValue("retry"));
      const response = await armsSentFor(pipeline, retry);
      assert.deepEqual(harness.transport.received.map((received) => received.origin), ["https://acct-eastus.documents.azure.com"]);
      assert.equal(diagnosticsOf(response).skipReason, "sdkRetry");
      assert.equal(retry.headers.has(requestControlHeaders.sdkRetry), false, "the marker never reaches the wire");
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const first = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(diagnosticsOf(first).hedgeFired, true);
    });

    it("a single applicable region: one send, skipReason singleRegion", async () => {
      const pipeline = pipelineWith({ regions: regionsWith({ readRegions: [eastUs] }), threshold: 100 });
      const response = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(harness.transport.received.length, 1);
      assert.equal(diagnosticsOf(response).skipReason, "singleRegion");
    });

    it("a preferred list that names one of the account's regions leaves one applicable region", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(threeRegions, ["East US", "Mars Central"]), threshold: 100 });
      const response = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(harness.transport.received.length, 1);
      assert.equal(diagnosticsOf(response).skipReason, "singleRegion");
    });

    it("a Node Readable body: one send, skipReason streamBody", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      const request = query(eastUs, signal());
      const body = Readable.from(['{"query":"SELECT * FROM c"}']);
      request.body = body;
      const response = await armsSentFor(pipeline, request);
      assert.equal(harness.transport.received.length, 1);
      assert.equal(harness.transport.received[0]?.request, request, "the request itself is sent, not a copy");
      assert.equal(diagnosticsOf(response).skipReason, "streamBody");
    });

    it("a web ReadableStream body: one send, skipReason streamBody", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      const request = query(eastUs, signal());
      request.body = new ReadableStream({ start: (controller) => controller.close() });
      const response = await armsSentFor(pipeline, request);
      assert.equal(harness.transport.received.length, 1);
      assert.equal(diagnosticsOf(response).skipReason, "streamBody");
    });

    it("a request to a host that is not one of the account's regions: skipReason unknownRegion", async () => {
      const stranger: RegionEndpoint = { name: "Elsewhere", endpoint: "https://other.documents.azure.com/" };
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      const response = await armsSentFor(pipeline, pointRead(stranger, signal()));
      assert.equal(harness.transport.received.length, 1);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.skipReason, "unknownRegion");
      assert.equal(diagnostics.primaryRegion, undefined);
    });

    it("a collection read: one send of the request itself, no diagnostics", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      const request = requestTo(eastUs, "GET", "dbs/db/colls/c", { abortSignal: signal() });
      const response = await armsSentFor(pipeline, request);
      assert.equal(harness.transport.received.length, 1);
      assert.equal(harness.transport.received[0]?.request, request);
      assert.equal(getHedgeDiagnostics(response), undefined);
      assert.equal(response.headers.get(hedgeDiagnosticsHeaderName), undefined);
    });

    it("an account read: one send, no diagnostics, and the topology is learned from it", async () => {
      const regions = new RegionCache();
      const pipeline = pipelineWith({ regions, threshold: 100 });
      harness.transport.script(eastUs.endpoint, {
        status: 200,
        delayMs: 5,
        body: accountBody({ regions: [eastUs, westUs] }),
      });
      const pending = send(pipeline, requestTo(eastUs, "GET", "", { abortSignal: signal() }));
      await harness.clock.tickAsync(slow);
      const response = responseOf(pending);
      assert.equal(harness.transport.received.length, 1);
      assert.equal(getHedgeDiagnostics(response), undefined);
      assert.equal(response.headers.get(hedgeDiagnosticsHeaderName), undefined);
      assert.deepEqual(
        regions.topology?.readRegions.map((region) => region.name),
        ["East US", "West US"],
      );
    });
  });

  describe("enablement and thresholds", () => {
    async function launchTimes(pipeline: Pipeline, until: number): Promise<{ times: number[]; diagnostics: HedgeDiagnostics }> {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: until });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const start = Date.now();
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(until);
      const diagnostics = diagnosticsOf(responseOf(pending));
      return { times: harness.transport.received.map((record) => record.receivedAt - start), diagnostics };
    }

    it("explicit enablement defaults to threshold 500 and step 100", async () => {
      const { times, diagnostics } = await launchTimes(pipelineWith({ regions: regionsWith() }), 1000);
      assert.deepEqual(times, [0, 500, 600]);
      assert.equal(diagnostics.thresholdMs, 500);
      assert.equal(diagnostics.thresholdStepMs, 100);
      assert.equal(diagnostics.thresholdSource, "options");
      assert.deepEqual(
        [crossRegionHedgingDefaults.threshold, crossRegionHedgingDefaults.thresholdStep],
        [500, 100],
      );
    });

    it("validates each option on the very value it uses: a getter that changes its answer after validation changes nothing", async () => {
      let reads = 0;
      const options = {
        regions: regionsWith(),
        threshold: 200,
        drainLosers: false,
        // A live config object (a proxy, a computed getter) may answer differently each time it is read.
        get thresholdStep(): number {
          reads += 1;
          return reads <= 2 ? 100 : -1;
        },
      };
      const pipeline = createEmptyPipeline();
      // Handed over as it is, not spread into a copy (which would read the getter once).
      pipeline.addPolicy(crossRegionHedgingPolicy(options));
      const { times, diagnostics } = await launchTimes(pipeline, 1000);
      assert.deepEqual(times, [0, 200, 300]);
      assert.equal(diagnostics.thresholdStepMs, 100);
      assert.equal(reads, 1, "the option was read once");
    });

    it("explicit enablement honours the given threshold and step exactly", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 40, thresholdStep: 7 });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 100 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(39);
      assert.equal(harness.transport.received.length, 1);
      await harness.clock.tickAsync(1);
      assert.equal(harness.transport.received.length, 2);
      await harness.clock.tickAsync(6);
      assert.equal(harness.transport.received.length, 2);
      await harness.clock.tickAsync(1);
      assert.equal(harness.transport.received.length, 3);
      await harness.clock.tickAsync(100);
      assert.equal(responseOf(pending).status, 200);
    });

    it('"followAccount" without PPAF does not hedge: skipReason disabled', async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), enabled: "followAccount" });
      const response = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(harness.transport.received.length, 1);
      assert.equal(diagnosticsOf(response).skipReason, "disabled");
    });

    it('"followAccount" with PPAF hedges at min(1000, 60000 / 2) = 1000 with step 500', async () => {
      const pipeline = pipelineWith({ regions: regionsWith({ ...threeRegions, perPartitionFailover: true }), enabled: "followAccount" });
      const { times, diagnostics } = await launchTimes(pipeline, 2000);
      assert.deepEqual(times, [0, 1000, 1500]);
      assert.equal(diagnostics.thresholdMs, 1000);
      assert.equal(diagnostics.thresholdStepMs, 500);
      assert.equal(diagnostics.thresholdSource, "ppafDefault");
    });

    it('"followAccount" with PPAF and requestTimeout 1200 hedges at 600', async () => {
      const pipeline = pipelineWith({
        regions: regionsWith({ ...threeRegions, perPartitionFailover: true }),
        enabled: "followAccount",
        requestTimeout: 1200,
      });
      const { times, diagnostics } = await launchTimes(pipeline, 2000);
      assert.deepEqual(times, [0, 600, 1100]);
      assert.equal(diagnostics.thresholdMs, 600);
    });

    it('"followAccount" with PPAF and an explicit threshold uses it', async () => {
      const pipeline = pipelineWith({
        regions: regionsWith({ ...threeRegions, perPartitionFailover: true }),
        enabled: "followAccount",
        threshold: 250,
      });
      const { times, diagnostics } = await launchTimes(pipeline, 2000);
      assert.deepEqual(times, [0, 250, 750]);
      assert.equal(diagnostics.thresholdSource, "options");
    });

    it('"followAccount" starts hedging when an account read reports PPAF', async () => {
      const regions = regionsWith();
      const pipeline = pipelineWith({ regions, enabled: "followAccount" });
      const before = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(diagnosticsOf(before).skipReason, "disabled");
      await readAccount(pipeline, accountBody({ regions: [eastUs, westUs, northEurope], ppaf: true }));
      harness.transport.received.length = 0;
      const { times } = await launchTimes(pipeline, 2000);
      assert.deepEqual(times, [0, 1000, 1500]);
    });

    it("enabled: false does not hedge: skipReason disabled", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), enabled: false, threshold: 100 });
      const response = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(harness.transport.received.length, 1);
      assert.equal(diagnosticsOf(response).skipReason, "disabled");
    });

    it("disableCrossRegionalHedging on the account suppresses hedging (accountSwitch) until it is lifted", async () => {
      const regions = regionsWith();
      const pipeline = pipelineWith({ regions, threshold: 100 });
      await readAccount(pipeline, accountBody({ regions: [eastUs, westUs, northEurope], hedgingDisabled: true }));
      const suppressed = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(harness.transport.receivedBy(eastUs.endpoint).length, 2, "the account read and one document read");
      assert.equal(harness.transport.received.length, 2);
      assert.equal(diagnosticsOf(suppressed).skipReason, "accountSwitch");

      await readAccount(pipeline, accountBody({ regions: [eastUs, westUs, northEurope], hedgingDisabled: false }));
      harness.transport.received.length = 0;
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const restored = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(harness.transport.received.length, 3);
      assert.equal(diagnosticsOf(restored).terminalState, "primaryWon");
    });

    it("disableCrossRegionalHedging set through setTopology suppresses per-request hedging overrides too", async () => {
      const regions = regionsWith({ ...threeRegions, crossRegionalHedgingDisabled: true });
      const pipeline = pipelineWith({ regions, threshold: 100 });
      const request = pointRead(eastUs, signal());
      setRequestControls(request, { hedging: { threshold: 10 } });
      const response = await armsSentFor(pipeline, request);
      assert.equal(harness.transport.received.length, 1);
      assert.equal(diagnosticsOf(response).skipReason, "accountSwitch");
    });
  });

  describe("option validation", () => {
    const badNumbers: ReadonlyArray<readonly [unknown, string]> = [
      [0, "0"],
      [-1, "-1"],
      [Number.NaN, "NaN"],
      [Number.POSITIVE_INFINITY, "Infinity"],
      ["100", '"100"'],
    ];
    for (const option of ["threshold", "thresholdStep", "requestTimeout"] as const) {
      for (const [value, shown] of badNumbers) {
        it(`${option}: ${shown} is a RangeError naming the option and the value`, () => {
          assert.throws(
            () => crossRegionHedgingPolicy({ [option]: value } as CrossRegionHedgingPolicyOptions),
            (error: unknown) => {
              assert.ok(error instanceof RangeError, `expected a RangeError, got ${String(error)}`);
              assert.ok(error.message.startsWith(`${option} `), error.message);
              assert.ok(error.message.includes(`got ${shown}`), error.message);
              return true;
            },
          );
        });
      }
    }

    const badTypes: ReadonlyArray<readonly [keyof CrossRegionHedgingPolicyOptions, unknown, string]> = [
      ["enabled", "yes", '"yes"'],
      ["enabled", 1, "1"],
      ["enabled", null, "null"],
      ["regions", {}, "an object"],
      ["regions", "East US", '"East US"'],
      ["regions", [eastUs], "an array of 1"],
      ["onDiagnostics", "console.log", '"console.log"'],
      ["onDiagnostics", 42, "42"],
      ["enableMultiWriteRegionHedge", "true", '"true"'],
      ["signer", {}, "an object"],
    ];
    for (const [option, value, shown] of badTypes) {
      it(`${option}: ${shown} is a TypeError naming the option and the value`, () => {
        assert.throws(
          () => crossRegionHedgingPolicy({ [option]: value } as CrossRegionHedgingPolicyOptions),
          (error: unknown) => {
            assert.ok(error instanceof TypeError, `expected a TypeError, got ${String(error)}`);
            assert.ok(error.message.startsWith(`${option} `), error.message);
            assert.ok(error.message.includes(`got ${shown}`), error.message);
            return true;
          },
        );
      });
    }

    it("options that are not an object are a TypeError", () => {
      assert.throws(() => crossRegionHedgingPolicy("fast" as unknown as CrossRegionHedgingPolicyOptions), TypeError);
    });
  });

  describe("per-request controls", () => {
    it("hedging: false sends once: skipReason disabled", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      const request = pointRead(eastUs, signal());
      setRequestControls(request, { hedging: false });
      const response = await armsSentFor(pipeline, request);
      assert.equal(harness.transport.received.length, 1);
      assert.equal(diagnosticsOf(response).skipReason, "disabled");
    });

    it("hedging: { threshold: 50 } hedges at 50 with thresholdSource request, keeping the policy's step", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 500, thresholdStep: 30 });
      const request = pointRead(eastUs, signal());
      setRequestControls(request, { hedging: { threshold: 50 } });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 200 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const pending = send(pipeline, request);
      await harness.clock.tickAsync(49);
      assert.equal(harness.transport.received.length, 1);
      await harness.clock.tickAsync(1);
      assert.equal(harness.transport.received.length, 2);
      await harness.clock.tickAsync(150);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.deepEqual(
        harness.transport.received.map((record) => record.receivedAt),
        [0, 50, 80],
      );
      assert.equal(diagnostics.thresholdMs, 50);
      assert.equal(diagnostics.thresholdStepMs, 30);
      assert.equal(diagnostics.thresholdSource, "request");
    });

    it("a hedging override turns hedging on for its request on a client that does not hedge, as in .NET", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), enabled: false });
      const request = pointRead(eastUs, signal());
      setRequestControls(request, { hedging: { threshold: 20, thresholdStep: 20 } });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const response = await armsSentFor(pipeline, request);
      assert.deepEqual(
        harness.transport.received.map((record) => record.receivedAt),
        [0, 20, 40],
      );
      const diagnostics = getHedgeDiagnostics(response);
      assert.equal(diagnostics?.thresholdSource, "request");
      assert.equal(diagnostics?.skipReason, undefined);
    });

    it("a hedging override with no threshold turns hedging on with the explicit defaults", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), enabled: "followAccount" });
      const request = pointRead(eastUs, signal());
      setRequestControls(request, { hedging: {} });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const response = await armsSentFor(pipeline, request);
      assert.deepEqual(
        harness.transport.received.map((record) => record.receivedAt),
        [0, 500, 600],
      );
      assert.equal(getHedgeDiagnostics(response)?.thresholdMs, 500);
    });

    it("the account's disableCrossRegionalHedging wins over a request's hedging override", async () => {
      const pipeline = pipelineWith({ regions: regionsWith({ ...threeRegions, crossRegionalHedgingDisabled: true }) });
      const request = pointRead(eastUs, signal());
      setRequestControls(request, { hedging: { threshold: 20 } });
      const response = await armsSentFor(pipeline, request);
      assert.deepEqual(
        harness.transport.received.map((record) => record.receivedAt),
        [0],
      );
      assert.equal(getHedgeDiagnostics(response)?.skipReason, "accountSwitch");
    });

    it("a hedging override replaces only the fields it sets, over the PPAF defaults", async () => {
      const pipeline = pipelineWith({ regions: regionsWith({ ...threeRegions, perPartitionFailover: true }), enabled: "followAccount" });
      const request = pointRead(eastUs, signal());
      setRequestControls(request, { hedging: { thresholdStep: 50 } });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const response = await armsSentFor(pipeline, request);
      assert.deepEqual(
        harness.transport.received.map((record) => record.receivedAt),
        [0, 1000, 1050],
      );
      const diagnostics = getHedgeDiagnostics(response);
      assert.equal(diagnostics?.thresholdMs, 1000);
      assert.equal(diagnostics?.thresholdStepMs, 50);
      assert.equal(diagnostics?.thresholdSource, "ppafDefault");
    });

    it("excludedRegions keeps hedges away from the excluded region", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100, thresholdStep: 50 });
      const request = pointRead(eastUs, signal());
      setRequestControls(request, { excludedRegions: ["westus"] });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const response = await armsSentFor(pipeline, request);
      assert.equal(harness.transport.receivedBy(westUs.endpoint).length, 0);
      assert.deepEqual(
        diagnosticsOf(response).arms.map((arm) => [arm.region, arm.startOffsetMs]),
        [
          ["East US", 0],
          ["North Europe", 100],
        ],
      );
    });

    it("client-level excluded regions keep hedges away too", async () => {
      const regions = new RegionCache({ topology: threeRegions, excludedRegions: ["North Europe"] });
      const pipeline = pipelineWith({ regions, threshold: 100 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      const response = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(harness.transport.receivedBy(northEurope.endpoint).length, 0);
      assert.equal(diagnosticsOf(response).arms.length, 2);
    });

    it("region pins the request: one send, skipReason pinnedRegion", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      const request = pointRead(eastUs, signal());
      setRequestControls(request, { region: "East US" });
      const response = await armsSentFor(pipeline, request);
      assert.equal(harness.transport.received.length, 1);
      assert.equal(diagnosticsOf(response).skipReason, "pinnedRegion");
    });
  });

  describe("targets", () => {
    const insecureWestUs: RegionEndpoint = { name: "West US", endpoint: "http://acct-westus.documents.azure.com/" };

    it("never hedges an https request to an http endpoint", async () => {
      const pipeline = pipelineWith({
        regions: regionsWith({ readRegions: [eastUs, insecureWestUs, northEurope] }),
        threshold: 100,
        thresholdStep: 50,
      });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const response = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(harness.transport.receivedBy(insecureWestUs.endpoint).length, 0);
      assert.ok(harness.transport.received.every((record) => record.url.startsWith("https://")));
      assert.deepEqual(
        diagnosticsOf(response).arms.map((arm) => arm.region),
        ["East US", "North Europe"],
      );
    });

    it("with only an http secondary, an https request is not hedged: skipReason singleRegion", async () => {
      const pipeline = pipelineWith({ regions: regionsWith({ readRegions: [eastUs, insecureWestUs] }), threshold: 100 });
      const response = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(harness.transport.received.length, 1);
      assert.equal(diagnosticsOf(response).skipReason, "singleRegion");
    });

    it("hedges in the preferred-region order", async () => {
      const pipeline = pipelineWith({
        regions: regionsWith(threeRegions, ["East US", "North Europe", "West US"]),
        threshold: 100,
        thresholdStep: 50,
      });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const response = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.deepEqual(
        diagnosticsOf(response).arms.map((arm) => arm.region),
        ["East US", "North Europe", "West US"],
      );
    });
  });

  describe("the signer hook", () => {
    it("runs once per arm, on the arm's own request, before the arm is sent", async () => {
      const signed: PipelineRequest[] = [];
      const sentWhenSigned: number[] = [];
      const signer = async (request: PipelineRequest): Promise<void> => {
        sentWhenSigned.push(harness.transport.received.length);
        signed.push(request);
        request.headers.set("x-ms-date", `arm ${signed.length}`);
      };
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100, thresholdStep: 50, signer });
      const original = query(eastUs, signal());
      original.headers.set("authorization", "type%3Dmaster%26ver%3D1.0%26sig%3Doriginal");
      original.headers.set("x-ms-date", "original");
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      await armsSentFor(pipeline, original);

      // The primary keeps the signature the SDK gave it a moment ago; each hedge is signed afresh.
      assert.equal(signed.length, 2);
      assert.deepEqual(sentWhenSigned, [1, 2], "each hedge is signed before it is sent");
      harness.transport.received.slice(1).forEach((record, index) => {
        assert.equal(record.request, signed[index], "the harness.transport received exactly the requests the signer saw");
      });
      assert.deepEqual(
        harness.transport.received.map((record) => record.headers["x-ms-date"]),
        ["original", "arm 1", "arm 2"],
      );
      assert.equal(original.headers.get("x-ms-date"), "original", "signing an arm leaves the caller's request alone");
      // The primary is the caller's own request (issue 22: the request the SDK built goes out as it built it); each hedge is a copy.
      const arms = harness.transport.received.map((record) => record.request);
      assert.equal(arms[0], original);
      assert.ok(arms.slice(1).every((request) => request !== original));
      assert.equal(new Set([original.headers, ...arms.map((request) => request.headers)]).size, 3);
      assert.equal(new Set([original.requestId, ...arms.map((request) => request.requestId)]).size, 3);
      const originalUrl = new URL(original.url);
      assert.deepEqual(
        signed.map((request) => new URL(request.url).host),
        ["acct-westus.documents.azure.com", "acct-northeurope.documents.azure.com"],
      );
      for (const request of signed) {
        const url = new URL(request.url);
        assert.equal(url.pathname + url.search, originalUrl.pathname + originalUrl.search);
        assert.equal(request.body, original.body);
        assert.equal(request.method, "POST");
        assert.equal(request.headers.get("x-ms-documentdb-isquery"), "true");
        assert.notEqual(request.abortSignal, original.abortSignal, "each arm has its own signal");
      }
    });

    it("an arm still being signed when the race is decided is never sent", async () => {
      const signer = (request: PipelineRequest): Promise<void> =>
        new Promise((resolve) => setTimeout(resolve, request.url.includes("westus") ? 50 : 0));
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100, signer });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 120 });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(120);
      assert.equal(responseOf(pending).status, 200);
      await harness.clock.tickAsync(50);
      assert.equal(harness.transport.received.length, 1, "West US was still signing when East US answered");
      assert.deepEqual(
        diagnosticsOf(responseOf(pending)).arms.map((arm) => [arm.region, arm.outcome]),
        [
          ["East US", "returned"],
          ["West US", "aborted"],
        ],
      );
    });

    it("an arm still being signed when the caller aborts is never sent", async () => {
      const signer = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 30));
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100, signer });
      const controller = harness.leaks.controller();
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      const pending = send(pipeline, pointRead(eastUs, controller.signal));
      await harness.clock.tickAsync(110);
      controller.abort();
      await harness.clock.tickAsync(30);
      assert.equal((errorOf(pending) as Error).name, "AbortError");
      // The primary, the caller's request as it made it, went out at once; the hedge being signed never did.
      assert.deepEqual(
        harness.transport.received.map((record) => [record.origin, record.outcome]),
        [[new URL(eastUs.endpoint).origin, "aborted"]],
      );
    });

    it("a signer that throws fails that arm only, like a harness.transport error", async () => {
      const signer = sinon.spy((request: PipelineRequest) => {
        if (request.url.includes("westus")) throw new Error("harness.clock skew");
      });
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100, signer });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 10 });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(110);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.equal(diagnostics.terminalState, "hedgeWon");
      assert.equal(diagnostics.arms[1]?.error?.message, "harness.clock skew");
      assert.equal(diagnostics.arms[2]?.reason, "transientResult");
      assert.equal(signer.callCount, 2);
    });
  });

  describe("onDiagnostics", () => {
    it("receives the record attached to the response, once per request", async () => {
      const onDiagnostics = sinon.spy();
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100, onDiagnostics });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 150 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(150);
      const response = responseOf(pending);
      assert.equal(onDiagnostics.callCount, 1);
      assert.deepEqual(onDiagnostics.firstCall.args[0], getHedgeDiagnostics(response));
    });

    it("a callback that throws breaks neither a hedged nor a skipped request", async () => {
      const onDiagnostics = sinon.stub().throws(new Error("metrics backend down"));
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100, onDiagnostics });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const hedgedResponse = await armsSentFor(pipeline, pointRead(eastUs, signal()));
      assert.equal(hedgedResponse.status, 200);
      assert.equal(diagnosticsOf(hedgedResponse).terminalState, "hedgeWon");

      const skipped = requestTo(eastUs, "DELETE", "dbs/db/colls/c/docs/1", { abortSignal: signal() });
      const skippedResponse = await armsSentFor(pipeline, skipped, 204);
      assert.equal(skippedResponse.status, 204);
      assert.equal(diagnosticsOf(skippedResponse).skipReason, "notEligible");

      const failing = pointRead(eastUs, signal());
      setRequestControls(failing, { hedging: false });
      const failure = new Error("socket hang up");
      harness.transport.script(eastUs.endpoint, { error: failure, delayMs: 5 });
      const pending = send(pipeline, failing);
      await harness.clock.tickAsync(5);
      assert.equal(errorOf(pending), failure, "the request's own error, not the callback's");
      assert.equal(onDiagnostics.callCount, 3);
    });
  });

  describe("diagnostics", () => {
    it("answer with a response a policy of the caller's below the race froze, primary's or hedge's, for the request the caller sent", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      pipeline.addPolicy({ name: "freezer", sendRequest: async (request, next) => Object.freeze(await next(request)) });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 10, activityId: "from-east" });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10, activityId: "from-west" });
      for (const [winner, ms] of [["from-east", 10], ["from-west", 110]] as const) {
        const request = pointRead(eastUs, signal());
        const pending = send(pipeline, request);
        await harness.clock.tickAsync(ms);
        const response = responseOf(pending);
        assert.equal(response.headers.get("x-ms-activity-id"), winner);
        assert.equal(response.request, request);
        assert.equal(diagnosticsOf(response).winningActivityId, winner);
        assert.equal(getHedgeDiagnostics(response.headers)?.winningActivityId, winner);
      }
    });

    it("describe every arm, the winner and the total charge, on the response, its header and the callback", async () => {
      const onDiagnostics = sinon.spy();
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100, thresholdStep: 50, onDiagnostics });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 400, requestCharge: 1 });
      harness.transport.script(westUs.endpoint, { status: 429, subStatus: 3200, delayMs: 30, requestCharge: 1.5, activityId: "act-b" });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 40, requestCharge: 3, activityId: "act-c" });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(170);
      const response = responseOf(pending);
      const expected: HedgeDiagnostics = {
        policy: "crossRegion",
        operation: "pointRead",
        thresholdMs: 100,
        thresholdStepMs: 50,
        thresholdSource: "options",
        primaryRegion: "East US",
        arms: [
          { region: "East US", reason: "primary", startOffsetMs: 0, outcome: "aborted", durationMs: 170 },
          {
            region: "West US",
            reason: "threshold",
            startOffsetMs: 100,
            outcome: "lost",
            durationMs: 30,
            status: 429,
            subStatus: 3200,
            activityId: "act-b",
            requestCharge: 1.5,
          },
          {
            region: "North Europe",
            reason: "transientResult",
            startOffsetMs: 130,
            outcome: "returned",
            durationMs: 40,
            status: 200,
            activityId: "act-c",
            requestCharge: 3,
          },
        ],
        hedgeFired: true,
        hedgeWon: true,
        winningRegion: "North Europe",
        winningActivityId: "act-c",
        terminalState: "hedgeWon",
        totalRequestCharge: 4.5,
        final: true,
      };
      assert.deepEqual(getHedgeDiagnostics(response), expected);
      assert.deepEqual(JSON.parse(response.headers.get(hedgeDiagnosticsHeaderName) ?? "null"), expected);
      assert.deepEqual(getHedgeDiagnostics(response.headers.toJSON()), expected, "as @azure/cosmos copies the headers");
      assert.deepEqual(onDiagnostics.firstCall.args[0], expected);
    });

    it("sum the charge of every arm that answered when the primary's outcome is returned", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      // East answers after the threshold; West's 429 brings North Europe forward while East is still out.
      harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 150, requestCharge: 1 });
      harness.transport.script(westUs.endpoint, { status: 429, delayMs: 10, requestCharge: 2 });
      harness.transport.script(northEurope.endpoint, { status: 410, delayMs: 10, requestCharge: 0.5 });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(150);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.equal(diagnostics.totalRequestCharge, 3.5);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
    });

    it("of a skipped request carry the response's charge and the primary as the winning region", async () => {
      const pipeline = pipelineWith({ regions: regionsWith({ readRegions: [eastUs] }), threshold: 100 });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 10, requestCharge: 2.25 });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(10);
      assert.deepEqual(diagnosticsOf(responseOf(pending)), {
        policy: "crossRegion",
        operation: "pointRead",
        thresholdMs: 100,
        thresholdStepMs: crossRegionHedgingDefaults.thresholdStep,
        thresholdSource: "options",
        primaryRegion: "East US",
        arms: [],
        hedgeFired: false,
        hedgeWon: false,
        winningRegion: "East US",
        terminalState: "skipped",
        totalRequestCharge: 2.25,
        final: true,
        skipReason: "singleRegion",
      });
    });

    it("go on the error when the primary's error is rethrown", async () => {
      const onDiagnostics = sinon.spy();
      const pipeline = pipelineWith({ regions: regionsWith({ readRegions: [eastUs, westUs] }), threshold: 100, onDiagnostics });
      const failure = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      // The hedge goes at the threshold and answers 503 first; East's failure then ends the race.
      harness.transport.script(eastUs.endpoint, { error: failure, delayMs: 150 });
      harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10, requestCharge: 1 });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(150);
      const error = errorOf(pending);
      assert.equal(error, failure);
      const diagnostics = diagnosticsOf(error);
      assert.deepEqual(diagnostics.arms[0]?.error, { name: "Error", code: "ECONNRESET", message: "read ECONNRESET" });
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.equal(diagnostics.totalRequestCharge, 1);
      assert.deepEqual(onDiagnostics.firstCall.args[0], diagnostics);
    });

    it("never contain an authorization value, even when an arm's error echoes it", async () => {
      const secret = "c2VjcmV0U2lnbmF0dXJlVmFsdWU=";
      const encoded = encodeURIComponent(`type=master&ver=1.0&sig=${secret}`);
      const recorded: HedgeDiagnostics[] = [];
      const pipeline = pipelineWith({
        regions: regionsWith(),
        threshold: 100,
        onDiagnostics: (diagnostics) => recorded.push(diagnostics),
      });
      const request = pointRead(eastUs, signal());
      request.headers.set("authorization", encoded);
      // West, hedged at the threshold, fails and brings North Europe forward; North fails too, and East, slow, answers last.
      // (A failing primary would now end the race with its own error: the arms that echo the secret are the hedges.)
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 130, headers: { "x-ms-echo": "nothing secret" } });
      harness.transport.script(westUs.endpoint, {
        error: new Error(`401 from gateway; request headers: authorization: type=master&ver=1.0&sig=${secret}`),
        delayMs: 10,
      });
      harness.transport.script(northEurope.endpoint, { error: new Error(`rejected ${encoded}`), delayMs: 10 });
      const pending = send(pipeline, request);
      await harness.clock.tickAsync(130);
      const response = responseOf(pending);
      const attachedRecord = diagnosticsOf(response);
      assert.equal(attachedRecord.arms.length, 3, "both failing arms are described");
      const texts = [
        JSON.stringify(attachedRecord),
        response.headers.get(hedgeDiagnosticsHeaderName) ?? "",
        JSON.stringify(recorded),
      ];
      for (const text of texts) {
        assert.ok(!text.includes(secret.replace(/=+$/, "")), `a signature leaked: ${text}`);
        assert.ok(!text.includes(encoded), `the authorization header leaked: ${text}`);
        assert.ok(!/sig=|sig%3D/i.test(text), `a sig= fragment leaked: ${text}`);
      }
      assert.ok(attachedRecord.arms[1]?.error?.message.startsWith("401 from gateway"), "the rest of the message is kept");
    });

    it("never contain an authorization value that an arm's error carries in its name or code", async () => {
      const secret = "c2VjcmV0SW5Db2RlQW5kTmFtZQ==";
      const pipeline = pipelineWith({ regions: regionsWith({ readRegions: [eastUs, westUs] }), threshold: 100 });
      const failure = Object.assign(new Error("failed"), { code: `E_AUTH sig=${secret}` });
      failure.name = `AuthError authorization: type=master&ver=1.0&sig=${secret}`;
      harness.transport.script(eastUs.endpoint, { error: failure, delayMs: 10 });
      harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(20);
      const error = errorOf(pending);
      const text = JSON.stringify(diagnosticsOf(error));
      assert.ok(!text.includes(secret.replace(/=+$/, "")), `a signature leaked: ${text}`);
      assert.ok(!/sig=|sig%3D/i.test(text), `a sig= fragment leaked: ${text}`);
      assert.ok(diagnosticsOf(error).arms[0]?.error?.name.startsWith("AuthError"), "the rest of the name is kept");
    });
  });

  async function readAccount(pipeline: Pipeline, body: string): Promise<void> {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1, body });
    const pending = send(pipeline, requestTo(eastUs, "GET", "", { abortSignal: signal() }));
    await harness.clock.tickAsync(1);
    assert.equal(responseOf(pending).status, 200);
  }
});

function accountBody(init: { regions: readonly RegionEndpoint[]; ppaf?: boolean; hedgingDisabled?: boolean }): string {
  const locations = init.regions.map((region) => ({ name: region.name, databaseAccountEndpoint: region.endpoint }));
  return JSON.stringify({
    id: "acct",
    readableLocations: locations,
    writableLocations: locations.slice(0, 1),
    enableMultipleWriteLocations: false,
    enablePerPartitionFailoverBehavior: init.ppaf ?? false,
    ...(init.hedgingDisabled !== undefined ? { disableCrossRegionalHedging: init.hedgingDisabled } : {}),
  });
}

describe("trustworthiness: what users hit", function () {
  describe("timer values Node.js would fire after 1 ms", function () {
    for (const [option, options] of [
      ["threshold", { threshold: 2 ** 31 - 1 }],
      ["thresholdStep", { thresholdStep: 2 ** 31 }],
      ["threshold.ceiling", { threshold: { mode: "adaptive", ceiling: 1e12 } }],
      ["requestTimeout", { requestTimeout: 2 ** 32 }],
    ] as const) {
      it(`crossRegionHedgingPolicy rejects ${option} at or above 2^31 - 1 ms with a RangeError naming it`, function () {
        assert.throws(() => crossRegionHedgingPolicy(options), (error: unknown) => {
          assert.ok(error instanceof RangeError);
          assert.match(error.message, new RegExp(`^${option.replace(".", "\\.")} must be a finite number of milliseconds above 0 and below 2147483647; got`));
          return true;
        });
      });
    }
  });

  describe("a threshold the SDK's request timeout would cut short", function () {
    it("is rejected with a RangeError naming both", function () {
      assert.throws(() => crossRegionHedgingPolicy({ threshold: 500, requestTimeout: 500 }), /^RangeError: threshold must be below requestTimeout \(500 ms\); got 500\.$/);
    });

    it("is never the default: the explicit default drops to half of a short requestTimeout", async function () {
      const harness = { records: [] as HedgeDiagnostics[] };
      const policy = crossRegionHedgingPolicy({
        regions: new RegionCache({ topology: threeRegions }),
        requestTimeout: 200,
        onDiagnostics: (record) => harness.records.push(record),
      });
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy(policy);
      const transport = { sendRequest: async (request: PipelineRequest): Promise<PipelineResponse> => ({ request, status: 200, headers: createHttpHeaders() }) };
      await pipeline.sendRequest(transport, pointRead(eastUs));
      assert.equal(harness.records[0]?.thresholdMs, 100);
    });
  });

  describe("budget: null", function () {
    it("is refused with a TypeError naming budget, not taken for the default budget", function () {
      assert.throws(() => crossRegionHedgingPolicy({ budget: null as never }), /^TypeError: budget must be false or an options object; got null\.$/);
    });
  });

  describe("onDiagnostics that returns a rejected promise", function () {
    const harness = useRaceHarness();

    it("is logged and ignored: no unhandled rejection, the request succeeds", async function () {
      const logs = captureAzureLogs("warning");
      try {
        const pipeline = createEmptyPipeline();
        pipeline.addPolicy(
          crossRegionHedgingPolicy({ regions: new RegionCache({ topology: threeRegions }), onDiagnostics: async () => Promise.reject(new Error("sink down")) }),
        );
        harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 5 });
        const pending = observe(pipeline.sendRequest(harness.transport, pointRead(eastUs, harness.leaks.controller().signal)));
        await harness.clock.tickAsync(5);
        assert.equal((await pending.result()).status, 200);
        await harness.clock.tickAsync(0);
        assert.ok(logs.packageLines().some((line) => line.includes("onDiagnostics failed and was ignored: Error")));
      } finally {
        logs.restore();
      }
    });
  });

  describe("only successful answers teach the ranking", function () {
    const harness = useRaceHarness();

    it("a region answering 404/0 fast never demotes the primary, never feeds its latency window, and never beats a primary in flight", async function () {
      const records: HedgeDiagnostics[] = [];
      const policy = crossRegionHedgingPolicy({
        regions: new RegionCache({ topology: { readRegions: [eastUs, westUs] } }),
        threshold: 50,
        routing: "demotion",
        budget: false,
        onDiagnostics: (record) => records.push(record),
      });
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy(policy);
      for (let i = 0; i < 12; i++) {
        harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 300 });
        harness.transport.script(westUs.endpoint, { status: 404, delayMs: 2 });
        const pending = observe(pipeline.sendRequest(harness.transport, pointRead(eastUs, harness.leaks.controller().signal)));
        await harness.clock.tickAsync(300);
        assert.equal((await pending.result()).status, 200, `read ${i} returns the primary's document`);
      }
      assert.ok(records.every((record) => record.terminalState === "primaryWon"));
      const metrics = policy.metrics();
      const west = metrics.regions.find((region) => region.region === "West US");
      assert.equal(west?.latency, undefined, "no 404 in West US's window");
      assert.equal(metrics.regions.find((region) => region.region === "East US")?.demotedInFavourOf, undefined);
      assert.equal(metrics.hedgesWon, 0);
    });

    it("a hedge's fast error never wins, even when the primary then fails, and does not count toward demotion either", async function () {
      const policy = crossRegionHedgingPolicy({
        regions: new RegionCache({ topology: { readRegions: [eastUs, westUs] } }),
        threshold: 50,
        routing: "demotion",
        budget: false,
      });
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy(policy);
      for (let i = 0; i < 8; i++) {
        harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 100 });
        harness.transport.script(westUs.endpoint, { status: 401, delayMs: 2 });
        const pending = observe(pipeline.sendRequest(harness.transport, pointRead(eastUs, harness.leaks.controller().signal)));
        await harness.clock.tickAsync(100);
        const response = await pending.result();
        assert.equal(response.status, 503, `read ${i} returns the primary's 503, for the SDK's retry`);
        const diagnostics = getHedgeDiagnostics(response);
        assert.equal(diagnostics?.terminalState, "primaryOutcome");
        assert.deepEqual(diagnostics?.arms.map((arm) => [arm.region, arm.status, arm.outcome]), [
          ["East US", 503, "returned"],
          ["West US", 401, "lost"],
        ]);
      }
      assert.equal(policy.metrics().regions.find((region) => region.region === "East US")?.demotedInFavourOf, undefined);
      assert.equal(policy.metrics().hedgesWon, 0);
    });
  });
});

/**
 * What a hedging policy must not learn from, or honour: behaviour seen only
 * through the public factories, the responses' diagnostics, `metrics()` and
 * the shared `RegionCache`, so that the checks outlive a rearrangement of the
 * policies' insides.
 */
describe("what the hedging policies refuse to learn or honour", () => {
  const harness = useRaceHarness();
  const send = scriptedSender(harness);

  function crossRegion(options: CrossRegionHedgingPolicyOptions) {
    const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
    // Losers aborted, as these tests are about what is learned, not about draining.
    const policy = crossRegionHedgingPolicy({ regions, drainLosers: false, ...options });
    return { regions, policy, pipeline: pipelineOf(policy) };
  }

  describe("crossRegionHedgingPolicy", () => {
    it("a primary win the budget kept unhedged does not break a demotion streak", async () => {
      // A budget of half a hedge per request: East, slow, is hedged every other request and wins the ones in between unhedged.
      const { pipeline, regions, policy } = crossRegion({ threshold: 10, routing: "demotion", budget: { maxExtraLoad: 0.5, minHedgesPerSecond: 0 } });
      const outcomes: string[] = [];
      for (let i = 0; i < 10 && regions.demotedRegions.length === 0; i++) {
        const refused = i % 2 === 0;
        const diagnostics = await send(pipeline, refused ? { east: ok(300) } : { east: ok(300), west: ok(20) });
        outcomes.push(`${diagnostics.terminalState}${diagnostics.skipReason !== undefined ? `/${diagnostics.skipReason}` : ""}`);
      }
      assert.deepEqual(outcomes, [
        ...Array.from({ length: 4 }, () => ["primaryWon/budgetExhausted", "hedgeWon"]).flat(),
        "primaryWon/budgetExhausted",
        "hedgeWon",
      ]);
      assert.deepEqual(regions.demotedRegions, [{ region: "East US", inFavourOf: "West US" }], "five hedge wins in a row, the refused requests between them not counting");
      assert.equal(policy.metrics().regions.find((region) => region.region === "East US")?.demotedInFavourOf, "West US");
    });

    it("(the control: a primary win that was free to hedge does break the streak)", async () => {
      const { pipeline, regions } = crossRegion({ threshold: 10, routing: "demotion", budget: false });
      for (let i = 0; i < 5; i++) {
        await send(pipeline, { east: ok(300), west: ok(20) });
        await send(pipeline, { east: ok(2) });
      }
      assert.deepEqual(regions.demotedRegions, []);
    });

    it("answers of requests the budget kept unhedged do not raise the adaptive threshold", async () => {
      const { pipeline } = crossRegion({ threshold: "adaptive", budget: { maxExtraLoad: 0.01, minHedgesPerSecond: 0 } });
      for (let i = 0; i < 20; i++) await send(pipeline, { east: ok(2) });
      const warmed = await send(pipeline, { east: ok(2) });
      assert.equal(warmed.thresholdSource, "adaptive");
      const learned = warmed.thresholdMs ?? Number.NaN;
      assert.ok(learned < 20, `learned ${learned} ms from 2 ms answers`);
      // East browns out; every hedge is refused, so each slow answer comes from a primary left alone.
      for (let i = 0; i < 40; i++) {
        const refused = await send(pipeline, { east: ok(400) });
        assert.equal(refused.skipReason, "budgetExhausted");
      }
      const after = await send(pipeline, { east: ok(2) });
      assert.equal(after.thresholdMs, learned, "the threshold still comes from East's healthy answers");
    });

    it("(the control: slower answers that won their race do raise it)", async () => {
      const { pipeline } = crossRegion({ threshold: "adaptive", budget: false });
      for (let i = 0; i < 20; i++) await send(pipeline, { east: ok(2) });
      const learned = (await send(pipeline, { east: ok(2) })).thresholdMs ?? Number.NaN;
      // East slows to 60 ms, still ahead of West's 200: each read is hedged, and East's answer wins.
      for (let i = 0; i < 40; i++) await send(pipeline, { east: ok(60), west: ok(200) });
      const after = (await send(pipeline, { east: ok(2) })).thresholdMs ?? Number.NaN;
      assert.ok(after > learned * 2, `the threshold followed East from ${learned} to ${after} ms`);
    });
  });
});

const twoRegions: AccountTopologyInit = { readRegions: [eastUs, westUs] };

describe("adaptive hedging through crossRegionHedgingPolicy", () => {
  const harness = useRaceHarness();

  interface Setup {
    readonly pipeline: Pipeline;
    readonly policy: CrossRegionHedgingPolicy;
    readonly regions: RegionCache;
  }

  function setup(options: CrossRegionHedgingPolicyOptions, topology: AccountTopologyInit = twoRegions): Setup {
    const regions = new RegionCache({ topology });
    // Losers are aborted at once here, so each test ends with its race; draining has its own tests (loserDrain.test.ts).
    const policy = crossRegionHedgingPolicy({ regions, drainLosers: false, ...options });
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(policy);
    return { pipeline, policy, regions };
  }

  /** Sends a request with each region's next step scripted, and drives the harness.clock until it settles. */
  async function send(
    { pipeline }: Setup,
    steps: Partial<Record<"east" | "west" | "north", ScriptStep>>,
    request: PipelineRequest = pointRead(eastUs, harness.leaks.controller().signal),
  ): Promise<{ response: PipelineResponse; diagnostics: HedgeDiagnostics; request: PipelineRequest }> {
    if (steps.east !== undefined) harness.transport.script(eastUs.endpoint, steps.east);
    if (steps.west !== undefined) harness.transport.script(westUs.endpoint, steps.west);
    if (steps.north !== undefined) harness.transport.script(northEurope.endpoint, steps.north);
    const pending = observe(pipeline.sendRequest(harness.transport, request));
    for (let waited = 0; !pending.state().done && waited < 20_000; waited++) await harness.clock.tickAsync(1);
    const response = await pending.result();
    const diagnostics = getHedgeDiagnostics(response);
    assert.ok(diagnostics !== undefined, "diagnostics are attached");
    return { response, diagnostics, request };
  }

  /** Fills East's window with fast answers, enough for the adaptive threshold to trust it. */
  async function warmUp(target: Setup, count = 20, latencyMs = 2): Promise<void> {
    for (let i = 0; i < count; i++) await send(target, { east: ok(latencyMs) });
  }

  /** The delay between the primary's arrival and the first hedge's, on the fake harness.clock. */
  function hedgeDelayOf(fromIndex: number): number {
    const [primary, hedge] = harness.transport.received.slice(fromIndex);
    assert.ok(primary !== undefined && hedge !== undefined, "a hedge went out");
    return hedge.receivedAt - primary.receivedAt;
  }

  describe("the adaptive threshold", () => {
    it("uses the ceiling until East's window holds 20 answers, then the floor", async () => {
      const target = setup({ threshold: "adaptive" });
      const first = await send(target, { east: ok(2) });
      assert.equal(first.diagnostics.thresholdMs, 500);
      assert.equal(first.diagnostics.thresholdSource, "adaptiveWarmup");
      await warmUp(target, 19);
      const from = harness.transport.received.length;
      const { diagnostics } = await send(target, { east: ok(1000), west: ok(30) });
      assert.equal(hedgeDelayOf(from), 5, "hedged after the 5 ms floor");
      assert.equal(diagnostics.thresholdMs, 5);
      assert.equal(diagnostics.thresholdSource, "adaptive");
      assert.equal(diagnostics.thresholdRegion, "East US");
      assert.equal(diagnostics.terminalState, "hedgeWon");
    });

    it("follows the healthy baseline above the floor, per latency class", async () => {
      const target = setup({ threshold: "adaptive" });
      for (let i = 0; i < 20; i++) await send(target, { east: ok(40 + i) });
      const point = await send(target, { east: ok(2) });
      assert.ok(point.diagnostics.thresholdMs !== undefined && Math.abs(point.diagnostics.thresholdMs - 58) <= 2, `${point.diagnostics.thresholdMs}`);
      const queried = await send(target, { east: ok(2) }, query(eastUs, harness.leaks.controller().signal));
      assert.equal(queried.diagnostics.thresholdSource, "adaptiveWarmup", "queries have their own window");
    });

    it("is not dragged up by stragglers: 10 % of East reads take 1 s, each is hedged at the floor", async () => {
      const target = setup({ threshold: "adaptive", routing: "preferred" });
      await warmUp(target);
      for (let i = 0; i < 100; i++) {
        const straggler = i % 10 === 5;
        const started = Date.now();
        const { diagnostics } = await send(target, straggler ? { east: ok(1000), west: ok(30) } : { east: ok(2) });
        assert.equal(diagnostics.thresholdMs, 5, `request ${i}`);
        assert.ok(Date.now() - started <= 36, `request ${i} took ${Date.now() - started} ms`);
      }
      const metrics = target.policy.metrics();
      assert.equal(metrics.hedgesFired, 10);
      assert.equal(metrics.hedgesWon, 10);
      assert.equal(metrics.budgetExhausted, 0);
    });

    it("a per-request threshold still wins, and a per-request step keeps the adaptive threshold", async () => {
      const target = setup({ threshold: "adaptive" });
      await warmUp(target);
      const fixed = pointRead(eastUs, harness.leaks.controller().signal);
      setRequestControls(fixed, { hedging: { threshold: 50 } });
      const overridden = await send(target, { east: ok(2) }, fixed);
      assert.equal(overridden.diagnostics.thresholdMs, 50);
      assert.equal(overridden.diagnostics.thresholdSource, "request");
      const stepOnly = pointRead(eastUs, harness.leaks.controller().signal);
      setRequestControls(stepOnly, { hedging: { thresholdStep: 7 } });
      const stepped = await send(target, { east: ok(2) }, stepOnly);
      assert.equal(stepped.diagnostics.thresholdMs, 5);
      assert.equal(stepped.diagnostics.thresholdStepMs, 7);
      assert.equal(stepped.diagnostics.thresholdSource, "adaptive");
    });

    it('"followAccount" takes the PPAF default as the ceiling', async () => {
      const target = setup({ threshold: "adaptive", enabled: "followAccount", requestTimeout: 1200 }, { ...twoRegions, perPartitionFailover: true });
      const { diagnostics } = await send(target, { east: ok(2) });
      assert.equal(diagnostics.thresholdMs, 600);
      assert.equal(diagnostics.thresholdStepMs, 500);
    });

    it("hedged writes use the ceiling: writes are not learned from", async () => {
      const target = setup(
        { threshold: { mode: "adaptive", ceiling: 40 }, enableMultiWriteRegionHedge: true },
        { readRegions: [eastUs, westUs], writeRegions: [eastUs, westUs], multipleWriteLocations: true },
      );
      await warmUp(target);
      const write = requestTo(eastUs, "PUT", "dbs/db/colls/c/docs/1", { body: '{"id":"1"}', abortSignal: harness.leaks.controller().signal });
      const from = harness.transport.received.length;
      const { diagnostics } = await send(target, { east: { status: 200, delayMs: 1000 }, west: { status: 200, delayMs: 30 } }, write);
      assert.equal(hedgeDelayOf(from), 40);
      assert.equal(diagnostics.thresholdSource, "adaptiveWarmup");
      assert.equal(diagnostics.ranking, undefined);
    });
  });

  // The budget tests send East's reads to lose to West every time; routing: "preferred" keeps demotion from moving them to West.
  describe("the hedge budget", () => {
    it("bounds hedges in fixed mode too: a request whose hedge it refuses runs unhedged, budgetExhausted", async () => {
      const target = setup({ threshold: 10, budget: { maxExtraLoad: 0.25, minHedgesPerSecond: 0 } });
      const outcomes: string[] = [];
      for (let i = 0; i < 8; i++) {
        const { diagnostics } = await send(target, i % 4 === 3 ? { east: ok(50), west: ok(5) } : { east: ok(50) });
        outcomes.push(diagnostics.hedgeFired ? "hedged" : (diagnostics.skipReason ?? "none"));
      }
      // Four requests deposit 1: only every fourth can hedge.
      assert.deepEqual(outcomes, ["budgetExhausted", "budgetExhausted", "budgetExhausted", "hedged", "budgetExhausted", "budgetExhausted", "budgetExhausted", "hedged"]);
      const metrics = target.policy.metrics();
      assert.equal(metrics.budgetExhausted, 6);
      assert.equal(metrics.hedgesFired, 2);
      assert.ok(metrics.budget !== undefined && Math.abs(metrics.budget.balance) < 1e-9, JSON.stringify(metrics.budget));
    });

    it("by default lets a quiet client hedge ten times in ten seconds, plus 15 % of its requests", async () => {
      const target = setup({ threshold: 10, routing: "preferred" });
      const hedged: boolean[] = [];
      // The reserve covers ten hedges; by the 11th request, the deposits (11 x 0.15) cover one more; the 12th finds 0.8.
      for (let i = 1; i <= 12; i++) {
        const { diagnostics } = await send(target, i <= 11 ? { east: ok(50), west: ok(5) } : { east: ok(50) });
        hedged.push(diagnostics.hedgeFired);
      }
      assert.deepEqual(hedged, [...Array.from({ length: 11 }, () => true), false]);
      assert.equal(target.policy.metrics().budgetExhausted, 1);
      await harness.clock.tickAsync(10_000);
      const { diagnostics } = await send(target, { east: ok(50), west: ok(5) });
      assert.equal(diagnostics.hedgeFired, true, "ten seconds later the window has moved on");
    });

    it("a straggler refused because others spent the balance while it waited is hedged at its region's healthy tail, not left for its whole delay", async () => {
      const target = setup({ threshold: 500, routing: "preferred", budget: { maxExtraLoad: 0.15, minHedgesPerSecond: 1 } });
      // East's healthy tail: 40 reads answered at 10 ms, none hedged.
      for (let i = 0; i < 40; i++) await send(target, { east: ok(10) });
      const withThreshold = (threshold: number): PipelineRequest => {
        const request = pointRead(eastUs, harness.leaks.controller().signal);
        setRequestControls(request, { hedging: { threshold } });
        return request;
      };
      // 14 reads hedged past the tail spend the balance into its reserve: 10 + 0.15 x 54 - 14 = 4.1 hedges left.
      for (let i = 0; i < 14; i++) {
        const { diagnostics } = await send(target, { east: ok(100), west: ok(1) }, withThreshold(11));
        assert.equal(diagnostics.hedgeWon, true, `spending read ${i}`);
      }
      // Three reads that will spend three more, at their 11 ms threshold, start 10 ms before the straggler.
      const spenders = [0, 1, 2].map(() => {
        harness.transport.script(eastUs.endpoint, ok(100));
        harness.transport.script(westUs.endpoint, ok(1));
        return observe(target.pipeline.sendRequest(harness.transport, withThreshold(11)));
      });
      await harness.clock.tickAsync(10);
      // The straggler's own threshold, 5 ms, is half East's tail: the short budget holds its hedge to 6 ms, where the
      // evidence it waited for is no longer enough once the three have spent.
      harness.transport.script(eastUs.endpoint, ok(1000));
      harness.transport.script(westUs.endpoint, ok(1));
      const started = performance.now();
      const straggler = observe(target.pipeline.sendRequest(harness.transport, withThreshold(5)));
      for (let waited = 0; !straggler.state().done && waited < 2000; waited++) await harness.clock.tickAsync(1);
      const response = await straggler.result();
      const diagnostics = getHedgeDiagnostics(response);
      assert.equal(diagnostics?.terminalState, "hedgeWon", JSON.stringify(diagnostics));
      const hedgeAt = diagnostics?.arms[1]?.startOffsetMs ?? Number.NaN;
      assert.ok(hedgeAt > 6 && hedgeAt <= 11, `the hedge went at the tail, asked once more: ${hedgeAt} ms`);
      assert.ok(performance.now() - started < 20, `answered by West, not after East's second: ${performance.now() - started} ms`);
      assert.equal(diagnostics?.skipReason, undefined);
      for (const spender of spenders) assert.equal(getHedgeDiagnostics(await spender.result())?.hedgeWon, true);
      const metrics = target.policy.metrics();
      assert.equal(metrics.budgetExhausted, 0, "every read launched the hedges it asked for");
      assert.equal(metrics.budget?.hedgesInFlight, 0);
    });

    it("caps the hedges in flight", async () => {
      const target = setup({ threshold: 10, budget: { maxHedgesInFlight: 1 } });
      harness.transport.script(eastUs.endpoint, ok(100), ok(100));
      harness.transport.script(westUs.endpoint, ok(50));
      const first = observe(target.pipeline.sendRequest(harness.transport, pointRead(eastUs, harness.leaks.controller().signal)));
      const second = observe(target.pipeline.sendRequest(harness.transport, pointRead(eastUs, harness.leaks.controller().signal)));
      await harness.clock.tickAsync(100);
      const a = getHedgeDiagnostics(await first.result());
      const b = getHedgeDiagnostics(await second.result());
      assert.equal(a?.hedgeFired, true);
      assert.equal(b?.hedgeFired, false);
      assert.equal(b?.skipReason, "budgetExhausted");
      assert.equal(target.policy.metrics().budget?.hedgesInFlight, 0, "every slot came back");
    });

    it("budget: false turns it off", async () => {
      const target = setup({ threshold: 10, budget: false, routing: "preferred" });
      for (let i = 0; i < 15; i++) {
        const { diagnostics } = await send(target, { east: ok(50), west: ok(5) });
        assert.equal(diagnostics.hedgeFired, true, `request ${i}`);
      }
      assert.equal(target.policy.metrics().budget, undefined);
    });
  });

  describe("throttled regions", () => {
    it("are not hedged into until their x-ms-retry-after-ms has passed", async () => {
      const target = setup({ threshold: 10 }, threeRegions);
      const throttled = await send(target, {
        east: ok(100),
        west: { status: 429, subStatus: 3200, delayMs: 1, headers: { "x-ms-retry-after-ms": "300" } },
        north: ok(20),
      });
      assert.deepEqual(throttled.diagnostics.arms.map((arm) => arm.region), ["East US", "West US", "North Europe"]);
      assert.ok((target.policy.metrics().regions.find((region) => region.region === "West US")?.throttledForMs ?? 0) > 250);
      const avoided = await send(target, { east: ok(100), north: ok(20) });
      assert.deepEqual(avoided.diagnostics.arms.map((arm) => arm.region), ["East US", "North Europe"], "West is skipped");
      await harness.clock.tickAsync(300);
      const again = await send(target, { east: ok(100), west: ok(20) });
      assert.deepEqual(again.diagnostics.arms.map((arm) => arm.region), ["East US", "West US"], "after the retry-after, West is hedged into again");
    });

    it("a throttled primary is still sent; with no other region left the request is not hedged: regionThrottled", async () => {
      const target = setup({ threshold: 10 });
      // East's 429 comes past the threshold, after the hedge's, so that both regions answer 429.
      await send(target, { east: { status: 429, delayMs: 15, headers: { "x-ms-retry-after-ms": "abc" } }, west: { status: 429, delayMs: 1 } });
      const { diagnostics } = await send(target, { east: ok(30) });
      assert.equal(diagnostics.skipReason, "regionThrottled");
      assert.equal(diagnostics.terminalState, "skipped");
      await harness.clock.tickAsync(1000);
      const later = await send(target, { east: ok(30), west: ok(5) });
      assert.equal(later.diagnostics.hedgeFired, true, "a 429 without a usable retry-after keeps the region out for a second");
    });
  });

  describe("hedges planned up front, as each is due", () => {
    /** A read whose primary East answers after a second, with `excludedLocations` of its own (which plans its hedges at its start). */
    function readExcluding(excluded: string[]): { pending: Pending; from: number } {
      const from = harness.transport.received.length;
      harness.transport.script(eastUs.endpoint, ok(1000));
      const request = pointRead(eastUs, harness.leaks.controller().signal);
      setRequestControls(request, { excludedRegions: excluded });
      return { pending: observe(target().pipeline.sendRequest(harness.transport, request)), from };
    }
    let current: Setup | undefined;
    const target = (): Setup => (current ??= setup({ threshold: 50, thresholdStep: 50 }, threeRegions));
    afterEach(() => {
      current = undefined;
    });

    it("leave out a region the client's exclusions take in after the read started", async () => {
      harness.transport.script(westUs.endpoint, ok(10));
      const { pending, from } = readExcluding(["North Europe"]);
      await harness.clock.tickAsync(20);
      target().regions.setExcludedRegions(["West US"]);
      await harness.clock.tickAsync(1000);
      const diagnostics = getHedgeDiagnostics(await pending.result());
      assert.deepEqual(harness.transport.received.slice(from).map((received) => received.url.includes("westus")), [false]);
      assert.deepEqual([diagnostics?.skipReason, diagnostics?.terminalState], ["singleRegion", "skipped"], JSON.stringify(diagnostics));
    });

    it("a later hedge passes over a region excluded after the first went out, planned up front or not", async () => {
      // Scripted once: were North Europe contacted in either round, the assertions below would see it.
      harness.transport.script(northEurope.endpoint, ok(10));
      for (const excluded of [[], ["UK South"]]) {
        current = undefined;
        harness.transport.script(westUs.endpoint, ok(1000));
        const { pending, from } = readExcluding(excluded);
        // The first hedge (West) goes at 50 ms; North Europe is excluded before the second is due at 100 ms.
        await harness.clock.tickAsync(60);
        target().regions.setExcludedRegions(["North Europe"]);
        await harness.clock.tickAsync(1000);
        const diagnostics = getHedgeDiagnostics(await pending.result());
        assert.deepEqual(diagnostics?.arms.map((arm) => arm.region), ["East US", "West US"], `${JSON.stringify(excluded)}: ${JSON.stringify(diagnostics)}`);
        assert.equal(harness.transport.received.slice(from).filter((received) => received.url.includes("northeurope")).length, 0);
      }
    });

    it("an aborted read whose hedges were all excluded by the time one was due still says why it had none", async () => {
      const controller = harness.leaks.controller();
      harness.transport.script(eastUs.endpoint, ok(1000));
      const request = pointRead(eastUs, controller.signal);
      setRequestControls(request, { excludedRegions: ["UK South"] });
      const pending = observe(target().pipeline.sendRequest(harness.transport, request));
      await harness.clock.tickAsync(20);
      target().regions.setExcludedRegions(["West US", "North Europe"]);
      await harness.clock.tickAsync(100);
      controller.abort();
      await harness.clock.tickAsync(1);
      const state = pending.state();
      assert.ok(state.done && "error" in state);
      const diagnostics = getHedgeDiagnostics(state.error);
      assert.deepEqual([diagnostics?.terminalState, diagnostics?.skipReason], ["aborted", "singleRegion"], JSON.stringify(diagnostics));
    });

    it("leave out a region that answered 429 after the read started, and keep the rest in their order", async () => {
      // An exclusion of a region the account does not have still plans the hedges at the start: West, then North Europe.
      const { pending, from } = readExcluding(["UK South"]);
      // Another read meets West's 429 before the first read's threshold.
      await harness.clock.tickAsync(10);
      harness.transport.script(westUs.endpoint, { status: 429, delayMs: 1, headers: { "x-ms-retry-after-ms": "5000" } });
      const throttling = requestTo(westUs, "GET", "dbs/db/colls/c/docs/1", { abortSignal: harness.leaks.controller().signal });
      setRequestControls(throttling, { hedging: false });
      const throttled = observe(target().pipeline.sendRequest(harness.transport, throttling));
      await harness.clock.tickAsync(5);
      assert.equal((await throttled.result()).status, 429);
      harness.transport.script(northEurope.endpoint, ok(10));
      await harness.clock.tickAsync(1000);
      const diagnostics = getHedgeDiagnostics(await pending.result());
      assert.deepEqual(diagnostics?.arms.map((arm) => arm.region), ["East US", "North Europe"], JSON.stringify(diagnostics));
      assert.equal(diagnostics?.terminalState, "hedgeWon");
      assert.equal(harness.transport.received.slice(from).filter((received) => received.url.includes("westus")).length, 1, "West got only the other read");
    });
  });

  describe("consecutive-win demotion", () => {
    async function demoteEast(target: Setup): Promise<void> {
      for (let i = 0; i < demotionDefaults.consecutiveWins; i++) {
        const { diagnostics } = await send(target, { east: ok(300), west: ok(30) });
        assert.equal(diagnostics.terminalState, "hedgeWon");
      }
    }

    // Issue 22: ranking orders the hedges only; the primary goes where the SDK sent it, demoted or not.
    it("after five straight hedge wins, East is demoted: its reads still go to East, where the SDK sent them, and diagnostics say the ranking ordered the hedges", async () => {
      const target = setup({ threshold: "adaptive" });
      await warmUp(target);
      await demoteEast(target);
      assert.deepEqual(target.regions.demotedRegions, [{ region: "East US", inFavourOf: "West US" }]);
      assert.equal(target.policy.metrics().regions.find((region) => region.region === "East US")?.demotedInFavourOf, "West US");
      const from = harness.transport.received.length;
      const { diagnostics, request, response } = await send(target, { east: ok(3) });
      assert.equal(harness.transport.received[from]?.origin, new URL(eastUs.endpoint).origin, "the primary arm went where the SDK sent it");
      assert.equal(diagnostics.primaryRegion, "East US");
      assert.deepEqual(diagnostics.ranking, { reason: "demoted", addressedRegion: "East US" });
      assert.equal(diagnostics.terminalState, "primaryWon");
      assert.equal(new URL(request.url).origin, new URL(eastUs.endpoint).origin, "the request itself was not re-pointed");
      assert.equal(response.request, request);
    });

    it("never hedges into a demoted region that answers 429, even though ranking moved it among the hedges", async () => {
      const target = setup({ threshold: 10, routing: "demotion" }, threeRegions);
      await demoteEast(target);
      await harness.clock.tickAsync(1000);
      // A probe read goes to East and is throttled, with a long retry-after; the 429 comes past the threshold, with
      // West's hedge in flight, so that the race plans its hedges (and records the ranking) before the 429 ends it.
      const probe = await send(target, {
        east: { status: 429, delayMs: 15, headers: { "x-ms-retry-after-ms": "30000" } },
        west: ok(20),
      });
      assert.equal(probe.diagnostics.ranking?.reason, "probe");
      // A read the SDK sent to West (its failover): East, demoted, ranks last among its hedges, and is throttled.
      const { diagnostics } = await send(target, { west: ok(500), north: ok(500) }, pointRead(westUs, harness.leaks.controller().signal));
      assert.deepEqual(
        diagnostics.arms.map((arm) => arm.region),
        ["West US", "North Europe"],
        "East, throttled, is no hedge target although the demotion put it last among them",
      );
    });

    it("a primary win resets the streak", async () => {
      const target = setup({ threshold: 10, routing: "demotion" });
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < demotionDefaults.consecutiveWins - 1; i++) await send(target, { east: ok(300), west: ok(30) });
        await send(target, { east: ok(2) });
      }
      assert.deepEqual(target.regions.demotedRegions, []);
    });

    it("probes the demoted region at least once a second and restores it when it answers within the healthy baseline", async () => {
      const target = setup({ threshold: "adaptive" });
      await warmUp(target);
      await demoteEast(target);
      await harness.clock.tickAsync(demotionDefaults.probeIntervalMs);
      // Still browned out: the probe is hedged at the floor, and West answers it.
      const failed = await send(target, { east: ok(300), west: ok(30) });
      assert.deepEqual(failed.diagnostics.ranking, { reason: "probe", addressedRegion: "East US" });
      assert.equal(failed.diagnostics.primaryRegion, "East US");
      assert.equal(failed.diagnostics.thresholdMs, 5, "a probe is hedged early, so it costs little");
      assert.equal(target.regions.isDemoted("East US"), true);
      const demoted = await send(target, { east: ok(300), west: ok(30) });
      assert.equal(demoted.diagnostics.ranking?.reason, "demoted");
      assert.equal(demoted.diagnostics.primaryRegion, "East US", "a demoted region's reads still go there first");
      await harness.clock.tickAsync(demotionDefaults.probeIntervalMs);
      // The brown-out is over: the probe answers in 2 ms.
      const probe = await send(target, { east: ok(2) });
      assert.equal(probe.diagnostics.ranking?.reason, "probe");
      assert.equal(target.regions.isDemoted("East US"), false);
      const restored = await send(target, { east: ok(2) });
      assert.equal(restored.diagnostics.primaryRegion, "East US");
      assert.equal(restored.diagnostics.ranking, undefined);
    });

    it("a demoted-away primary is not hedged into the region just found slow", async () => {
      const target = setup({ threshold: "adaptive" });
      await warmUp(target);
      await demoteEast(target);
      // West has five answers from its hedge wins; until it has twenty, its reads get the ceiling, not East's 5 ms.
      // Reads the SDK sends to West (its failover from East, say) are planned from West's own latencies.
      const toWest = () => pointRead(westUs, harness.leaks.controller().signal);
      for (let i = 0; i < 15; i++) {
        const { diagnostics } = await send(target, { west: ok(20) }, toWest());
        assert.equal(diagnostics.thresholdSource, "adaptiveWarmup");
      }
      // East's five losses, at 35 ms each, outweigh its old 2 ms answers: a hedge into it could not beat West's 20 to 30 ms,
      // so only a read that outlasts all of West's by that much is hedged, not one past East's old floor.
      const from = harness.transport.received.length;
      const { diagnostics } = await send(target, { west: ok(200), east: ok(300) }, toWest());
      assert.equal(diagnostics.thresholdSource, "noBenefit");
      assert.equal(diagnostics.thresholdRegion, "West US");
      assert.equal(diagnostics.thresholdMs, 65, "West's largest answer, 30 ms, and East's latency, 35 ms");
      assert.equal(hedgeDelayOf(from), 65);
    });

    it("keeps the routing policy's record next to its own", async () => {
      const target = setup({ threshold: "adaptive" });
      await warmUp(target);
      await demoteEast(target);
      const rerouted = pointRead(eastUs, harness.leaks.controller().signal);
      setRequestControls(rerouted, { routing: { sdkRegion: "North Europe", rerouteReason: "excludedRegion" } });
      const { diagnostics } = await send(target, { east: ok(30), west: ok(300) }, rerouted);
      assert.deepEqual(diagnostics.routing, { sdkRegion: "North Europe", rerouteReason: "excludedRegion" });
      assert.deepEqual(diagnostics.ranking, { reason: "demoted", addressedRegion: "East US" });
    });

    it("is on with a fixed threshold too, and routing: \"preferred\" turns it off", async () => {
      const demoting = setup({ threshold: 10 });
      await demoteEast(demoting);
      assert.deepEqual(demoting.regions.demotedRegions, [{ region: "East US", inFavourOf: "West US" }]);
      const ranked = await send(demoting, { west: ok(30), east: ok(300) });
      assert.equal(ranked.diagnostics.primaryRegion, "East US");
      assert.equal(ranked.diagnostics.ranking?.reason, "demoted");
      assert.deepEqual(
        ranked.diagnostics.arms.map((arm) => [arm.region, arm.outcome]),
        [
          ["East US", "aborted"],
          ["West US", "returned"],
        ],
      );
      const preferred = setup({ threshold: 10, routing: "preferred" });
      for (let i = 0; i < 2 * demotionDefaults.consecutiveWins; i++) await send(preferred, { east: ok(300), west: ok(30) });
      assert.deepEqual(preferred.regions.demotedRegions, []);
    });
  });

  describe("Thompson sampling", () => {
    // Issue 22: Thompson sampling orders the hedges only; the primary goes where the SDK sent it, browned out or not.
    it("keeps every read where the SDK sent it, browned-out region or not, and says the sampling ordered its hedges", async () => {
      const stub = sinon.stub(Math, "random").callsFake(seededRandom(11));
      try {
        const { pipeline } = setup({ threshold: "adaptive", routing: "thompson" });
        const east = new URL(eastUs.endpoint).origin;
        const latencies = new Map([
          [east, 2],
          [new URL(westUs.endpoint).origin, 30],
        ]);
        const client = latencyTransport((origin) => latencies.get(origin) ?? 0);
        const eastFirst = async (reads: number): Promise<number> => {
          let count = 0;
          for (let i = 0; i < reads; i++) {
            const pending = observe(pipeline.sendRequest(client, pointRead(eastUs, harness.leaks.controller().signal)));
            for (let waited = 0; !pending.state().done && waited < 1000; waited++) await harness.clock.tickAsync(1);
            const diagnostics = getHedgeDiagnostics(await pending.result());
            assert.equal(diagnostics?.ranking?.reason, "thompson");
            if (diagnostics?.primaryRegion === "East US") count += 1;
          }
          return count;
        };
        await eastFirst(30);
        const healthy = await eastFirst(30);
        latencies.set(east, 300);
        await eastFirst(30);
        const brownedOut = await eastFirst(30);
        latencies.set(east, 2);
        await harness.clock.tickAsync(20_000);
        await eastFirst(30);
        const recovered = await eastFirst(30);
        assert.equal(healthy, 30, `East first in ${healthy} of 30 healthy reads`);
        assert.equal(brownedOut, 30, `East first in ${brownedOut} of 30 browned-out reads: the primary is the SDK's`);
        assert.equal(recovered, 30, `East first in ${recovered} of 30 reads after it recovered`);
      } finally {
        stub.restore();
      }
    });
  });

  describe("metrics", () => {
    it("count requests, hedges fired and won, and the charge of losing arms, per region, with latency percentiles", async () => {
      const target = setup({ threshold: 10, routing: "preferred" });
      for (let i = 0; i < 10; i++) await send(target, { east: ok(4, { requestCharge: 1 }) });
      await send(target, { east: ok(100, { requestCharge: 1 }), west: ok(20, { requestCharge: 1 }) });
      // Both arms transient, West's (hedged at the threshold) first: the primary's outcome is returned, West's charge is the cost of hedging.
      await send(target, { east: { status: 503, delayMs: 15, requestCharge: 0.5 }, west: { status: 503, delayMs: 1, requestCharge: 2 } });
      const metrics = target.policy.metrics();
      assert.equal(metrics.requests, 12);
      assert.equal(metrics.hedgesFired, 2);
      assert.equal(metrics.hedgesWon, 1);
      assert.equal(metrics.losingRequestCharge, 2);
      const east = metrics.regions.find((region) => region.region === "East US");
      const west = metrics.regions.find((region) => region.region === "West US");
      assert.deepEqual(
        { requests: east?.requests, hedgesFired: east?.hedgesFired, hedgesWon: east?.hedgesWon, losingRequestCharge: east?.losingRequestCharge },
        { requests: 12, hedgesFired: 0, hedgesWon: 0, losingRequestCharge: 0 },
      );
      assert.deepEqual(
        { requests: west?.requests, hedgesFired: west?.hedgesFired, hedgesWon: west?.hedgesWon, losingRequestCharge: west?.losingRequestCharge },
        { requests: 0, hedgesFired: 2, hedgesWon: 1, losingRequestCharge: 2 },
      );
      // East: ten answers in 4 ms and one primary cut short after 30 ms (it ran longer than West's 20 ms answer).
      assert.equal(east?.latency?.samples, 11);
      assert.ok(east?.latency !== undefined && Math.abs(east.latency.p50 - 4) < 0.1, JSON.stringify(east?.latency));

      assert.deepEqual(Object.keys(east?.latencyByClass ?? {}), ["pointRead"]);
      assert.equal(west?.latency?.samples, 1, "the 503s are fast failures and are not latencies");
    });

    it("count skipped requests, and are the same through createHedgingHttpClient", async () => {
      const client = createHedgingHttpClient({ httpClient: harness.transport, crossRegion: { threshold: "adaptive" }, metadata: false });
      client.regions.setTopology(twoRegions);
      harness.transport.script(eastUs.endpoint, ok(3));
      const pending = observe(client.sendRequest(pointRead(eastUs, harness.leaks.controller().signal)));
      await harness.clock.tickAsync(3);
      await pending.result();
      const skipped = requestTo(eastUs, "POST", "dbs/db/colls/c/docs", { body: "{}", abortSignal: harness.leaks.controller().signal });
      harness.transport.script(eastUs.endpoint, ok(3));
      const write = observe(client.sendRequest(skipped));
      await harness.clock.tickAsync(3);
      assert.equal(getHedgeDiagnostics(await write.result())?.skipReason, "notEligible");
      const metrics = client.metrics();
      assert.equal(metrics.requests, 2);
      assert.equal(metrics.regions.find((region) => region.region === "East US")?.requests, 2);
      assert.equal(metrics.regions.find((region) => region.region === "East US")?.latency?.samples, 1, "only the read's arm is a latency");
    });
  });

  describe("option validation", () => {
    const rangeErrors: ReadonlyArray<readonly [CrossRegionHedgingPolicyOptions, string, string]> = [
      [{ threshold: "fast" as unknown as number }, "threshold", 'got "fast"'],
      [{ threshold: { mode: "fixed" } as unknown as number }, "threshold.mode", 'got "fixed"'],
      [{ threshold: { mode: "Adaptive" } as unknown as number }, "threshold.mode", 'got "Adaptive"'],
      [{ threshold: { floor: 5 } as unknown as number }, "threshold.mode", "got undefined"],
      [{ threshold: [] as unknown as number }, "threshold", "got an array"],
      [{ threshold: { mode: "adaptive", floor: 1000, ceiling: 2000 }, requestTimeout: 1000 }, "threshold.floor", "below requestTimeout (1000 ms); got 1000"],
      [{ threshold: { mode: "adaptive", maxExtraLoad: 2 } }, "threshold.maxExtraLoad", "got 2"],
      [{ threshold: { mode: "adaptive", floor: 0 } }, "threshold.floor", "got 0"],
      [{ threshold: { mode: "adaptive", minSamples: -1 } }, "threshold.minSamples", "got -1"],
      [{ budget: { maxExtraLoad: 0 } }, "budget.maxExtraLoad", "got 0"],
      [{ budget: { maxHedgesInFlight: 0.5 } }, "budget.maxHedgesInFlight", "got 0.5"],
    ];
    for (const [options, option, shown] of rangeErrors) {
      it(`${JSON.stringify(options)} is a RangeError naming ${option}`, () => {
        assert.throws(
          () => crossRegionHedgingPolicy(options),
          (error: unknown) => {
            assert.ok(error instanceof RangeError, String(error));
            assert.ok(error.message.startsWith(`${option} `), error.message);
            assert.ok(error.message.includes(shown), error.message);
            return true;
          },
        );
      });
    }

    const typeErrors: ReadonlyArray<readonly [CrossRegionHedgingPolicyOptions, string, string]> = [
      [{ budget: true as unknown as false }, "budget", "got true"],
      [{ routing: "random" as unknown as "thompson" }, "routing", 'got "random"'],
    ];
    for (const [options, option, shown] of typeErrors) {
      it(`${JSON.stringify(options)} is a TypeError naming ${option}`, () => {
        assert.throws(
          () => crossRegionHedgingPolicy(options),
          (error: unknown) => {
            assert.ok(error instanceof TypeError, String(error));
            assert.ok(error.message.startsWith(`${option} `), error.message);
            assert.ok(error.message.includes(shown), error.message);
            return true;
          },
        );
      });
    }
  });
});
