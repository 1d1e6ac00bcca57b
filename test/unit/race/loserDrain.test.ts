import assert from "node:assert/strict";
import type { Readable } from "node:stream";
import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { AccountTopologyInit } from "../../../src/topology/regionCache.js";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { LoserDrain, loserDrainDefaults } from "../../../src/race/loserDrain.js";
import type { LoserDrainOptions } from "../../../src/race/loserDrain.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import type { CrossRegionHedgingPolicyOptions } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { metadataHedgingPolicy } from "../../../src/policies/metadataHedgingPolicy.js";
import { eastUs, northEurope, observe, pointRead, requestTo, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";

const threshold = 100;
const twoRegions: AccountTopologyInit = { readRegions: [eastUs, westUs] };

type Pending = ReturnType<typeof observe<PipelineResponse>>;

describe("losers of a decided race (drainLosers)", () => {
  const harness = useRaceHarness();

  function hedging(options: CrossRegionHedgingPolicyOptions = {}, topology: AccountTopologyInit = twoRegions) {
    const policy = crossRegionHedgingPolicy({ regions: new RegionCache({ topology }), threshold, ...options });
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(policy);
    /** Every arm's response as the transport returned it, in arrival order. */
    const armResponses: PipelineResponse[] = [];
    pipeline.addPolicy({
      name: "armResponses",
      async sendRequest(request, next) {
        const response = await next(request);
        armResponses.push(response);
        return response;
      },
    });
    return {
      policy,
      armResponses,
      send: (request: PipelineRequest): Pending => observe(pipeline.sendRequest(harness.transport, request)),
    };
  }

  function diagnosticsOf(pending: Pending): HedgeDiagnostics {
    const state = pending.state();
    assert.ok(state.done && "value" in state, "the request resolved");
    const diagnostics = getHedgeDiagnostics(state.value);
    assert.ok(diagnostics !== undefined, "diagnostics are attached");
    return diagnostics;
  }

  /** East US answers `eastMs` after the start, West US (the hedge, at the threshold) 10 ms after it goes out. */
  function scriptRace(eastMs: number, east: { requestCharge?: number; body?: string; status?: number } = {}): void {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: eastMs, ...east });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10, requestCharge: 1, activityId: "west" });
  }

  it("leaves a loser to finish: the caller gets the winner at once, the loser's charge is counted when it arrives", async () => {
    const { policy, send } = hedging();
    scriptRace(400, { requestCharge: 5 });
    const pending = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 10);
    const diagnostics = diagnosticsOf(pending);
    assert.equal(diagnostics.winningActivityId, "west");
    assert.deepEqual(
      diagnostics.arms.map((arm) => [arm.region, arm.outcome, arm.durationMs, arm.drainEnd]),
      [
        ["East US", "drained", threshold + 10, undefined],
        ["West US", "returned", 10, undefined],
      ],
    );
    assert.equal(diagnostics.totalRequestCharge, 1, "at the decision only the winner's charge is known");
    assert.equal(harness.transport.receivedBy(eastUs.endpoint)[0]?.signalAborted, false, "the loser was not aborted");
    assert.deepEqual(policy.metrics().losers, { drained: 1, drainsCutShort: 0, aborted: 0, drainsInFlight: 1 });

    await harness.clock.tickAsync(400 - threshold - 10);
    assert.equal(harness.transport.receivedBy(eastUs.endpoint)[0]?.outcome, "response", "the loser got its response");
    assert.deepEqual(
      [diagnostics.arms[0]?.drainEnd, diagnostics.arms[0]?.status, diagnostics.arms[0]?.requestCharge, diagnostics.arms[0]?.durationMs],
      ["settled", 200, 5, 400],
    );
    assert.equal(diagnostics.totalRequestCharge, 6, "the record is completed in place");
    const metrics = policy.metrics();
    assert.equal(metrics.losingRequestCharge, 5);
    assert.equal(metrics.regions.find((region) => region.region === "East US")?.losingRequestCharge, 5);
    assert.deepEqual(metrics.losers, { drained: 1, drainsCutShort: 0, aborted: 0, drainsInFlight: 0 });
  });

  it("aborts a loser exactly maxDrainMs after the decision, and counts it as cut short", async () => {
    const { policy, send } = hedging({ drainLosers: { maxDrainMs: 300 } });
    scriptRace(10_000, { requestCharge: 5 });
    const pending = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 10);
    const diagnostics = diagnosticsOf(pending);
    await harness.clock.tickAsync(299);
    assert.equal(harness.transport.receivedBy(eastUs.endpoint)[0]?.signalAborted, false);
    await harness.clock.tickAsync(1);
    const east = harness.transport.receivedBy(eastUs.endpoint)[0];
    assert.equal(east?.outcome, "aborted");
    assert.equal(east?.settledAt, threshold + 10 + 300);
    assert.deepEqual(
      [diagnostics.arms[0]?.outcome, diagnostics.arms[0]?.drainEnd, diagnostics.arms[0]?.durationMs, diagnostics.arms[0]?.requestCharge],
      ["drained", "timeLimit", threshold + 10 + 300, undefined],
    );
    assert.equal(diagnostics.totalRequestCharge, 1);
    assert.deepEqual(policy.metrics().losers, { drained: 1, drainsCutShort: 1, aborted: 0, drainsInFlight: 0 });
  });

  it("the default time bound is 5 s", async () => {
    const { send } = hedging();
    scriptRace(60_000);
    const pending = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 10);
    const diagnostics = diagnosticsOf(pending);
    await harness.clock.tickAsync(loserDrainDefaults.maxDrainMs - 1);
    assert.equal(diagnostics.arms[0]?.drainEnd, undefined);
    await harness.clock.tickAsync(1);
    assert.equal(diagnostics.arms[0]?.drainEnd, "timeLimit");
    assert.equal(loserDrainDefaults.maxDrainMs, 5000);
  });

  // Found by a hostile review (helper-44): a primary sent with a signal of the race's (here: not over core's transport,
  // as over a fetch client of the user's) drained to maxDrainMs though its caller cuts it at requestTimeout.
  it("a drained primary with a signal of the race's is cut when the caller's requestTimeout, counted from its start, passes, if that comes before maxDrainMs", async () => {
    const { send } = hedging({ requestTimeout: 400 });
    scriptRace(60_000);
    const pending = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 10);
    const diagnostics = diagnosticsOf(pending);
    assert.deepEqual([diagnostics.arms[0]?.outcome, diagnostics.arms[0]?.drainEnd], ["drained", undefined]);
    await harness.clock.tickAsync(400 - threshold - 10 - 1);
    assert.equal(harness.transport.receivedBy(eastUs.endpoint)[0]?.signalAborted, false);
    await harness.clock.tickAsync(1);
    const east = harness.transport.receivedBy(eastUs.endpoint)[0];
    assert.deepEqual([east?.outcome, east?.settledAt], ["aborted", 400]);
    assert.deepEqual([diagnostics.arms[0]?.drainEnd, diagnostics.arms[0]?.durationMs], ["timeLimit", 400]);
  });

  it("aborts a loser whose body passes maxDrainBytes, and reads one within it to its end", async () => {
    const { policy, send, armResponses } = hedging({ drainLosers: { maxDrainBytes: 1000 } });
    scriptRace(300, { body: "x".repeat(2000), requestCharge: 5 });
    const over = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(300);
    await new Promise((resolve) => setImmediate(resolve));
    // The headers came before the body was cut: the loser's charge is known and counted.
    assert.deepEqual([diagnosticsOf(over).arms[0]?.drainEnd, diagnosticsOf(over).arms[0]?.requestCharge], ["byteLimit", 5]);
    const overBody = armResponses[1]?.readableStreamBody as Readable | undefined;
    assert.deepEqual([overBody?.destroyed, overBody?.readableEnded], [true, false], "the body was dropped unread");
    assert.equal((harness.transport.receivedBy(eastUs.endpoint)[0]?.request.abortSignal as AbortSignal).aborted, true, "and the request aborted");

    scriptRace(300, { body: "x".repeat(1000), requestCharge: 5 });
    const within = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(300);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual([diagnosticsOf(within).arms[0]?.drainEnd, diagnosticsOf(within).arms[0]?.requestCharge], ["settled", 5]);
    assert.equal((armResponses[3]?.readableStreamBody as Readable | undefined)?.readableEnded, true, "the body was read to its end");
    assert.equal((harness.transport.receivedBy(eastUs.endpoint)[1]?.request.abortSignal as AbortSignal).aborted, false);
    assert.deepEqual(policy.metrics().losers, { drained: 2, drainsCutShort: 1, aborted: 0, drainsInFlight: 0 });
  });

  it("drains at most maxConcurrentDrains losers at once; a loser that finds no slot is aborted, and a freed slot is reused", async () => {
    const { policy, send } = hedging({ drainLosers: { maxConcurrentDrains: 1 } });
    scriptRace(1000);
    scriptRace(1000);
    const first = send(pointRead(eastUs, harness.leaks.controller().signal));
    const second = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 10);
    assert.deepEqual(
      [first, second].map((pending) => diagnosticsOf(pending).arms[0]?.outcome),
      ["drained", "aborted"],
    );
    assert.deepEqual(
      harness.transport.receivedBy(eastUs.endpoint).map((record) => record.outcome),
      [undefined, "aborted"],
      "the second loser was aborted at the decision",
    );
    assert.deepEqual(policy.metrics().losers, { drained: 1, drainsCutShort: 0, aborted: 1, drainsInFlight: 1 });

    await harness.clock.tickAsync(1000);
    scriptRace(1200);
    const third = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 10);
    assert.equal(diagnosticsOf(third).arms[0]?.outcome, "drained", "the first drain's slot was given back");
    await harness.clock.tickAsync(1200);
    assert.deepEqual(policy.metrics().losers, { drained: 2, drainsCutShort: 0, aborted: 1, drainsInFlight: 0 });
  });

  it("the caller's abort aborts a drained loser at once, and no listener stays on the caller's signal", async () => {
    const { send } = hedging();
    scriptRace(10_000);
    const caller = harness.leaks.controller();
    const pending = send(pointRead(eastUs, caller.signal));
    await harness.clock.tickAsync(threshold + 10);
    const diagnostics = diagnosticsOf(pending);
    assert.equal(harness.leaks.listenerCount(caller.signal), 1, "the drain listens to the caller");
    await harness.clock.tickAsync(50);
    caller.abort();
    const east = harness.transport.receivedBy(eastUs.endpoint)[0];
    assert.equal(east?.outcome, "aborted");
    assert.equal(east?.settledAt, threshold + 10 + 50);
    await harness.clock.tickAsync(0);
    assert.equal(diagnostics.arms[0]?.drainEnd, "callerAborted");
    assert.equal(harness.leaks.listenerCount(caller.signal), 0);
  });

  it("removes its listener from the caller's signal when the last drain ends", async () => {
    const { send } = hedging({}, { readRegions: [eastUs, westUs, northEurope] });
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 500 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 300 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 10 });
    const caller = harness.leaks.controller();
    const pending = send(pointRead(eastUs, caller.signal));
    // North Europe goes out at threshold + the default step (100) and answers 10 ms later.
    await harness.clock.tickAsync(210);
    assert.deepEqual(
      diagnosticsOf(pending).arms.map((arm) => arm.outcome),
      ["drained", "drained", "returned"],
    );
    await harness.clock.tickAsync(190);
    assert.equal(harness.leaks.listenerCount(caller.signal), 1, "West US has ended, East US still drains");
    await harness.clock.tickAsync(100);
    assert.equal(harness.leaks.listenerCount(caller.signal), 0);
  });

  it("the caller's abort before the decision aborts every arm at once, draining or not", async () => {
    const { send } = hedging();
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 10_000 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10_000 });
    const caller = harness.leaks.controller();
    const pending = send(pointRead(eastUs, caller.signal));
    await harness.clock.tickAsync(threshold + 20);
    caller.abort();
    await harness.clock.tickAsync(0);
    assert.deepEqual(
      harness.transport.received.map((record) => [record.origin, record.outcome, record.settledAt]),
      [
        [new URL(eastUs.endpoint).origin, "aborted", threshold + 20],
        [new URL(westUs.endpoint).origin, "aborted", threshold + 20],
      ],
    );
    const state = pending.state();
    assert.ok(state.done && "error" in state);
    assert.equal((state.error as Error).name, "AbortError");
    assert.deepEqual(
      getHedgeDiagnostics(state.error)?.arms.map((arm) => arm.outcome),
      ["aborted", "aborted"],
    );
  });

  it("a drained loser that fails reaches nobody: no rejection, its error only in the record", async () => {
    const { policy, send } = hedging();
    harness.transport.script(eastUs.endpoint, { error: Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }), delayMs: 300 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
    const pending = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(300);
    const diagnostics = diagnosticsOf(pending);
    assert.deepEqual(
      [diagnostics.arms[0]?.outcome, diagnostics.arms[0]?.drainEnd, diagnostics.arms[0]?.error?.code],
      ["drained", "settled", "ECONNRESET"],
    );
    assert.equal(policy.metrics().losers.drainsInFlight, 0);
    // The harness fails the test on any unhandled rejection, timer or listener left behind.
  });

  it("drainLosers: false aborts every loser at the decision, as before", async () => {
    const { policy, send } = hedging({ drainLosers: false });
    scriptRace(10_000);
    const pending = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 10);
    const east = harness.transport.receivedBy(eastUs.endpoint)[0];
    assert.deepEqual([east?.outcome, east?.settledAt], ["aborted", threshold + 10]);
    assert.deepEqual(
      diagnosticsOf(pending).arms.map((arm) => arm.outcome),
      ["aborted", "returned"],
    );
    assert.deepEqual(policy.metrics().losers, { drained: 0, drainsCutShort: 0, aborted: 1, drainsInFlight: 0 });
  });

  it("aborts a hedge in flight when the primary's answer that does not win decides: the SDK retries, and its caller's abort would not reach a drain", async () => {
    const { policy, send } = hedging();
    harness.transport.script(eastUs.endpoint, { status: 429, subStatus: 3200, delayMs: threshold + 30 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10_000 });
    const pending = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 30);
    const west = harness.transport.receivedBy(westUs.endpoint)[0];
    assert.deepEqual([west?.outcome, west?.settledAt], ["aborted", threshold + 30]);
    const diagnostics = diagnosticsOf(pending);
    assert.equal(diagnostics.terminalState, "primaryOutcome");
    assert.deepEqual(diagnostics.arms.map((arm) => arm.outcome), ["returned", "aborted"]);
    assert.deepEqual(policy.metrics().losers, { drained: 0, drainsCutShort: 0, aborted: 1, drainsInFlight: 0 });
  });

  it("aborts the loser of a hedged write even with draining on: it may still be waiting for its connection", async () => {
    const multiWrite: AccountTopologyInit = { ...twoRegions, writeRegions: [eastUs, westUs], multipleWriteLocations: true };
    const { policy, send } = hedging({ enableMultiWriteRegionHedge: true }, multiWrite);
    harness.transport.script(eastUs.endpoint, { status: 201, delayMs: 10_000 });
    harness.transport.script(westUs.endpoint, { status: 201, delayMs: 10 });
    const write = requestTo(eastUs, "POST", "dbs/db/colls/c/docs", { body: '{"id":"1"}', abortSignal: harness.leaks.controller().signal });
    const pending = send(write);
    await harness.clock.tickAsync(threshold + 10);
    assert.equal(harness.transport.receivedBy(eastUs.endpoint)[0]?.outcome, "aborted");
    assert.deepEqual(
      diagnosticsOf(pending).arms.map((arm) => arm.outcome),
      ["aborted", "returned"],
    );
    assert.equal(policy.metrics().losers.aborted, 1);
  });

  it("never sends a loser that was still being prepared when the race was decided", async () => {
    let releaseSigning: (() => void) | undefined;
    const { send } = hedging({
      signer: (request) => {
        if (!request.url.includes("westus")) return undefined;
        return new Promise<void>((resolve) => {
          releaseSigning = resolve;
        });
      },
    });
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: threshold + 5 });
    const pending = send(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 5);
    assert.deepEqual(
      diagnosticsOf(pending).arms.map((arm) => arm.outcome),
      ["returned", "aborted"],
    );
    releaseSigning?.();
    await harness.clock.tickAsync(0);
    assert.equal(harness.transport.receivedBy(westUs.endpoint).length, 0, "the hedge was never sent");
  });

  it("streams a drained loser's body, whatever the caller asked, and reads it to its end", async () => {
    const { send, armResponses } = hedging();
    scriptRace(300, { body: "streamed body", requestCharge: 2 });
    const request = pointRead(eastUs, harness.leaks.controller().signal);
    const callerStreams = new Set([201]);
    request.streamResponseStatusCodes = callerStreams;
    const pending = send(request);
    await harness.clock.tickAsync(300);
    await new Promise((resolve) => setImmediate(resolve));
    const diagnostics = diagnosticsOf(pending);
    assert.deepEqual([diagnostics.arms[0]?.drainEnd, diagnostics.arms[0]?.requestCharge], ["settled", 2]);
    const [winner, loser] = armResponses;
    assert.equal(winner?.headers.get("x-ms-activity-id"), "west");
    assert.equal((loser?.readableStreamBody as Readable | undefined)?.readableEnded, true, "the loser's body was read to its end");
    assert.deepEqual([...callerStreams], [201], "the caller's own set is left alone");
  });

  /**
   * A streamed read whose hedge (sent at the threshold) loses with a 503 of
   * `loserBody` (10 ms later) to the primary's 200 (at the threshold + 50 ms),
   * run until the race and the lost body's handling are over.
   */
  async function streamedReadWithLostHedge(loserBody: string, options: CrossRegionHedgingPolicyOptions = {}) {
    const { send, armResponses } = hedging(options);
    harness.transport.script(eastUs.endpoint, { status: 200, body: "ok", delayMs: threshold + 50 });
    harness.transport.script(westUs.endpoint, { status: 503, body: loserBody, delayMs: 10 });
    const request = pointRead(eastUs, harness.leaks.controller().signal);
    request.streamResponseStatusCodes = new Set([Number.POSITIVE_INFINITY]);
    const pending = send(request);
    await harness.clock.tickAsync(threshold + 50);
    await new Promise((resolve) => setImmediate(resolve));
    return { pending, armResponses };
  }

  it("discards the streamed body of a lost arm that settled before the decision", async () => {
    const { pending, armResponses } = await streamedReadWithLostHedge("unavailable");
    const [lost, winner] = armResponses;
    assert.equal(lost?.status, 503);
    assert.deepEqual(
      getHedgeDiagnostics(winner)?.arms.map((arm) => arm.outcome),
      ["returned", "lost"],
    );
    assert.equal((lost?.readableStreamBody as Readable | undefined)?.readableEnded, true, "the lost arm's body was read and dropped");
    const state = pending.state();
    assert.ok(state.done && "value" in state);
    (state.value.readableStreamBody as Readable).resume();
  });

  it("destroys the streamed body of a lost arm past maxDrainBytes instead of reading it", async () => {
    const { pending, armResponses } = await streamedReadWithLostHedge("u".repeat(100), { drainLosers: { maxDrainBytes: 20 } });
    const lost = armResponses[0]?.readableStreamBody as Readable | undefined;
    assert.deepEqual([lost?.destroyed, lost?.readableEnded], [true, false]);
    const state = pending.state();
    assert.ok(state.done && "value" in state);
    (state.value.readableStreamBody as Readable).resume();
  });

  it("the metadata policy drains a hedge that loses to the authoritative primary", async () => {
    const regions = new RegionCache({ topology: { ...twoRegions, perPartitionFailover: true } });
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(metadataHedgingPolicy({ regions, threshold: 100 }));
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 150 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 400, requestCharge: 3 });
    const pending = observe(pipeline.sendRequest(harness.transport, requestTo(eastUs, "GET", "dbs/db/colls/c", { abortSignal: harness.leaks.controller().signal })));
    await harness.clock.tickAsync(150);
    const diagnostics = diagnosticsOf(pending);
    assert.deepEqual(
      diagnostics.arms.map((arm) => arm.outcome),
      ["returned", "drained"],
    );
    await harness.clock.tickAsync(350);
    assert.deepEqual([diagnostics.arms[1]?.drainEnd, diagnostics.totalRequestCharge], ["settled", 3]);
  });

  it("passes drainLosers through the hedging client, for both policies", async () => {
    const client = createHedgingHttpClient({
      httpClient: harness.transport,
      crossRegion: { threshold, drainLosers: false },
      metadata: { drainLosers: { maxDrainMs: 50 } },
    });
    client.regions.setTopology(twoRegions);
    scriptRace(10_000);
    const pending = observe(client.sendRequest(pointRead(eastUs, harness.leaks.controller().signal)));
    await harness.clock.tickAsync(threshold + 10);
    assert.deepEqual(
      diagnosticsOf(pending).arms.map((arm) => arm.outcome),
      ["aborted", "returned"],
    );
  });

  describe("rejects bad drainLosers options before anything is sent, naming the option and the value", () => {
    const bad: ReadonlyArray<readonly [string, unknown, RegExp]> = [
      ["a string", "yes", /^drainLosers must be true, false or an options object; got "yes"/],
      ["null", null, /^drainLosers must be true, false or an options object; got null/],
      ["maxDrainMs 0", { maxDrainMs: 0 }, /^drainLosers\.maxDrainMs must be a finite number of milliseconds above 0 and below 2147483647; got 0/],
      ["maxDrainMs Infinity", { maxDrainMs: Infinity }, /^drainLosers\.maxDrainMs .*got Infinity/],
      ["maxDrainBytes -1", { maxDrainBytes: -1 }, /^drainLosers\.maxDrainBytes must be a whole number of at least 0; got -1/],
      ["maxDrainBytes 1.5", { maxDrainBytes: 1.5 }, /^drainLosers\.maxDrainBytes .*got 1\.5/],
      ["maxConcurrentDrains 0", { maxConcurrentDrains: 0 }, /^drainLosers\.maxConcurrentDrains must be a whole number of at least 1; got 0/],
      ["an unknown key", { maxDrainSeconds: 5 }, /^drainLosers has no option "maxDrainSeconds"/],
    ];
    for (const [label, value, message] of bad) {
      it(label, () => {
        const drainLosers = value as boolean | LoserDrainOptions;
        assert.throws(() => crossRegionHedgingPolicy({ drainLosers }), { message });
        assert.throws(() => metadataHedgingPolicy({ drainLosers }), { message });
        assert.throws(() => createHedgingHttpClient({ crossRegion: { drainLosers } }), { message });
      });
    }
  });

  it("names the option when a LoserDrain is made with too few drain slots", () => {
    assert.throws(() => new LoserDrain({ ...loserDrainDefaults, maxConcurrentDrains: 0 }), /^RangeError: drainLosers\.maxConcurrentDrains must be a whole number of at least 1; got 0/);
  });

  it("the defaults: 5 s, 1 MiB, 128 drains at once", () => {
    assert.deepEqual({ ...loserDrainDefaults }, { maxDrainMs: 5000, maxDrainBytes: 1 << 20, maxConcurrentDrains: 128 });
  });
});
