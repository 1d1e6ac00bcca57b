import assert from "node:assert/strict";
import { AbortError } from "@azure/abort-controller";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { AzureLogger } from "@azure/logger";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics, HedgeSkipReason } from "../../../src/diagnostics/diagnostics.js";
import { diagnosticsHeader } from "../../../src/diagnostics/diagnosticsHeader.js";
import type { DiagnosticsHeader, RaceLearner } from "../../../src/diagnostics/diagnosticsHeader.js";
import { sendHedged, sendSkipped } from "../../../src/race/hedgedSend.js";
import type { DiagnosticsSink, HedgePlan } from "../../../src/race/hedgedSend.js";
import type { RaceOutcome } from "../../../src/race/race.js";
import { DocumentRaceStrategy } from "../../../src/race/raceStrategies.js";
import { LoserDrain, loserDrainDefaults } from "../../../src/race/loserDrain.js";
import { whenFinal } from "../../../src/diagnostics/final.js";
import { eastUs, northEurope, observe, pointRead, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";
import { useRecordingInstrumenter } from "../../support/recordingInstrumenter.js";

/** A logger that keeps its warnings. */
function recordingLogger(): AzureLogger & { readonly warnings: string[]; readonly verboseLines: string[] } {
  const warnings: string[] = [];
  const verboseLines: string[] = [];
  const logger = { warnings, verboseLines, warning: (message: string) => warnings.push(message), verbose: (message: string) => verboseLines.push(message), info: () => undefined, error: () => undefined };
  return logger as unknown as AzureLogger & { readonly warnings: string[]; readonly verboseLines: string[] };
}

/** A learner that records each call, in order. */
function recordingLearner(): RaceLearner & { readonly calls: string[]; readonly outcomes: RaceOutcome[] } {
  const calls: string[] = [];
  const outcomes: RaceOutcome[] = [];
  return {
    calls,
    outcomes,
    noteResponse: (region, response) => calls.push(`noteResponse ${region} ${response.status}`),
    learnSkipped: (region) => calls.push(`learnSkipped ${region}`),
    learn: (_header, outcome) => {
      calls.push(`learn ${outcome.kind}`);
      outcomes.push(outcome);
    },
    learnDrained: () => calls.push("learnDrained"),
  };
}

function header(region: RegionEndpoint = eastUs): DiagnosticsHeader {
  return diagnosticsHeader("crossRegion", "pointRead", region, {});
}

describe("hedgedSend", () => {
  const harness = useRaceHarness();

  function read(): PipelineRequest {
    return pointRead(eastUs, harness.leaks.controller().signal);
  }

  describe("sendSkipped", () => {
    async function skipped(
      reason: HedgeSkipReason,
      sink: DiagnosticsSink,
      request: PipelineRequest = read(),
      recordHeader: DiagnosticsHeader = header(),
    ): Promise<{ response?: PipelineResponse; error?: unknown }> {
      const pending = observe(sendSkipped(request, harness.transport.next, { reason, header: recordHeader }, sink));
      await harness.clock.tickAsync(10);
      const state = pending.state();
      assert.ok(state.done);
      return "value" in state ? { response: state.value } : { error: state.error };
    }

    it("sends the request once, as it is, and makes its header the record of a request that was not hedged", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, requestCharge: 2.5, delayMs: 5 });
      const request = read();
      const recordHeader = header();
      const { response } = await skipped("disabled", { logger: recordingLogger() }, request, recordHeader);
      assert.equal(harness.transport.received.length, 1);
      assert.equal(harness.transport.received[0]?.request, request);
      const diagnostics = getHedgeDiagnostics(response);
      assert.equal(diagnostics, recordHeader, "the header itself, completed");
      assert.deepEqual({ ...diagnostics }, {
        policy: "crossRegion",
        operation: "pointRead",
        primaryRegion: "East US",
        arms: [],
        hedgeFired: false,
        hedgeWon: false,
        winningRegion: "East US",
        terminalState: "skipped",
        skipReason: "disabled",
        totalRequestCharge: 2.5,
        final: true,
      });
    });

    it("names no winning region when the request's region is unknown, and counts no charge the response does not report", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200 });
      const { response } = await skipped("unknownRegion", { logger: recordingLogger() }, read(), diagnosticsHeader("crossRegion", "pointRead", undefined, {}));
      const diagnostics = getHedgeDiagnostics(response);
      assert.equal(diagnostics?.winningRegion, undefined);
      assert.equal(diagnostics?.totalRequestCharge, 0);
    });

    it("tells the learner of the response, then that the request ended unhedged; a later feed page only of the end", async () => {
      const learner = recordingLearner();
      harness.transport.script(eastUs.endpoint, { status: 404 });
      await skipped("disabled", { logger: recordingLogger(), learner });
      assert.deepEqual(learner.calls, ["noteResponse East US 404", "learnSkipped East US"]);
      learner.calls.length = 0;
      harness.transport.script(eastUs.endpoint, { status: 200 });
      await skipped("continuationPage", { logger: recordingLogger(), learner });
      assert.deepEqual(learner.calls, ["learnSkipped East US"]);
    });

    it("rethrows a transport error with the record on it, charged nothing, and the learner told the request ended", async () => {
      const learner = recordingLearner();
      const failure = new Error("connect ECONNREFUSED");
      harness.transport.script(eastUs.endpoint, { error: failure });
      const { error } = await skipped("disabled", { logger: recordingLogger(), learner });
      assert.equal(error, failure);
      assert.equal(getHedgeDiagnostics(error)?.terminalState, "skipped");
      assert.equal(getHedgeDiagnostics(error)?.totalRequestCharge, 0);
      assert.deepEqual(learner.calls, ["learnSkipped East US"]);
    });

    it("hands the record to onDiagnostics; one that throws or rejects is logged and ignored, the request succeeding", async () => {
      const logger = recordingLogger();
      const seen: HedgeDiagnostics[] = [];
      harness.transport.script(eastUs.endpoint, { status: 200 }, { status: 200 }, { status: 200 });
      const { response } = await skipped("disabled", { logger, onDiagnostics: (record) => seen.push(record) });
      assert.equal(seen[0], getHedgeDiagnostics(response));
      const thrown = await skipped("disabled", {
        logger,
        onDiagnostics: () => {
          throw new TypeError("sink broken");
        },
      });
      assert.equal(thrown.response?.status, 200);
      const rejected = await skipped("disabled", { logger, onDiagnostics: (() => Promise.reject(new RangeError("sink down"))) as unknown as () => void });
      assert.equal(rejected.response?.status, 200);
      await harness.clock.tickAsync(0);
      assert.deepEqual(logger.warnings, ["onDiagnostics failed and was ignored: TypeError", "onDiagnostics failed and was ignored: RangeError"]);
    });

    it("takes only a promise-like result of onDiagnostics for a promise: any other value it returns is left alone", async () => {
      const logger = recordingLogger();
      for (const returned of [{}, null, 0, "then", { then: "not a function" }]) {
        harness.transport.script(eastUs.endpoint, { status: 200 });
        const { response } = await skipped("disabled", { logger, onDiagnostics: (() => returned) as () => void });
        assert.equal(response?.status, 200);
      }
      assert.deepEqual(logger.warnings, []);
    });

    it("names the type of a thrown non-Error, never its text", async () => {
      const logger = recordingLogger();
      harness.transport.script(eastUs.endpoint, { status: 200 });
      await skipped("disabled", {
        logger,
        onDiagnostics: () => {
          throw "key=secret";
        },
      });
      assert.deepEqual(logger.warnings, ["onDiagnostics failed and was ignored: string"]);
    });
  });

  describe("sendHedged", () => {
    /** A planner that plans `hedges` when the first is due, and leaves a list planned up front as it is. */
    function plannerOf(hedges: readonly RegionEndpoint[] | HedgeSkipReason): HedgePlan["planner"] {
      return { hedges: () => hedges, stillOpen: (_request, _operation, _addressed, _controls, planned) => planned };
    }

    function plan(overrides: Partial<HedgePlan> = {}): HedgePlan {
      return {
        primaryRegion: eastUs,
        planner: plannerOf([westUs, northEurope]),
        operation: "pointRead",
        controls: {},
        strategy: new DocumentRaceStrategy(100, 100, undefined),
        ...overrides,
      };
    }

    function hedged(request: PipelineRequest, hedgePlan: HedgePlan, sink: DiagnosticsSink = { logger: recordingLogger() }, recordHeader = header()) {
      return observe(sendHedged(request, harness.transport.next, recordHeader, hedgePlan, sink));
    }

    it("a primary that answers before the threshold: its response, answering the caller's request, recorded as won by the primary", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, requestCharge: 1, delayMs: 20 });
      const request = read();
      const recordHeader = header();
      const pending = hedged(request, plan(), undefined, recordHeader);
      await harness.clock.tickAsync(20);
      const response = await pending.result();
      assert.equal(response.request, request);
      const diagnostics = getHedgeDiagnostics(response);
      assert.equal(diagnostics, recordHeader);
      assert.equal(diagnostics?.terminalState, "primaryWon");
      assert.equal(diagnostics?.hedgeFired, false);
      assert.equal(diagnostics?.hedgeWon, false);
      assert.equal(diagnostics?.winningRegion, "East US");
      assert.equal(diagnostics?.totalRequestCharge, 1);
      assert.equal(diagnostics?.final, true);
      assert.equal(diagnostics?.skipReason, undefined);
      assert.equal(diagnostics?.arms.length, 1);
    });

    it("a hedge that wins: its response as the answer to the caller's request, the charges of every arm summed", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, requestCharge: 4, delayMs: 500 });
      harness.transport.script(northEurope.endpoint, { status: 503, requestCharge: 1, delayMs: 50 });
      harness.transport.script(westUs.endpoint, { status: 200, requestCharge: 2.5, activityId: "west-activity", delayMs: 50 });
      const request = read();
      const pending = hedged(request, plan({ planner: plannerOf([northEurope, westUs]) }));
      await harness.clock.tickAsync(200);
      const response = await pending.result();
      assert.equal(response.request, request, "the answer to the request the caller sent, not to its copy");
      const diagnostics = getHedgeDiagnostics(response);
      assert.equal(diagnostics?.terminalState, "hedgeWon");
      assert.equal(diagnostics?.hedgeFired, true);
      assert.equal(diagnostics?.hedgeWon, true);
      assert.equal(diagnostics?.winningRegion, "West US");
      assert.equal(diagnostics?.winningActivityId, "west-activity");
      // North Europe, the hedge sent at the threshold, answered 503 (1) at 150 ms and brought West US forward; West's answer (2.5)
      // came at 200 ms; East US, the primary still in flight, aborted, is charged nothing.
      assert.deepEqual(diagnostics?.arms.map((arm) => [arm.region, arm.reason, arm.outcome]), [
        ["East US", "primary", "aborted"],
        ["North Europe", "threshold", "lost"],
        ["West US", "transientResult", "returned"],
      ]);
      assert.equal(diagnostics?.totalRequestCharge, 3.5);
    });

    it("a response that takes no change is answered by a copy naming the caller's request", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 5 });
      const request = read();
      const frozen: HedgePlan = plan();
      const pending = observe(
        sendHedged(request, async (arm) => Object.freeze({ ...(await harness.transport.next(arm)) }), header(), frozen, { logger: recordingLogger() }),
      );
      await harness.clock.tickAsync(5);
      const response = await pending.result();
      assert.equal(response.request, request);
      assert.equal(response.status, 200);
    });

    it("a plan that finds no hedge when one is due: the request ran unhedged, and its record says why", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, requestCharge: 3, delayMs: 300 });
      const learner = recordingLearner();
      const pending = hedged(read(), plan({ planner: plannerOf("regionThrottled") }), { logger: recordingLogger(), learner });
      await harness.clock.tickAsync(300);
      const diagnostics = getHedgeDiagnostics(await pending.result());
      assert.equal(diagnostics?.terminalState, "skipped");
      assert.equal(diagnostics?.skipReason, "regionThrottled");
      assert.equal(diagnostics?.totalRequestCharge, 3);
      assert.deepEqual(diagnostics?.arms, []);
      assert.deepEqual(learner.calls, ["noteResponse East US 200", "learn decided"], "a race's outcome is learned as a race");
    });

    it("a plan that finds no hedge, and a primary that fails: its error rethrown with the record", async () => {
      const failure = new Error("socket hang up");
      harness.transport.script(eastUs.endpoint, { error: failure, delayMs: 300 });
      const pending = hedged(read(), plan({ planner: plannerOf("regionThrottled") }));
      await harness.clock.tickAsync(300);
      const state = pending.state();
      assert.ok(state.done && "error" in state);
      assert.equal(state.error, failure);
      assert.equal(getHedgeDiagnostics(failure)?.skipReason, "regionThrottled");
      assert.equal(getHedgeDiagnostics(failure)?.totalRequestCharge, 0);
    });

    it("a hedge the budget refused: the primary's answer, recorded as budgetExhausted", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 300 });
      const refusing = new DocumentRaceStrategy(100, 100, undefined);
      refusing.admit = () => false;
      const pending = hedged(read(), plan({ strategy: refusing }));
      await harness.clock.tickAsync(300);
      const diagnostics = getHedgeDiagnostics(await pending.result());
      assert.equal(diagnostics?.terminalState, "primaryWon");
      assert.equal(diagnostics?.skipReason, "budgetExhausted");
      assert.equal(diagnostics?.hedgeFired, false);
    });

    it("no arm wins: the primary's error rethrown, recorded as its outcome", async () => {
      const failure = new Error("connect ECONNRESET");
      harness.transport.script(eastUs.endpoint, { error: failure, delayMs: 150 });
      harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
      const pending = hedged(read(), plan({ planner: plannerOf([westUs]) }));
      await harness.clock.tickAsync(150);
      const state = pending.state();
      assert.ok(state.done && "error" in state);
      assert.equal(state.error, failure);
      const diagnostics = getHedgeDiagnostics(failure);
      assert.equal(diagnostics?.terminalState, "primaryOutcome");
      assert.equal(diagnostics?.hedgeWon, false);
      assert.equal(diagnostics?.winningRegion, "East US");
    });

    it("the caller's abort: an AbortError carrying the record of the aborted race", async () => {
      const controller = harness.leaks.controller();
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 1000 });
      const learner = recordingLearner();
      const pending = hedged(pointRead(eastUs, controller.signal), plan({ planner: plannerOf([westUs]) }), { logger: recordingLogger(), learner });
      await harness.clock.tickAsync(150);
      controller.abort();
      await harness.clock.tickAsync(0);
      const state = pending.state();
      assert.ok(state.done && "error" in state);
      assert.ok(state.error instanceof AbortError);
      assert.equal(state.error.message, "The operation was aborted. Rejecting from abort signal callback while making request.", "as core's transport words a request cut in flight");
      const diagnostics = getHedgeDiagnostics(state.error);
      assert.equal(diagnostics?.terminalState, "aborted");
      assert.equal(diagnostics?.final, true);
      assert.equal(diagnostics?.winningRegion, undefined);
      assert.deepEqual(learner.calls, ["learn aborted"]);
    });

    it("sends the hedges, never the primary, without the session token when the plan says so, and records it", async () => {
      for (const hedgesWithoutSessionToken of [true, false]) {
        harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 300 });
        harness.transport.script(westUs.endpoint, { status: 200, delayMs: 300 });
        const request = read();
        request.headers.set("x-ms-session-token", "0:1#42");
        const from = harness.transport.received.length;
        const pending = hedged(request, plan({ planner: plannerOf([westUs]), hedgesWithoutSessionToken }));
        await harness.clock.tickAsync(300);
        const diagnostics = getHedgeDiagnostics(await pending.result());
        const [primary, hedge] = harness.transport.received.slice(from);
        assert.equal(primary?.headers["x-ms-session-token"], "0:1#42");
        assert.equal(hedge?.headers["x-ms-session-token"], hedgesWithoutSessionToken ? undefined : "0:1#42");
        assert.equal(diagnostics?.arms[0]?.sessionTokenOmitted, undefined);
        assert.equal(diagnostics?.arms[1]?.sessionTokenOmitted, hedgesWithoutSessionToken ? true : undefined);
      }
    });

    it("a request without a session token has none to omit", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 300 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 300 });
      const pending = hedged(read(), plan({ planner: plannerOf([westUs]), hedgesWithoutSessionToken: true }));
      await harness.clock.tickAsync(300);
      const diagnostics = getHedgeDiagnostics(await pending.result());
      assert.equal(diagnostics?.arms[1]?.sessionTokenOmitted, undefined);
    });

    it("signs each hedge with the plan's signer, never the primary", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 300 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 300 });
      const request = read();
      const signed: PipelineRequest[] = [];
      const pending = hedged(request, plan({ planner: plannerOf([westUs]), signer: (arm) => void signed.push(arm) }));
      await harness.clock.tickAsync(300);
      await pending.result();
      assert.equal(signed.length, 1);
      assert.notEqual(signed[0], request);
      assert.equal(signed[0], harness.transport.received[1]?.request);
    });

    describe("a loser left to drain", () => {
      const drainPlan = (): HedgePlan => plan({ planner: plannerOf([westUs]), drain: new LoserDrain(loserDrainDefaults), eager: true });

      async function drained(sink: DiagnosticsSink): Promise<HedgeDiagnostics> {
        harness.transport.script(eastUs.endpoint, { status: 200, requestCharge: 4, delayMs: 500 });
        harness.transport.script(westUs.endpoint, { status: 200, requestCharge: 1, delayMs: 50 });
        const pending = hedged(read(), drainPlan(), sink);
        await harness.clock.tickAsync(150);
        const diagnostics = getHedgeDiagnostics(await pending.result());
        assert.ok(diagnostics !== undefined);
        return diagnostics;
      }

      it("the record is published before the drain ends, and completed when it does: the arm's charge joins the total", async () => {
        const learner = recordingLearner();
        const diagnostics = await drained({ logger: recordingLogger(), learner });
        assert.equal(diagnostics.final, false);
        assert.equal(diagnostics.arms[0]?.outcome, "drained");
        assert.equal(diagnostics.totalRequestCharge, 1);
        const completed = whenFinal(diagnostics);
        await harness.clock.tickAsync(350);
        assert.equal(await completed, diagnostics);
        assert.equal(diagnostics.final, true);
        assert.equal(diagnostics.arms[0]?.requestCharge, 4);
        assert.equal(diagnostics.totalRequestCharge, 5);
        assert.ok(learner.calls.includes("learnDrained"));
      });

      it("a learner that throws on the drained arm is logged and ignored; the record is still completed", async () => {
        const logger = recordingLogger();
        const learner = recordingLearner();
        learner.learnDrained = () => {
          throw new RangeError("learning broke");
        };
        const diagnostics = await drained({ logger, learner });
        await harness.clock.tickAsync(350);
        await whenFinal(diagnostics);
        assert.deepEqual(logger.warnings, ["Learning from a drained arm failed and was ignored: RangeError"]);
        assert.equal(diagnostics.totalRequestCharge, 5);
      });

      it("a record whose drained arm the caller removed is left as the caller made it, nothing logged", async () => {
        const logger = recordingLogger();
        const diagnostics = await drained({ logger });
        diagnostics.arms.length = 0;
        await harness.clock.tickAsync(350);
        await whenFinal(diagnostics);
        assert.equal(diagnostics.totalRequestCharge, 1);
        assert.deepEqual(logger.verboseLines.filter((line) => line.startsWith("A drained arm's record")), []);
      });

      it("a record the caller froze keeps its snapshot, and nothing throws", async () => {
        const logger = recordingLogger();
        const diagnostics = await drained({ logger });
        for (const arm of diagnostics.arms) Object.freeze(arm);
        Object.freeze(diagnostics);
        await harness.clock.tickAsync(350);
        assert.equal(diagnostics.totalRequestCharge, 1);
        assert.equal(diagnostics.arms[0]?.requestCharge, undefined);
        assert.deepEqual(logger.verboseLines.filter((line) => line.startsWith("A drained arm's record could not be completed")), [
          "A drained arm's record could not be completed (the caller froze or changed it): TypeError",
        ]);
      });
    });

    describe("traced", () => {
      let recording: ReturnType<typeof useRecordingInstrumenter>;

      beforeEach(() => {
        recording = useRecordingInstrumenter();
      });

      afterEach(() => {
        recording.restore();
      });

      it("starts no span for a request whose plan found no hedge to send", async () => {
        harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 300 });
        const pending = hedged(read(), plan({ planner: plannerOf("regionThrottled") }));
        await harness.clock.tickAsync(300);
        await pending.result();
        assert.deepEqual(
          recording.spans.map((span) => span.name),
          [],
        );
      });

      it("closes a drained primary's span with its own answer, not with another drained loser's", async () => {
        harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 500 });
        harness.transport.script(westUs.endpoint, { status: 404, delayMs: 300 });
        harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 50 });
        const pending = hedged(read(), plan({ drain: new LoserDrain(loserDrainDefaults), eager: true }));
        await harness.clock.tickAsync(250);
        const diagnostics = getHedgeDiagnostics(await pending.result());
        assert.deepEqual(diagnostics?.arms.map((arm) => arm.outcome), ["drained", "drained", "returned"]);
        const primarySpan = recording.spans.find((span) => span.name === "hedge pointRead arm" && span.attributes["cosmos.hedging.arm.index"] === 0);
        await harness.clock.tickAsync(150);
        assert.equal(primarySpan?.ended, false, "West US's drain ended at 400 ms; the primary still runs");
        await harness.clock.tickAsync(100);
        assert.ok(diagnostics !== undefined);
        await whenFinal(diagnostics);
        assert.equal(primarySpan?.ended, true);
        assert.equal(primarySpan?.attributes["cosmos.hedging.arm.status_code"], 200);
      });

      it("ends the race's span with the error when its strategy throws", async () => {
        harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 150 });
        harness.transport.script(westUs.endpoint, { status: 200, delayMs: 1000 });
        const broken = new TypeError("the strategy broke");
        const strategy = {
          delayBefore: () => 100,
          earlyLaunchReason: "transientResult" as const,
          judge: (): never => {
            throw broken;
          },
        };
        const pending = hedged(read(), plan({ planner: plannerOf([westUs]), strategy }));
        await harness.clock.tickAsync(150);
        const state = pending.state();
        assert.ok(state.done && "error" in state);
        assert.equal(state.error, broken);
        const race = recording.spans.find((span) => span.name === "hedge pointRead");
        assert.equal(race?.ended, true);
        assert.equal(race?.status?.status, "error");
      });
    });

    it("tells the learner of every arm's response and of the decided race, once", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 300 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 50 });
      const learner = recordingLearner();
      const pending = hedged(read(), plan({ planner: plannerOf([westUs]) }), { logger: recordingLogger(), learner });
      await harness.clock.tickAsync(300);
      await pending.result();
      assert.deepEqual(learner.calls, ["noteResponse West US 200", "learn decided"]);
      assert.equal(learner.outcomes[0]?.kind === "decided" && learner.outcomes[0].returnedIndex, 1);
    });
  });
});
