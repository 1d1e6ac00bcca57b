import assert from "node:assert/strict";
import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import sinon from "sinon";
import type { SinonFakeTimers } from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { describeArm } from "../../../src/diagnostics/diagnosticsRecord.js";
import type { HedgeArmDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { runRace } from "../../../src/race/hedgingRace.js";
import type { RaceOutcome, RaceStrategy, Verdict } from "../../../src/race/race.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import type { CrossRegionHedgingPolicyOptions } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { FakeTransport } from "../../support/fakeTransport.js";
import type { ScriptStep } from "../../support/fakeTransport.js";
import { eastUs, northEurope, observe, pointRead, ukSouth, westUs } from "../../support/hedgingFixtures.js";
import { LeakCheck, checkEachTest, useFakeClock } from "../../support/leakCheck.js";
import { useRaceHarness } from "../../support/raceHarness.js";

/** The public records of a race's arms, as the edge describes them. */
function describedArms(outcome: RaceOutcome): HedgeArmDiagnostics[] {
  return outcome.arms.map((arm) => describeArm(arm, outcome.startedAt, outcome.kind === "decided" ? outcome.returnedIndex : undefined));
}

const threshold = 100;
const thresholdStep = 50;

function transportError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 10.0.0.1:443`), { code });
}

/** Far beyond any threshold: an arm that answers this late is effectively hanging until aborted. */
const slow = 10_000;

describe("race engine, through crossRegionHedgingPolicy", () => {
  const harness = useRaceHarness();

  function hedged(
    readRegions: readonly RegionEndpoint[] = [eastUs, westUs, northEurope],
    options: CrossRegionHedgingPolicyOptions = {},
  ): (request?: PipelineRequest) => ReturnType<typeof observe<PipelineResponse>> {
    const regions = new RegionCache({ topology: { readRegions } });
    const pipeline = createEmptyPipeline();
    // Losers are aborted at once here, so each test ends with its race; draining has its own tests (loserDrain.test.ts).
    pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold, thresholdStep, drainLosers: false, ...options }));
    return (request = pointRead(eastUs, harness.leaks.controller().signal)) => observe(pipeline.sendRequest(harness.transport, request));
  }

  function diagnosticsOf(value: unknown): HedgeDiagnostics {
    const diagnostics = getHedgeDiagnostics(value);
    assert.ok(diagnostics !== undefined, "diagnostics are attached");
    return diagnostics;
  }

  async function responseOf(pending: ReturnType<typeof observe<PipelineResponse>>): Promise<PipelineResponse> {
    const state = pending.state();
    assert.ok(state.done, "the request has settled");
    assert.ok("value" in state, `the request resolved (it rejected with ${"error" in state ? String(state.error) : ""})`);
    return state.value;
  }

  function errorOf(pending: ReturnType<typeof observe<PipelineResponse>>): unknown {
    const state = pending.state();
    assert.ok(state.done, "the request has settled");
    assert.ok("error" in state, "the request rejected");
    return state.error;
  }

  describe("a final result from the primary before the threshold ends the race without a hedge", () => {
    const finals: ReadonlyArray<readonly [number, number]> = [
      [200, 0],
      [201, 0],
      [204, 0],
      [304, 0],
      [400, 0],
      [401, 0],
      [405, 0],
      [409, 0],
      [412, 0],
      [413, 0],
      [404, 0],
    ];
    for (const [status, subStatus] of finals) {
      it(`${status}/${subStatus}`, async () => {
        harness.transport.script(eastUs.endpoint, { status, subStatus, delayMs: 30 });
        const pending = hedged()();
        await harness.clock.tickAsync(30);
        const response = await responseOf(pending);
        assert.equal(response.status, status);
        await harness.clock.tickAsync(1000);
        assert.equal(harness.transport.received.length, 1);
        const diagnostics = diagnosticsOf(response);
        assert.equal(diagnostics.terminalState, "primaryWon");
        assert.equal(diagnostics.hedgeFired, false);
        assert.deepEqual(
          diagnostics.arms.map((arm) => [arm.region, arm.reason, arm.outcome]),
          [["East US", "primary", "returned"]],
        );
      });
    }
  });

  // The SDK's retry policy takes a transient answer from there (a 429 in the same region after its back-off, a 503 in
  // the next region), as it would unhedged: a hedge sent now would race that retry, or hold it back.
  describe("a transient result from the primary before the threshold goes back at once, unhedged", () => {
    const transients: ReadonlyArray<readonly [string, ScriptStep]> = [
      ["403/0", { status: 403 }],
      ["403/3 (write forbidden)", { status: 403, subStatus: 3 }],
      ["403/1008 (account not found)", { status: 403, subStatus: 1008 }],
      ["404/1002 (read session not available)", { status: 404, subStatus: 1002 }],
      ["408", { status: 408 }],
      ["410/0", { status: 410 }],
      ["410/1022 (lease not found)", { status: 410, subStatus: 1022 }],
      ["429/3200", { status: 429, subStatus: 3200 }],
      ["449", { status: 449 }],
      ["500", { status: 500 }],
      ["503", { status: 503 }],
      ["a harness.transport error", { error: transportError("ECONNRESET") }],
    ];
    for (const [label, step] of transients) {
      it(label, async () => {
        harness.transport.script(eastUs.endpoint, { ...step, delayMs: 30 });
        harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
        const pending = hedged()();
        await harness.clock.tickAsync(29);
        assert.equal(pending.state().done, false);
        await harness.clock.tickAsync(1);
        const state = pending.state();
        assert.ok(state.done, "the primary's answer went back as it came");
        if ("error" in step) assert.equal(errorOf(pending), step.error);
        else assert.equal((await responseOf(pending)).status, step.status);
        const diagnostics = diagnosticsOf("value" in state ? state.value : errorOf(pending));
        assert.equal(diagnostics.terminalState, "primaryOutcome");
        assert.equal(diagnostics.hedgeFired, false);
        assert.deepEqual(
          diagnostics.arms.map((arm) => [arm.region, arm.reason, arm.outcome]),
          [["East US", "primary", "returned"]],
        );
        await harness.clock.tickAsync(1000);
        assert.equal(harness.transport.received.length, 1, "no hedge went out");
      });
    }
  });

  describe("timing of the arms", () => {
    it("launches hedges at exactly threshold, threshold + step, threshold + 2 steps", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 400 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(ukSouth.endpoint, { status: 200, delayMs: slow });
      const pending = hedged([eastUs, westUs, northEurope, ukSouth])();
      await harness.clock.tickAsync(threshold - 1);
      assert.equal(harness.transport.received.length, 1);
      await harness.clock.tickAsync(1);
      assert.equal(harness.transport.received.length, 2);
      await harness.clock.tickAsync(thresholdStep - 1);
      assert.equal(harness.transport.received.length, 2);
      await harness.clock.tickAsync(1);
      assert.equal(harness.transport.received.length, 3);
      await harness.clock.tickAsync(thresholdStep - 1);
      assert.equal(harness.transport.received.length, 3);
      await harness.clock.tickAsync(1);
      assert.equal(harness.transport.received.length, 4);
      assert.deepEqual(
        harness.transport.received.map((record) => [new URL(record.url).hostname, record.receivedAt]),
        [
          ["acct-eastus.documents.azure.com", 0],
          ["acct-westus.documents.azure.com", 100],
          ["acct-northeurope.documents.azure.com", 150],
          ["acct-uksouth.documents.azure.com", 200],
        ],
      );
      await harness.clock.tickAsync(200);
      const response = await responseOf(pending);
      assert.deepEqual(
        diagnosticsOf(response).arms.map((arm) => [arm.reason, arm.startOffsetMs, arm.outcome]),
        [
          ["primary", 0, "returned"],
          ["threshold", 100, "aborted"],
          ["threshold", 150, "aborted"],
          ["threshold", 200, "aborted"],
        ],
      );
    });

    it("skips ahead on a transient hedge result and times later arms from that launch", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(westUs.endpoint, { status: 503, delayMs: 20 });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(ukSouth.endpoint, { status: 200, delayMs: 30 });
      const pending = hedged([eastUs, westUs, northEurope, ukSouth])();
      await harness.clock.tickAsync(119);
      assert.equal(harness.transport.received.length, 2);
      await harness.clock.tickAsync(1);
      assert.equal(harness.transport.received.length, 3, "North Europe launched as soon as West US answered 503");
      await harness.clock.tickAsync(thresholdStep - 1);
      assert.equal(harness.transport.received.length, 3);
      await harness.clock.tickAsync(1);
      assert.equal(harness.transport.received.length, 4, "UK South launched one step after North Europe, at 170");
      await harness.clock.tickAsync(30);
      const response = await responseOf(pending);
      const diagnostics = diagnosticsOf(response);
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.region, arm.reason, arm.startOffsetMs, arm.outcome]),
        [
          ["East US", "primary", 0, "aborted"],
          ["West US", "threshold", 100, "lost"],
          ["North Europe", "transientResult", 120, "aborted"],
          ["UK South", "threshold", 170, "returned"],
        ],
      );
      assert.equal(diagnostics.winningRegion, "UK South");
    });

    it("a transient answer of the primary after the threshold ends the race at once: the hedge in flight loses, nothing more goes", async () => {
      harness.transport.script(eastUs.endpoint, { status: 429, subStatus: 3200, delayMs: 130 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 5 });
      const pending = hedged()();
      await harness.clock.tickAsync(130);
      const response = await responseOf(pending);
      assert.equal(response.status, 429);
      assert.equal(harness.transport.received[1]?.signalAborted, true, "the hedge in flight is a loser");
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.region, arm.reason, arm.startOffsetMs, arm.outcome]),
        [
          ["East US", "primary", 0, "returned"],
          ["West US", "threshold", 100, "aborted"],
        ],
      );
      await harness.clock.tickAsync(1000);
      assert.equal(harness.transport.received.length, 2, "North Europe's turn (150 ms) never came");
    });
  });

  describe("the first final result wins", () => {
    it("from a hedge: the primary is aborted and the hedge's response is returned for the caller's request", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 50, body: "from West US" });
      const request = pointRead(eastUs, harness.leaks.controller().signal);
      const pending = hedged()(request);
      await harness.clock.tickAsync(150);
      const response = await responseOf(pending);
      assert.equal(response.bodyAsText, "from West US");
      assert.equal(response.request, request, "upper policies see the request they sent");
      const [primary, hedge] = harness.transport.received;
      assert.equal(primary?.signalAborted, true, "the loser's signal was aborted");
      assert.equal(primary?.outcome, "aborted");
      assert.equal(hedge?.signalAborted, false);
      assert.equal(hedge?.request.abortSignal?.aborted, false, "the winner's signal stays untouched");
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.hedgeWon, true);
      assert.equal(diagnostics.terminalState, "hedgeWon");
      assert.equal(diagnostics.winningRegion, "West US");
      await harness.clock.tickAsync(1000);
      assert.equal(harness.transport.received.length, 2, "no arm launched after the race was decided");
    });

    it("from the primary after a hedge fired: the hedge is aborted", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 130, body: "from East US" });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      const pending = hedged()();
      await harness.clock.tickAsync(130);
      const response = await responseOf(pending);
      assert.equal(response.bodyAsText, "from East US");
      assert.equal(harness.transport.received[1]?.signalAborted, true);
      assert.equal(harness.transport.received[0]?.signalAborted, false);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "primaryWon");
      assert.equal(diagnostics.hedgeFired, true);
      assert.equal(diagnostics.hedgeWon, false);
      assert.deepEqual(
        diagnostics.arms.map((arm) => arm.outcome),
        ["returned", "aborted"],
      );
    });

    it("a hedge's final error that comes first does not beat a primary still in flight: the primary's later success wins", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 200 });
      harness.transport.script(westUs.endpoint, { status: 404, delayMs: 20 });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 500 });
      const pending = hedged()();
      await harness.clock.tickAsync(120);
      assert.equal(pending.state().done, false, "a lagging region's 404 waits for the primary");
      await harness.clock.tickAsync(80);
      const response = await responseOf(pending);
      assert.equal(response.status, 200);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "primaryWon");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.region, arm.outcome, arm.status]),
        [
          ["East US", "returned", 200],
          ["West US", "lost", 404],
          ["North Europe", "aborted", undefined],
        ],
      );
    });

    // Through plain @azure/cosmos the SDK retries the 503 (or a 429, a reset) and reads the document; a lagging region's 404
    // or a 401 of a region it did not choose is no answer to give it instead.
    it("a hedge's final error never wins: the primary's transient answer goes back when it comes", async () => {
      harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 200 });
      harness.transport.script(westUs.endpoint, { status: 404, delayMs: 20 });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 500 });
      const pending = hedged()();
      await harness.clock.tickAsync(199);
      assert.equal(pending.state().done, false, "the 404 at 120 ms waits for the primary");
      await harness.clock.tickAsync(1);
      const response = await responseOf(pending);
      assert.equal(response.status, 503);
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.equal(diagnostics.winningRegion, "East US");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.region, arm.status, arm.outcome]),
        [
          ["East US", 503, "returned"],
          ["West US", 404, "lost"],
          ["North Europe", undefined, "aborted"],
        ],
      );
    });

    it("the primary's own final error wins over a held hedge error", async () => {
      harness.transport.script(eastUs.endpoint, { status: 404, delayMs: 200, body: "primary" });
      harness.transport.script(westUs.endpoint, { status: 401, delayMs: 20, body: "hedge" });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 500 });
      const pending = hedged()();
      await harness.clock.tickAsync(200);
      const response = await responseOf(pending);
      assert.equal(response.bodyAsText, "primary");
      assert.equal(diagnosticsOf(response).terminalState, "primaryWon");
    });
  });

  describe("when no arm produces a final result, the primary's outcome is returned", () => {
    it("returns the primary's transient response though a hedge answered transient before it, and asks no region more (issue 22)", async () => {
      harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 130, body: "primary" });
      harness.transport.script(westUs.endpoint, { status: 429, subStatus: 3200, delayMs: 10 });
      harness.transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
      const pending = hedged()();
      await harness.clock.tickAsync(130);
      const response = await responseOf(pending);
      assert.equal(response.status, 503);
      assert.equal(response.bodyAsText, "primary");
      await harness.clock.tickAsync(1000);
      assert.equal(harness.transport.received.length, 3, "the race ended with the primary's answer: the rest is left to the SDK's own retry");
      const diagnostics = diagnosticsOf(response);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.equal(diagnostics.hedgeWon, false);
      assert.equal(diagnostics.winningRegion, "East US");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.region, arm.reason, arm.startOffsetMs, arm.status, arm.outcome]),
        [
          ["East US", "primary", 0, 503, "returned"],
          ["West US", "threshold", 100, 429, "lost"],
          ["North Europe", "transientResult", 110, undefined, "aborted"],
        ],
      );
    });

    it("rethrows the primary's error even when a hedge's error came first", async () => {
      const primaryError = transportError("ECONNRESET");
      const lastError = transportError("ETIMEDOUT");
      harness.transport.script(eastUs.endpoint, { error: primaryError, delayMs: 130 });
      harness.transport.script(westUs.endpoint, { error: lastError, delayMs: 15 });
      const pending = hedged([eastUs, westUs])();
      await harness.clock.tickAsync(130);
      const error = errorOf(pending);
      assert.equal(error, primaryError);
      const diagnostics = diagnosticsOf(error);
      assert.equal(diagnostics.terminalState, "primaryOutcome");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.error?.code, arm.status, arm.outcome]),
        [
          ["ECONNRESET", undefined, "returned"],
          ["ETIMEDOUT", undefined, "lost"],
        ],
      );
    });

    it("waits for a slow primary when every hedge has failed", async () => {
      harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 300 });
      harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
      harness.transport.script(northEurope.endpoint, { status: 500, delayMs: 20 });
      const pending = hedged()();
      await harness.clock.tickAsync(299);
      assert.equal(pending.state().done, false);
      assert.equal(harness.transport.received.length, 3);
      await harness.clock.tickAsync(1);
      const response = await responseOf(pending);
      assert.equal(response.status, 503);
      assert.equal(diagnosticsOf(response).winningRegion, "East US");
    });
  });

  describe("the caller's abort", () => {
    it("before the send: the request goes down as it is, the transport refuses it, and the caller gets the transport's own AbortError", async () => {
      const controller = harness.leaks.controller();
      controller.abort();
      const pending = hedged()(pointRead(eastUs, controller.signal));
      await harness.clock.tickAsync(1000);
      const error = errorOf(pending);
      assert.equal((error as Error).name, "AbortError");
      assert.equal((error as Error).message, "The operation was aborted. Request has already been canceled.");
      assert.deepEqual(
        harness.transport.received.map((each) => [each.origin, each.signalAborted, each.outcome]),
        [[new URL(eastUs.endpoint).origin, true, "aborted"]],
        "only the primary, refused by the transport",
      );
      assert.equal(diagnosticsOf(error).terminalState, "aborted");
    });

    it("before the threshold: the primary is aborted and no hedge launches", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      const controller = harness.leaks.controller();
      const pending = hedged()(pointRead(eastUs, controller.signal));
      await harness.clock.tickAsync(50);
      assert.equal(harness.leaks.listenerCount(controller.signal), 1, "the race listens to the caller's signal while it runs");
      controller.abort();
      await harness.clock.tickAsync(1000);
      const error = errorOf(pending);
      assert.equal((error as Error).name, "AbortError");
      assert.equal(harness.transport.received.length, 1);
      assert.equal(harness.transport.received[0]?.signalAborted, true);
      const diagnostics = diagnosticsOf(error);
      assert.equal(diagnostics.terminalState, "aborted");
      assert.deepEqual(
        diagnostics.arms.map((arm) => [arm.outcome, arm.durationMs]),
        [["aborted", 50]],
      );
    });

    it("after the threshold: every arm is aborted, no new arm launches, AbortError", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
      const controller = harness.leaks.controller();
      const pending = hedged()(pointRead(eastUs, controller.signal));
      await harness.clock.tickAsync(120);
      assert.equal(harness.transport.received.length, 2);
      controller.abort();
      await harness.clock.tickAsync(1000);
      const error = errorOf(pending);
      assert.ok(error instanceof Error);
      assert.equal(error.name, "AbortError");
      assert.equal(harness.transport.received.length, 2);
      assert.deepEqual(
        harness.transport.received.map((record) => [record.signalAborted, record.outcome]),
        [
          [true, "aborted"],
          [true, "aborted"],
        ],
      );
      const diagnostics = diagnosticsOf(error);
      assert.equal(diagnostics.hedgeFired, true);
      assert.deepEqual(
        diagnostics.arms.map((arm) => arm.outcome),
        ["aborted", "aborted"],
      );
    });

    it("after the race was decided: does nothing and leaves no listener behind", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 10 });
      const controller = harness.leaks.controller();
      const pending = hedged()(pointRead(eastUs, controller.signal));
      await harness.clock.tickAsync(10);
      assert.equal(harness.leaks.listenerCount(controller.signal), 0);
      controller.abort();
      assert.equal((await responseOf(pending)).status, 200);
      assert.equal(harness.transport.received[0]?.signalAborted, false);
    });
  });
});

describe("race engine, directly (strategy hooks the policies rely on)", () => {
  let clock: SinonFakeTimers;
  let leaks: LeakCheck;
  let transport: FakeTransport;

  beforeEach(() => {
    clock = useFakeClock();
    leaks = new LeakCheck(clock);
    transport = new FakeTransport();
  });

  checkEachTest(() => leaks.verify());

  afterEach(() => {
    leaks.dispose();
    clock.restore();
  });

  function strategy(overrides: Partial<RaceStrategy> = {}): RaceStrategy {
    return {
      delayBefore: (index) => (index === 1 ? threshold : thresholdStep),
      judge: (arm): Verdict => (arm.result.response !== undefined && arm.result.response.status < 400 ? "win" : "next"),
      earlyLaunchReason: "transientResult",
      ...overrides,
    };
  }

  function race(input: { strategy: RaceStrategy; prepare?: (request: PipelineRequest) => void | Promise<void> }): Promise<RaceOutcome> {
    return runRace({
      request: pointRead(eastUs, leaks.controller().signal),
      primaryRegion: eastUs,
      hedges: () => [westUs, northEurope],
      send: transport.next,
      ...input,
    });
  }

  it("a `wait` verdict launches nothing early while another arm is in flight; the next arm waits for its timer", async () => {
    transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
    transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
    transport.script(northEurope.endpoint, { status: 200, delayMs: 10 });
    const outcome = observe(race({ strategy: strategy({ judge: (arm) => (arm.index === 1 ? "wait" : "win") }) }));
    await clock.tickAsync(149);
    assert.equal(transport.received.length, 2);
    await clock.tickAsync(1);
    assert.equal(transport.received.length, 3);
    assert.equal(transport.received[2]?.receivedAt, 150);
    await clock.tickAsync(10);
    const state = outcome.state();
    assert.ok(state.done && "value" in state && state.value.kind === "decided");
    assert.equal(state.value.returnedIndex, 2);
    assert.equal(state.value.fallback, false);
  });

  it("the primary's answer decides whatever its verdict, as a fallback when it does not win: what is left does not launch (issue 22)", async () => {
    transport.script(eastUs.endpoint, { status: 503, delayMs: 10 });
    transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
    const outcome = observe(race({ strategy: strategy({ judge: (arm) => (arm.index === 0 ? "next" : "wait") }) }));
    await clock.tickAsync(30);
    const state = outcome.state();
    assert.ok(state.done && "value" in state && state.value.kind === "decided");
    assert.equal(state.value.returnedIndex, 0);
    assert.equal(state.value.fallback, true);
    await clock.tickAsync(1000);
    assert.deepEqual(transport.received.map((record) => record.receivedAt), [0], "the primary's `next` brought no hedge forward");
    assert.deepEqual(describedArms(state.value).map((arm) => arm.reason), ["primary"]);
  });

  it("a hedge's `next` brings the next hedge forward; the primary's answer, when it comes, decides (issue 22)", async () => {
    transport.script(eastUs.endpoint, { status: 503, delayMs: 200 });
    transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
    transport.script(northEurope.endpoint, { status: 503, delayMs: 10 });
    const outcome = observe(race({ strategy: strategy() }));
    await clock.tickAsync(199);
    assert.deepEqual(transport.received.map((record) => record.receivedAt), [0, 100, 110]);
    assert.equal(outcome.state().done, false, "with every hedge failed, the race waits for the primary");
    await clock.tickAsync(1);
    const state = outcome.state();
    assert.ok(state.done && "value" in state && state.value.kind === "decided");
    assert.equal(state.value.returnedIndex, 0);
    assert.equal(state.value.fallback, true);
    assert.deepEqual(describedArms(state.value).map((arm) => arm.reason), ["primary", "threshold", "transientResult"]);
  });

  it("a hedge whose preparation throws settles with that error, which launches the next arm; the primary is never prepared", async () => {
    const failure = new Error("signing failed");
    transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
    transport.script(northEurope.endpoint, { status: 200, delayMs: 10 });
    const prepared: string[] = [];
    const outcome = observe(
      race({
        strategy: strategy(),
        prepare: (request) => {
          prepared.push(new URL(request.url).hostname);
          if (prepared.length === 1) throw failure;
        },
      }),
    );
    await clock.tickAsync(threshold + 10);
    assert.deepEqual(prepared, ["acct-westus.documents.azure.com", "acct-northeurope.documents.azure.com"]);
    assert.equal(transport.received.length, 2, "the arm whose preparation failed was never sent");
    const state = outcome.state();
    assert.ok(state.done && "value" in state && state.value.kind === "decided");
    assert.deepEqual(
      describedArms(state.value).map((arm) => [arm.reason, arm.error?.message, arm.outcome]),
      [
        ["primary", undefined, "aborted"],
        ["threshold", "signing failed", "lost"],
        ["transientResult", undefined, "returned"],
      ],
    );
  });

  it("a hedge the strategy does not admit stops all further hedges; admitted hedges are released exactly once", async () => {
    transport.script(eastUs.endpoint, { status: 503, delayMs: 300 });
    transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
    const admit = sinon.spy((index: number) => index < 2);
    const release = sinon.spy();
    const outcome = observe(race({ strategy: strategy({ admit, release }) }));
    await clock.tickAsync(300);
    assert.deepEqual(admit.args, [[1], [2]]);
    assert.deepEqual(release.args, [[1]]);
    assert.equal(transport.received.length, 2);
    const state = outcome.state();
    assert.ok(state.done && "value" in state && state.value.kind === "decided");
    assert.equal(state.value.hedgeRefused, true);
    assert.equal(state.value.fallback, true);
    assert.equal(state.value.returnedIndex, 0);
  });

  it("hedges aborted when the race is decided are released too", async () => {
    transport.script(eastUs.endpoint, { status: 200, delayMs: 170 });
    transport.script(westUs.endpoint, { status: 200, delayMs: slow });
    transport.script(northEurope.endpoint, { status: 200, delayMs: slow });
    const release = sinon.spy();
    const outcome = observe(race({ strategy: strategy({ admit: () => true, release }) }));
    await clock.tickAsync(170);
    assert.deepEqual(
      release.args.map(([index]: unknown[]) => index).sort(),
      [1, 2],
    );
    const state = outcome.state();
    assert.ok(state.done && "value" in state && state.value.kind === "decided");
    assert.equal(state.value.returnedIndex, 0);
  });
});

describe("LeakCheck catches what it is meant to catch", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  it("a pending fake timer", async () => {
    const leaks = new LeakCheck(clock);
    const timer = setTimeout(() => undefined, 10);
    await assert.rejects(leaks.verify(), /fake timers still pending/);
    clearTimeout(timer);
  });

  it("an abort listener left on a caller's signal, but not one removed or fired once", async () => {
    const leaks = new LeakCheck(clock);
    const kept = leaks.controller("kept");
    const removed = leaks.controller("removed");
    const once = leaks.controller("once");
    kept.signal.addEventListener("abort", () => undefined);
    const listener = (): void => undefined;
    removed.signal.addEventListener("abort", listener);
    removed.signal.removeEventListener("abort", listener);
    once.signal.addEventListener("abort", () => undefined, { once: true });
    once.abort();
    await assert.rejects(leaks.verify(), /abort listeners left on kept/);
  });

  it("an unhandled rejection", async () => {
    const leaks = new LeakCheck(clock);
    void Promise.reject(new Error("nobody listens"));
    await assert.rejects(leaks.verify(), /unhandled promise rejections/);
  });
});
