import assert from "node:assert/strict";
import { RestError, createEmptyPipeline, createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { AzureLogger, getLogLevel, setLogLevel } from "@azure/logger";
import sinon from "sinon";
import type { SinonFakeTimers } from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { AccountTopologyInit, RegionEndpoint } from "../../../src/topology/regionCache.js";
import { metadataHedgingEnvironmentVariable } from "../../../src/cosmos/environment.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { loserDrainDefaults } from "../../../src/race/loserDrain.js";
import { setRequestControls } from "../../../src/request/requestControls.js";
import type { RequestHedgingControls } from "../../../src/request/requestModel.js";
import {
  metadataHedging,
  metadataHedgingDefaults,
  metadataHedgingPolicy,
  metadataHedgingPolicyName,
} from "../../../src/policies/metadataHedgingPolicy.js";
import { policyOver } from "../../../src/policies/requestHandler.js";
import type { MetadataHedgingPolicyOptions } from "../../../src/policies/metadataHedgingPolicy.js";
import { FakeTransport } from "../../support/fakeTransport.js";
import type { ScriptStep } from "../../support/fakeTransport.js";
import { LeakCheck, checkEachTest } from "../../support/leakCheck.js";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import { excludedRegionsPolicy } from "../../../src/policies/excludedRegionsPolicy.js";
import { useRaceHarness } from "../../support/raceHarness.js";
import * as fixtures from "../../support/hedgingFixtures.js";
import { ok, pipelineOf, scriptedSender } from "../../support/scriptedPolicy.js";

const eastUs: RegionEndpoint = { name: "East US", endpoint: "https://meta-eastus.documents.azure.com:443/" };
const westUs: RegionEndpoint = { name: "West US", endpoint: "https://meta-westus.documents.azure.com:443/" };
const northEurope: RegionEndpoint = { name: "North Europe", endpoint: "https://meta-northeurope.documents.azure.com:443/" };

/** The default threshold, which most tests run with. */
const threshold = metadataHedgingDefaults.threshold;
/** Far beyond the threshold: an arm that answers this late hangs until it is aborted. */
const slow = 10_000;

interface RequestInit {
  headers?: Record<string, string>;
  abortSignal?: AbortSignal;
}

function requestTo(region: RegionEndpoint, path: string, init: RequestInit = {}): PipelineRequest {
  return createPipelineRequest({
    url: new URL(path, region.endpoint).href,
    method: "GET",
    headers: createHttpHeaders(init.headers ?? {}),
    ...(init.abortSignal !== undefined ? { abortSignal: init.abortSignal } : {}),
  });
}

function collectionRead(init: RequestInit = {}, collection = "c"): PipelineRequest {
  return requestTo(eastUs, `dbs/db/colls/${collection}`, init);
}

function pkRangesPage(continuation?: string, collection = "c"): PipelineRequest {
  return requestTo(eastUs, `dbs/db/colls/${collection}/pkranges`, continuation === undefined ? {} : { headers: { "x-ms-continuation": continuation } });
}

function transportError(code: string): RestError {
  return new RestError(`read ${code}`, { code });
}

type Settled = { done: false } | { done: true; response: PipelineResponse } | { done: true; error: unknown };

/** Watches a request while the fake clock runs, so its rejection is never unhandled. */
function observe(promise: Promise<PipelineResponse>): () => Settled {
  let state: Settled = { done: false };
  promise.then(
    (response) => {
      state = { done: true, response };
    },
    (error: unknown) => {
      state = { done: true, error };
    },
  );
  return () => state;
}

function responseOf(state: () => Settled): PipelineResponse {
  const settled = state();
  assert.ok(settled.done, "the request has settled");
  assert.ok("response" in settled, `the request resolved (it rejected with ${"error" in settled ? String(settled.error) : ""})`);
  return settled.response;
}

function errorOf(state: () => Settled): unknown {
  const settled = state();
  assert.ok(settled.done, "the request has settled");
  assert.ok("error" in settled, "the request rejected");
  return settled.error;
}

function diagnosticsOf(value: unknown): HedgeDiagnostics {
  const diagnostics = getHedgeDiagnostics(value);
  assert.ok(diagnostics !== undefined, "diagnostics are attached");
  return diagnostics;
}

function hostsOf(transport: FakeTransport): string[] {
  return transport.received.map((record) => new URL(record.url).hostname.split(".")[0] ?? "");
}

describe("metadataHedgingPolicy", () => {
  let clock: SinonFakeTimers;
  let leaks: LeakCheck;
  let transport: FakeTransport;
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];

  beforeEach(() => {
    delete process.env[metadataHedgingEnvironmentVariable];
    // Microtasks and nextTick stay real: they are not timers, and faking them would also hold back the reporter's own output.
    clock = sinon.useFakeTimers({ toNotFake: ["nextTick", "queueMicrotask"] });
    leaks = new LeakCheck(clock);
    transport = new FakeTransport();
  });

  checkEachTest(async () => {
    await leaks.verify();
    assert.deepEqual(transport.unscripted, [], "requests nobody scripted");
  });

  afterEach(() => {
    leaks.dispose();
    clock.restore();
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  interface Setup {
    topology?: Partial<AccountTopologyInit>;
    options?: MetadataHedgingPolicyOptions;
  }

  /** A pipeline holding the policy over the fake transport; PPAF on unless the test says otherwise. */
  function client(setup: Setup = {}): (request?: PipelineRequest) => () => Settled {
    const regions = new RegionCache({
      topology: { readRegions: [eastUs, westUs, northEurope], perPartitionFailover: true, ...setup.topology },
    });
    const pipeline = createEmptyPipeline();
    // Losers are aborted at once here, so each test ends with its race; draining has its own tests (loserDrain.test.ts).
    pipeline.addPolicy(metadataHedgingPolicy({ regions, drainLosers: false, ...setup.options }));
    return (request = collectionRead({ abortSignal: leaks.controller().signal })) => observe(pipeline.sendRequest(transport, request));
  }

  it("is named metadataHedgingPolicy", () => {
    assert.equal(metadataHedgingPolicy().name, metadataHedgingPolicyName);
    assert.equal(metadataHedgingPolicyName, "metadataHedgingPolicy");
  });

  describe("races", () => {
    it("a fast primary wins with no hedge", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: 50, activityId: "primary-activity" });
      const pending = client()();
      await clock.tickAsync(50);
      const response = responseOf(pending);
      assert.equal(response.status, 200);
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.policy, "metadata");
      assert.equal(diagnostics.operation, "collectionRead");
      assert.equal(diagnostics.thresholdMs, threshold);
      assert.equal(diagnostics.primaryRegion, "East US");
      assert.equal(diagnostics.hedgeFired, false);
      assert.equal(diagnostics.hedgeWon, false);
      assert.equal(diagnostics.terminalState, "primaryWon");
      assert.equal(diagnostics.winningActivityId, "primary-activity");
    });

    it("a slow primary loses to the hedge, which goes out at the threshold to the next region", async () => {
      const seen: HedgeDiagnostics[] = [];
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 40, activityId: "hedge-activity", requestCharge: 1 });
      const pending = client({ options: { onDiagnostics: (diagnostics) => seen.push(diagnostics) } })();
      await clock.tickAsync(threshold - 1);
      assert.equal(transport.received.length, 1);
      await clock.tickAsync(1);
      assert.deepEqual(hostsOf(transport), ["meta-eastus", "meta-westus"]);
      await clock.tickAsync(39);
      assert.equal(pending().done, false);
      await clock.tickAsync(1);
      const response = responseOf(pending);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("x-ms-activity-id"), "hedge-activity");
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.hedgeFired, true);
      assert.equal(diagnostics.hedgeWon, true);
      assert.equal(diagnostics.terminalState, "hedgeWon");
      assert.equal(diagnostics.winningRegion, "West US");
      assert.equal(diagnostics.winningActivityId, "hedge-activity");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.region, arm.reason, arm.startOffsetMs, arm.outcome]),
        [
          ["East US", "primary", 0, "aborted"],
          ["West US", "threshold", threshold, "returned"],
        ],
      );
      assert.equal(transport.received[0]?.signalAborted, true, "the primary was aborted");
      assert.deepEqual(seen, [diagnostics]);
    });

    it("a primary 503 before the threshold goes back at once, unhedged, for the SDK's retry", async () => {
      transport.script(eastUs.endpoint, { status: 503, delayMs: 100 });
      transport.script(westUs.endpoint, { status: 200, delayMs: 30 });
      const pending = client()();
      await clock.tickAsync(100);
      const response = responseOf(pending);
      assert.equal(response.status, 503);
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"], "no hedge is sent");
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.hedgeFired, false);
      assert.equal(diagnostics.hedgeWon, false);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.equal(diagnostics.winningRegion, "East US");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.reason, arm.status, arm.outcome]),
        [["primary", 503, "returned"]],
      );
    });

    it("a hedge that succeeds before the primary's 503 wins", async () => {
      transport.script(eastUs.endpoint, { status: 503, delayMs: threshold + 100 });
      transport.script(westUs.endpoint, { status: 200, delayMs: 30 });
      const pending = client()();
      await clock.tickAsync(threshold + 30);
      const response = responseOf(pending);
      assert.equal(response.status, 200);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "hedgeWon");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.reason, arm.status, arm.outcome]),
        [
          ["primary", undefined, "aborted"],
          ["threshold", 200, "returned"],
        ],
      );
    });

    it("a primary connection failure before the threshold goes back at once, unhedged, for the SDK's retry", async () => {
      const primaryError = transportError("ECONNRESET");
      transport.script(eastUs.endpoint, { error: primaryError, delayMs: 20 });
      transport.script(westUs.endpoint, { status: 200, delayMs: 30 });
      const pending = client()();
      await clock.tickAsync(20);
      const error = errorOf(pending);
      assert.equal(error, primaryError);
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"], "no hedge is sent");
      const diagnostics = diagnosticsOf(error);
      assert.equal(diagnostics.hedgeFired, false);
      assert.equal(diagnostics.hedgeWon, false);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.deepEqual(diagnostics.arms[0]?.error, { name: "RestError", code: "ECONNRESET", message: "read ECONNRESET" });
    });

    /** East US fails at transport past the threshold, after the hedge went to West US, scripted as `west`; its error is rethrown. */
    async function primaryFailsPastThreshold(west: ScriptStep): Promise<HedgeDiagnostics> {
      const primaryError = transportError("ECONNRESET");
      transport.script(eastUs.endpoint, { error: primaryError, delayMs: threshold + 20 });
      transport.script(westUs.endpoint, west);
      const pending = client()();
      await clock.tickAsync(threshold + 20);
      const error = errorOf(pending);
      assert.equal(error, primaryError);
      const diagnostics = diagnosticsOf(error);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.equal(diagnostics.hedgeFired, true);
      assert.equal(diagnostics.hedgeWon, false);
      return diagnostics;
    }

    it("a primary connection failure past the threshold goes back with the hedge in flight, which is aborted", async () => {
      const diagnostics = await primaryFailsPastThreshold({ status: 200, delayMs: slow });
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.reason, arm.outcome]),
        [
          ["primary", "returned"],
          ["threshold", "aborted"],
        ],
      );
      assert.equal(transport.received[1]?.signalAborted, true);
    });

    it("when both arms fail at transport, the primary's error is rethrown", async () => {
      // The primary fails past the threshold, after the hedge sent then has failed.
      const diagnostics = await primaryFailsPastThreshold({ error: transportError("ECONNREFUSED"), delayMs: 10 });
      assert.equal(diagnostics.winningRegion, "East US");
    });

    it("a hedge that answers 401 loses: the primary's outcome is returned", async () => {
      transport.script(eastUs.endpoint, { status: 503, delayMs: threshold + 500 });
      transport.script(westUs.endpoint, { status: 401, delayMs: 10 });
      const pending = client()();
      await clock.tickAsync(threshold + 10);
      assert.equal(pending().done, false, "a 401 from the hedge does not end the race");
      await clock.tickAsync(490);
      const response = responseOf(pending);
      assert.equal(response.status, 503);
      assert.equal(response.request.url, collectionRead().url);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.equal(diagnostics.hedgeWon, false);
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.status, arm.outcome]),
        [
          [503, "returned"],
          [401, "lost"],
        ],
      );
    });

    it("a fast primary 404 is returned verbatim and fires no hedge", async () => {
      transport.script(eastUs.endpoint, { status: 404, delayMs: 10 });
      const pending = client()();
      await clock.tickAsync(10);
      assert.equal(responseOf(pending).status, 404);
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.equal(diagnostics.hedgeFired, false);
      assert.equal(diagnostics.terminalState, "primaryWon");
    });

    it("a slow primary that settles first with a definitive 409 wins over the hedge in flight", async () => {
      transport.script(eastUs.endpoint, { status: 409, delayMs: threshold + 200 });
      transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      const pending = client()();
      await clock.tickAsync(threshold + 200);
      const response = responseOf(pending);
      assert.equal(response.status, 409);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "primaryWon");
      assert.equal(diagnostics.hedgeFired, true);
      assert.equal(diagnostics.hedgeWon, false);
      assert.equal(transport.received[1]?.signalAborted, true);
    });

    it("a hedge that lost the race is aborted, and its late answer is dropped", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold + 100, activityId: "primary-activity" });
      transport.script(westUs.endpoint, { status: 200, delayMs: 500, activityId: "late-hedge" });
      const pending = client()();
      await clock.tickAsync(threshold + 100);
      const hedge = transport.received[1];
      assert.ok(hedge !== undefined);
      assert.equal(hedge.signalAborted, true);
      assert.equal(hedge.outcome, "aborted");
      await clock.tickAsync(1000);
      const response = responseOf(pending);
      assert.equal(response.headers.get("x-ms-activity-id"), "primary-activity");
      assert.equal(diagnosticsOf(response).arms[1]?.outcome, "aborted");
    });

    it("a hedge that fired and settled but lost reports hedgeWon false", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold + 300 });
      transport.script(westUs.endpoint, { status: 503, delayMs: 100 });
      const pending = client()();
      await clock.tickAsync(threshold + 300);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.equal(diagnostics.hedgeFired, true);
      assert.equal(diagnostics.hedgeWon, false);
      assert.equal(diagnostics.terminalState, "primaryWon");
      assert.equal(diagnostics.winningRegion, "East US");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.region, arm.status, arm.outcome]),
        [
          ["East US", 200, "returned"],
          ["West US", 503, "lost"],
        ],
      );
    });

    it("a caller's abort surfaces as an AbortError without starting a hedge", async () => {
      const caller = leaks.controller();
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      const pending = client()(collectionRead({ abortSignal: caller.signal }));
      await clock.tickAsync(500);
      caller.abort();
      await clock.tickAsync(threshold * 2);
      const error = errorOf(pending);
      assert.equal((error as Error).name, "AbortError");
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      assert.equal(transport.received[0]?.signalAborted, true);
      const diagnostics = diagnosticsOf(error);
      assert.equal(diagnostics.terminalState, "aborted");
      assert.equal(diagnostics.hedgeFired, false);
    });

    it("hedges the first page of the PartitionKeyRange read feed", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const pending = client()(pkRangesPage());
      await clock.tickAsync(threshold + 10);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.equal(diagnostics.operation, "partitionKeyRangeReadFeed");
      assert.equal(diagnostics.hedgeWon, true);
    });

    it("signs each hedge with the signer, and sends the primary as the caller made it", async () => {
      const signed: string[] = [];
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const signer = (request: PipelineRequest): void => {
        signed.push(new URL(request.url).hostname.split(".")[0] ?? "");
        request.headers.set("authorization", `signed-for-${signed.length}`);
      };
      const pending = client({ options: { signer } })();
      await clock.tickAsync(threshold + 10);
      assert.equal(responseOf(pending).status, 200);
      assert.deepEqual(signed, ["meta-westus"]);
      assert.deepEqual(
        transport.received.map((record) => record.headers["authorization"]),
        [undefined, "signed-for-1"],
      );
    });
  });

  describe("read-feed continuation pages", () => {
    it("a later page is not hedged", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
      const pending = client()(pkRangesPage("page-2"));
      await clock.tickAsync(threshold * 2);
      const response = responseOf(pending);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.operation, "partitionKeyRangeReadFeedContinuation");
      assert.equal(diagnostics.skipReason, "continuationPage");
      assert.equal(diagnostics.hedgeFired, false);
    });

    it("after a hedge won the first page, a later page goes where the SDK sends it: the etag is valid in every region", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10, headers: { "x-ms-continuation": "west-2" } });
      transport.script(eastUs.endpoint, { status: 200, delayMs: 10 });
      const send = client();
      const first = send(pkRangesPage());
      await clock.tickAsync(threshold + 10);
      assert.equal(diagnosticsOf(responseOf(first)).hedgeWon, true);

      const second = send(pkRangesPage("west-2"));
      await clock.tickAsync(10);
      const secondResponse = responseOf(second);
      assert.equal(secondResponse.request.url, new URL("dbs/db/colls/c/pkranges", eastUs.endpoint).href);
      const diagnostics = diagnosticsOf(secondResponse);
      assert.equal(diagnostics.skipReason, "continuationPage");
      assert.equal(diagnostics.winningRegion, "East US");
      assert.deepEqual(hostsOf(transport), ["meta-eastus", "meta-westus", "meta-eastus"]);
      assert.equal(transport.received[2]?.headers["x-ms-continuation"], "west-2");
    });

    it("after the primary won the first page, the later pages go where the SDK sends them", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: 10, headers: { "x-ms-continuation": "east-2" } });
      transport.script(eastUs.endpoint, { status: 200, delayMs: 10 });
      const send = client();
      const first = send(pkRangesPage());
      await clock.tickAsync(10);
      assert.equal(diagnosticsOf(responseOf(first)).terminalState, "primaryWon");
      const second = send(pkRangesPage("east-2"));
      await clock.tickAsync(10);
      assert.equal(responseOf(second).status, 200);
      assert.deepEqual(hostsOf(transport), ["meta-eastus", "meta-eastus"]);
    });

    it("pins the pages of one feed only: another collection with the same token goes where the SDK sends it", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10, headers: { "x-ms-continuation": "token" } });
      transport.script(eastUs.endpoint, { status: 200, delayMs: 10 });
      const send = client();
      send(pkRangesPage());
      await clock.tickAsync(threshold + 10);
      const other = send(pkRangesPage("token", "other"));
      await clock.tickAsync(10);
      assert.equal(responseOf(other).status, 200);
      assert.deepEqual(hostsOf(transport), ["meta-eastus", "meta-westus", "meta-eastus"]);
    });
  });

  describe("enablement", () => {
    it("skips with a single applicable region", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
      const pending = client({ topology: { readRegions: [eastUs] } })();
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.equal(diagnostics.skipReason, "singleRegion");
      assert.equal(diagnostics.terminalState, "skipped");
    });

    it("skips while the account has no PPAF and the option is unset", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
      const pending = client({ topology: { perPartitionFailover: false } })();
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      assert.equal(diagnosticsOf(responseOf(pending)).skipReason, "disabled");
    });

    it("hedges with enabled: true while the account has no PPAF", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const pending = client({ topology: { perPartitionFailover: false }, options: { enabled: true } })();
      await clock.tickAsync(threshold + 10);
      assert.equal(diagnosticsOf(responseOf(pending)).hedgeWon, true);
    });

    it("skips with enabled: false while the account has PPAF", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
      const pending = client({ options: { enabled: false } })();
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      assert.equal(diagnosticsOf(responseOf(pending)).skipReason, "disabled");
    });

    it("the environment kill switch suppresses hedging even with enabled: true, read on every request", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 }, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const send = client({ options: { enabled: true } });
      process.env[metadataHedgingEnvironmentVariable] = "FALSE";
      const killed = send();
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      assert.equal(diagnosticsOf(responseOf(killed)).skipReason, "disabled");
      delete process.env[metadataHedgingEnvironmentVariable];
      const revived = send();
      await clock.tickAsync(threshold + 10);
      assert.equal(diagnosticsOf(responseOf(revived)).hedgeWon, true);
    });

    it("the environment switch set to true forces hedging on over enabled: false", async () => {
      process.env[metadataHedgingEnvironmentVariable] = " true ";
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const pending = client({ topology: { perPartitionFailover: false }, options: { enabled: false } })();
      await clock.tickAsync(threshold + 10);
      assert.equal(diagnosticsOf(responseOf(pending)).hedgeWon, true);
    });

    it("a garbage environment value logs a warning naming the variable and is ignored", async () => {
      const lines: string[] = [];
      const previousLog = AzureLogger.log;
      const previousLevel = getLogLevel();
      setLogLevel("warning");
      AzureLogger.log = (...args: unknown[]) => {
        lines.push(args.map(String).join(" "));
      };
      try {
        // The warned-value memory is process-wide: a value of this test's own.
        process.env[metadataHedgingEnvironmentVariable] = `metadata-policy-test-${process.pid}`;
        transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
        transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
        const pending = client({ options: { enabled: true } })();
        await clock.tickAsync(threshold + 10);
        assert.equal(diagnosticsOf(responseOf(pending)).hedgeWon, true, "the garbage value neither forced nor killed hedging");
        const warnings = lines.filter((line) => line.includes(metadataHedgingEnvironmentVariable));
        assert.equal(warnings.length, 1);
        assert.match(warnings[0] ?? "", /"true" and "false"/);
      } finally {
        AzureLogger.log = previousLog;
        setLogLevel(previousLevel);
      }
    });

    it("the account's disableCrossRegionalHedging switch suppresses hedging", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
      const pending = client({ topology: { crossRegionalHedgingDisabled: true }, options: { enabled: true } })();
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      assert.equal(diagnosticsOf(responseOf(pending)).skipReason, "accountSwitch");
    });

    it("learns the topology from a database-account read that passes through it", async () => {
      const regions = new RegionCache();
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy(metadataHedgingPolicy({ regions }));
      const account = {
        readableLocations: [eastUs, westUs].map((region) => ({ name: region.name, databaseAccountEndpoint: region.endpoint })),
        writableLocations: [{ name: eastUs.name, databaseAccountEndpoint: eastUs.endpoint }],
        enablePerPartitionFailoverBehavior: true,
      };
      transport.script(eastUs.endpoint, { status: 200, body: JSON.stringify(account) });
      const accountRead = observe(pipeline.sendRequest(transport, requestTo(eastUs, "")));
      await clock.tickAsync(0);
      assert.equal(getHedgeDiagnostics(responseOf(accountRead)), undefined);
      assert.equal(regions.topology?.perPartitionFailover, true);

      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const read = observe(pipeline.sendRequest(transport, collectionRead()));
      await clock.tickAsync(threshold + 10);
      const diagnostics = diagnosticsOf(responseOf(read));
      assert.equal(diagnostics.hedgeWon, true);
      // By default the slow primary is left to drain, and cut off at the drain's time limit.
      assert.equal(diagnostics.arms[0]?.outcome, "drained");
      await clock.tickAsync(loserDrainDefaults.maxDrainMs);
      assert.equal(diagnostics.arms[0]?.drainEnd, "timeLimit");
    });

    it("tells the SDK's endpoint discovery of a drained primary's 403/1008 that a hedge hid, and of nothing else", async () => {
      const told: string[] = [];
      const marks = { markForReads: (region: string): boolean => (told.push(region), true), countFailure: () => false, attemptOf: () => undefined };
      const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs, northEurope], perPartitionFailover: true } });
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy(policyOver(metadataHedgingPolicyName, regions, metadataHedging({ regions }, marks)));
      const send = (): (() => Settled) => observe(pipeline.sendRequest(transport, collectionRead()));
      transport.script(eastUs.endpoint, { status: 403, subStatus: 1008, delayMs: threshold + 500 });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const hidden = send();
      await clock.tickAsync(threshold + 10);
      assert.equal(diagnosticsOf(responseOf(hidden)).hedgeWon, true);
      assert.deepEqual(told, [], "not before the primary's answer");
      await clock.tickAsync(500);
      assert.deepEqual(told, ["East US"]);
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold + 500 });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const slowOnly = send();
      await clock.tickAsync(threshold + 510);
      assert.equal(diagnosticsOf(responseOf(slowOnly)).hedgeWon, true);
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold + 10 });
      transport.script(westUs.endpoint, { status: 403, subStatus: 1008, delayMs: 100 });
      const hedgeRefused = send();
      await clock.tickAsync(threshold + 200);
      assert.equal(diagnosticsOf(responseOf(hedgeRefused)).hedgeWon, false);
      assert.deepEqual(told, ["East US"], "a primary that answered in the end, and a hedge's answer, tell nothing");
      // helper-26: an answer later than the SDK's requestTimeout, which cut the attempt first, was told all the same.
      const short = createEmptyPipeline();
      short.addPolicy(policyOver(metadataHedgingPolicyName, regions, metadataHedging({ regions, requestTimeout: threshold + 400 }, marks)));
      transport.script(eastUs.endpoint, { status: 403, subStatus: 1008, delayMs: threshold + 500 });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const late = observe(short.sendRequest(transport, collectionRead()));
      await clock.tickAsync(threshold + 10);
      assert.equal(diagnosticsOf(responseOf(late)).hedgeWon, true);
      await clock.tickAsync(500);
      assert.deepEqual(told, ["East US"], "past the SDK's requestTimeout");
    });

    it("passes other requests through untouched, without diagnostics", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
      const request = requestTo(eastUs, "dbs/db/colls/c/docs/1");
      const pending = client()(request);
      await clock.tickAsync(threshold * 2);
      const response = responseOf(pending);
      assert.equal(transport.received[0]?.request, request, "the request itself went out, not a clone");
      assert.equal(getHedgeDiagnostics(response), undefined);
    });
  });

  describe("per-request controls", () => {
    function controlled(controls: RequestHedgingControls): PipelineRequest {
      const request = collectionRead();
      setRequestControls(request, controls);
      return request;
    }

    it("hedging: false skips the hedge", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
      const pending = client()(controlled({ hedging: false }));
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      assert.equal(diagnosticsOf(responseOf(pending)).skipReason, "disabled");
    });

    it("a pinned region skips the hedge", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
      const pending = client()(controlled({ region: "East US" }));
      await clock.tickAsync(threshold * 2);
      assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
      assert.equal(diagnosticsOf(responseOf(pending)).skipReason, "pinnedRegion");
    });

    it("excluded regions are skipped when choosing the hedge's region", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(northEurope.endpoint, { status: 200, delayMs: 10 });
      const pending = client()(controlled({ excludedRegions: ["westus"] }));
      await clock.tickAsync(threshold + 10);
      assert.equal(diagnosticsOf(responseOf(pending)).winningRegion, "North Europe");
      assert.deepEqual(hostsOf(transport), ["meta-eastus", "meta-northeurope"]);
    });

    it("a per-request threshold turns hedging on for its request on a client that does not hedge, as in .NET", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const pending = client({ options: { enabled: false } })(controlled({ hedging: { threshold: 200 } }));
      await clock.tickAsync(210);
      assert.deepEqual(hostsOf(transport), ["meta-eastus", "meta-westus"]);
      assert.equal(diagnosticsOf(responseOf(pending)).hedgeWon, true);
      await clock.tickAsync(slow);
    });

    it("the environment kill switch wins over a per-request threshold", async () => {
      process.env[metadataHedgingEnvironmentVariable] = "false";
      try {
        transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
        const pending = client()(controlled({ hedging: { threshold: 200 } }));
        await clock.tickAsync(threshold * 2);
        assert.deepEqual(hostsOf(transport), ["meta-eastus"]);
        assert.equal(diagnosticsOf(responseOf(pending)).skipReason, "disabled");
      } finally {
        delete process.env[metadataHedgingEnvironmentVariable];
      }
    });

    it("a per-request threshold overrides the policy's", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const pending = client()(controlled({ hedging: { threshold: 200 } }));
      await clock.tickAsync(210);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.equal(diagnostics.thresholdMs, 200);
      assert.equal(diagnostics.thresholdSource, "request");
      assert.equal(diagnostics.hedgeWon, true);
    });
  });

  describe("budget", () => {
    it("is released when a hedge settles, whichever way, and when it is aborted", async () => {
      const send = client({ options: { maxConcurrentHedges: 1 } });

      // Both thresholds fall due together: the first hedge takes the budget of one, the second is refused.
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow }, { status: 200, delayMs: threshold + 20 });
      transport.script(westUs.endpoint, { status: 200, delayMs: 100 });
      const holder = send();
      const refused = send();
      await clock.tickAsync(threshold + 100);
      assert.equal(diagnosticsOf(responseOf(holder)).hedgeWon, true);
      const refusedDiagnostics = diagnosticsOf(responseOf(refused));
      assert.equal(refusedDiagnostics.skipReason, "budgetExhausted");
      assert.equal(refusedDiagnostics.hedgeFired, false);
      assert.equal(refusedDiagnostics.terminalState, "primaryWon");

      const hedgeFires = async (hedge: { status: number; delayMs: number }, primaryMs: number): Promise<HedgeDiagnostics> => {
        transport.script(eastUs.endpoint, { status: 200, delayMs: primaryMs });
        transport.script(westUs.endpoint, hedge);
        const pending = send();
        await clock.tickAsync(Math.max(primaryMs, threshold + hedge.delayMs));
        const diagnostics = diagnosticsOf(responseOf(pending));
        assert.equal(diagnostics.hedgeFired, true);
        assert.equal(diagnostics.skipReason, undefined);
        return diagnostics;
      };
      // After a hedge that won (above), one that lost by settling, and one that was aborted.
      assert.equal((await hedgeFires({ status: 401, delayMs: 10 }, threshold + 100)).arms[1]?.outcome, "lost");
      assert.equal((await hedgeFires({ status: 200, delayMs: slow }, threshold + 100)).arms[1]?.outcome, "aborted");
      assert.equal((await hedgeFires({ status: 200, delayMs: 10 }, slow)).hedgeWon, true);
    });

    it("refuses a ninth concurrent hedge with the default budget of 8", async () => {
      const count = metadataHedgingDefaults.maxConcurrentHedges + 1;
      for (let i = 0; i < count; i++) {
        transport.script(eastUs.endpoint, { status: 200, delayMs: threshold + 500 });
        if (i < count - 1) transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      }
      const send = client();
      const pending = Array.from({ length: count }, (_, i) => send(collectionRead({}, `c${i}`)));
      await clock.tickAsync(threshold);
      assert.equal(transport.receivedBy(westUs.endpoint).length, count - 1);
      await clock.tickAsync(500);
      const diagnostics = pending.map((state) => diagnosticsOf(responseOf(state)));
      assert.deepEqual(
        diagnostics.map((entry) => entry.hedgeFired),
        [...Array<boolean>(count - 1).fill(true), false],
      );
      assert.equal(diagnostics[count - 1]?.skipReason, "budgetExhausted");
      assert.ok(diagnostics.slice(0, -1).every((entry) => entry.skipReason === undefined));
    });
  });

  describe("options", () => {
    it("rejects a threshold that is not below the request timeout, naming it and the value", () => {
      assert.throws(() => metadataHedgingPolicy({ threshold: 60000 }), {
        name: "RangeError",
        message: /^threshold must be below requestTimeout \(60000 ms\); got 60000\.$/,
      });
      assert.throws(() => metadataHedgingPolicy({ threshold: 5000, requestTimeout: 4000 }), {
        name: "RangeError",
        message: /threshold.*got 5000/,
      });
    });

    it("rejects a threshold that is not a finite positive number", () => {
      for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, "1500"]) {
        assert.throws(() => metadataHedgingPolicy({ threshold: bad as number }), (error: unknown) => {
          assert.ok(error instanceof RangeError);
          assert.match(error.message, /^threshold must be/);
          assert.ok(error.message.includes(typeof bad === "string" ? JSON.stringify(bad) : String(bad)));
          return true;
        });
      }
    });

    it("rejects a maxConcurrentHedges that is not a whole number of at least 1", () => {
      for (const bad of [0, 1.5, -2, Number.NaN]) {
        assert.throws(() => metadataHedgingPolicy({ maxConcurrentHedges: bad }), {
          name: "RangeError",
          message: new RegExp(`^maxConcurrentHedges must be a whole number of at least 1; got ${String(bad)}\\.$`),
        });
      }
    });

    it("rejects other malformed options with a TypeError naming them", () => {
      assert.throws(() => metadataHedgingPolicy({ enabled: "yes" as unknown as boolean }), { name: "TypeError", message: /^enabled/ });
      assert.throws(() => metadataHedgingPolicy({ regions: {} as RegionCache }), { name: "TypeError", message: /^regions/ });
      assert.throws(() => metadataHedgingPolicy({ onDiagnostics: 1 as unknown as () => void }), { name: "TypeError", message: /^onDiagnostics/ });
      assert.throws(() => metadataHedgingPolicy(null as unknown as MetadataHedgingPolicyOptions), { name: "TypeError" });
    });

    it("keeps the default threshold below a short request timeout", async () => {
      transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const pending = client({ options: { requestTimeout: 1000 } })();
      await clock.tickAsync(510);
      const diagnostics = diagnosticsOf(responseOf(pending));
      assert.equal(diagnostics.thresholdMs, 500);
      assert.equal(diagnostics.hedgeWon, true);
    });
  });
});

describe("trustworthiness: what users hit", function () {
  // This file's own regions and helpers share the shared fixtures' names; these tests were written against the shared ones.
  const { eastUs, westUs, northEurope, observe, requestTo } = fixtures;
  const threeRegions = { readRegions: [eastUs, westUs, northEurope] };
  const slow = 1000;

  describe("timer values Node.js would fire after 1 ms", function () {
    it("metadataHedgingPolicy rejects a threshold at 2^31 - 1 ms", function () {
      assert.throws(() => metadataHedgingPolicy({ threshold: 2 ** 31 - 1, requestTimeout: 2 ** 31 - 2 }), /^RangeError: threshold must be/);
    });
  });

  describe("PartitionKeyRange feed pages", function () {
    const harness = useRaceHarness();
    const pkranges = "dbs/db/colls/c/pkranges";

    function client(regions: RegionCache, options: Parameters<typeof metadataHedgingPolicy>[0] = {}): (request: PipelineRequest) => Promise<PipelineResponse> {
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy(excludedRegionsPolicy({ regions }));
      pipeline.addPolicy(metadataHedgingPolicy({ regions, enabled: true, threshold: 100, ...options }));
      return async (request) => {
        const pending = observe(pipeline.sendRequest(harness.transport, request));
        await harness.clock.tickAsync(slow);
        return pending.result();
      };
    }

    function page(region: RegionEndpoint, token?: string, initialHeaders: Record<string, string> = {}): PipelineRequest {
      return requestTo(region, "GET", pkranges, {
        headers: { ...initialHeaders, ...(token !== undefined ? { "x-ms-continuation": token } : {}) },
        abortSignal: harness.leaks.controller().signal,
      });
    }

    function hosts(): string[] {
      return harness.transport.received.map((record) => new URL(record.origin).hostname.split(".")[0] ?? "");
    }

    it("with a region excluded, every page of the feed goes to the next applicable region", async function () {
      const regions = new RegionCache({ topology: threeRegions, preferredRegions: ["West US", "East US", "North Europe"] });
      regions.setExcludedRegions(["West US"]);
      const send = client(regions);
      harness.transport.script(eastUs.endpoint, { status: 200, headers: { "x-ms-continuation": "page-2" } });
      await send(page(westUs));
      harness.transport.script(eastUs.endpoint, { status: 200 });
      await send(page(westUs, "page-2"));
      assert.deepEqual(hosts(), ["acct-eastus", "acct-eastus"]);
    });

    it("a later page goes where it was sent, unless the request's exclusions or its own region pin say otherwise", async function () {
      const regions = new RegionCache({ topology: threeRegions });
      const send = client(regions);
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(westUs.endpoint, { status: 200, headers: { "x-ms-continuation": "2" } });
      await send(page(eastUs));
      // A hedge served page 1 from West US; page 2 still goes where the SDK sent it.
      harness.transport.script(eastUs.endpoint, { status: 200 });
      await send(page(eastUs, "2"));
      // Excluded for this page: its region is left for the next applicable one.
      harness.transport.script(westUs.endpoint, { status: 200 });
      await send(page(eastUs, "2", hedgingRequestOptions({ excludedRegions: ["East US"] }).initialHeaders));
      // Pinned by the request to North Europe: the request's own pin wins.
      harness.transport.script(northEurope.endpoint, { status: 200 });
      await send(page(eastUs, "2", hedgingRequestOptions({ region: "North Europe" }).initialHeaders));
      assert.deepEqual(hosts(), ["acct-eastus", "acct-westus", "acct-eastus", "acct-westus", "acct-northeurope"]);
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
  // This file's own regions and helpers share the shared fixtures' names; these tests were written against the shared ones.
  const { eastUs, westUs, requestTo } = fixtures;
  const harness = useRaceHarness();
  const send = scriptedSender(harness);

  describe("metadataHedgingPolicy", () => {
    const requestTimeout = 1000;
    const policyThreshold = 400;

    function metadata() {
      const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs], perPartitionFailover: true } });
      return pipelineOf(metadataHedgingPolicy({ regions, enabled: true, threshold: policyThreshold, requestTimeout, drainLosers: false }));
    }

    function collectionReadWith(threshold: number): PipelineRequest {
      const { initialHeaders } = hedgingRequestOptions({ hedging: { threshold } });
      return requestTo(eastUs, "GET", "dbs/db/colls/c", { headers: initialHeaders as Record<string, string>, abortSignal: harness.leaks.controller().signal });
    }

    for (const requested of [requestTimeout, requestTimeout * 5]) {
      it(`ignores a per-request threshold of ${requested} ms, not below requestTimeout (${requestTimeout} ms): the hedge goes out at the policy's`, async () => {
        const diagnostics = await send(metadata(), { east: ok(3000), west: ok(10) }, collectionReadWith(requested));
        assert.equal(diagnostics.thresholdMs, policyThreshold);
        assert.equal(diagnostics.thresholdSource, "options");
        assert.equal(diagnostics.arms[1]?.startOffsetMs, policyThreshold);
        assert.equal(diagnostics.winningRegion, "West US");
      });
    }

    it(`(the control: a per-request threshold just below requestTimeout is honoured)`, async () => {
      const diagnostics = await send(metadata(), { east: ok(3000), west: ok(10) }, collectionReadWith(requestTimeout - 1));
      assert.equal(diagnostics.thresholdMs, requestTimeout - 1);
      assert.equal(diagnostics.thresholdSource, "request");
      assert.equal(diagnostics.arms[1]?.startOffsetMs, requestTimeout - 1);
    });
  });
});
