import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { HttpMethods, Pipeline, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import sinon from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { AccountTopologyInit, RegionEndpoint } from "../../../src/topology/regionCache.js";
import { hedgeDiagnosticsHeaderName, requestControlHeaders } from "../../../src/cosmos/headers.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { classifyOperation } from "../../../src/cosmos/operationKind.js";
import { setRequestControls } from "../../../src/request/requestControls.js";
import {
  crossRegionHedgingDefaults,
  crossRegionHedgingPolicy,
  crossRegionHedgingPolicyName,
} from "../../../src/policies/crossRegionHedgingPolicy.js";
import type { CrossRegionHedgingPolicyOptions } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { eastUs, northEurope, observe, pointRead, query, requestTo, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";

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

    for (const [name, method, body, headers] of [
      ["a patch with incr", "PATCH", JSON.stringify({ operations: [{ op: "incr", path: "/v", value: 1 }] }), {}],
      ["a bulk request with a patch that appends", "POST", JSON.stringify([{ operationType: "Patch", id: "1", resourceBody: { operations: [{ op: "add", path: "/l/-", value: 1 }] } }]), { "x-ms-cosmos-is-batch-request": "true" }],
    ] as const) {
      it(`${name} is sent once even with enableMultiWriteRegionHedge: a second application would change the result`, async () => {
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
        const request = requestTo(eastUs, method, path, { headers, body, abortSignal: signal() });
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

  describe("requests that pass through unhedged", () => {
    it("a retry of the SDK's (marked by its plugin): one send where the SDK sent it, skipReason sdkRetry; its first attempt is hedged", async () => {
      const pipeline = pipelineWith({ regions: regionsWith(), threshold: 100 });
      const retry = pointRead(eastUs, signal());
      retry.headers.set(requestControlHeaders.sdkRetry, "1");
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
      harness.transport.script(eastUs.endpoint, { error: failure, delayMs: 10 });
      harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10, requestCharge: 1 });
      const pending = send(pipeline, pointRead(eastUs, signal()));
      await harness.clock.tickAsync(20);
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
      // West fails at the threshold and brings North Europe forward; East fails while North is out.
      harness.transport.script(eastUs.endpoint, {
        error: new Error(`401 from gateway; request headers: authorization: type=master&ver=1.0&sig=${secret}`),
        delayMs: 115,
      });
      harness.transport.script(westUs.endpoint, { error: new Error(`rejected ${encoded}`), delayMs: 10 });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 10, headers: { "x-ms-echo": "nothing secret" } });
      const pending = send(pipeline, request);
      await harness.clock.tickAsync(120);
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
      assert.ok(attachedRecord.arms[0]?.error?.message.startsWith("401 from gateway"), "the rest of the message is kept");
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
