import assert from "node:assert/strict";
import { AbortError } from "@azure/abort-controller";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";
import { markForCoreTransport } from "../../../src/race/armAbort.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics, HedgeArmDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { LoserDrain, loserDrainDefaults } from "../../../src/race/loserDrain.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import type { CrossRegionHedgingPolicyOptions } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { eastUs, northEurope, observe, pointRead, ukSouth, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";
import { describeArm } from "../../../src/diagnostics/diagnosticsRecord.js";
import { PassThrough } from "node:stream";
import { createEmptyPipeline, createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import { discardStreamBody, runRace } from "../../../src/race/hedgingRace.js";
import type { RaceInput, RaceOutcome, RaceStrategy, Verdict } from "../../../src/race/race.js";

const threshold = 100;
/** Far beyond any threshold: an arm that answers this late is effectively hanging. */
const slow = 10_000;
const authorization = "type%3Dmaster%26ver%3D1.0%26sig%3Dprimary";

/** The parts of a Node.js socket a drain touches, recorded. */
interface FakeSocket {
  readonly _httpMessage: { method: string; path: string; getHeader(name: string): unknown; destroy(): void };
  unref(): void;
  unrefs: number;
  destroys: number;
}

/** A socket of an agent carrying the request `request` would become on the wire. */
function socketFor(request: PipelineRequest): FakeSocket {
  const url = new URL(request.url);
  const headers: Record<string, string | undefined> = {
    host: url.host,
    authorization: request.headers.get("authorization"),
    "x-ms-date": request.headers.get("x-ms-date"),
  };
  const socket: FakeSocket = {
    unrefs: 0,
    destroys: 0,
    unref: () => {
      socket.unrefs += 1;
    },
    _httpMessage: {
      method: request.method,
      path: url.pathname + url.search,
      getHeader: (name) => headers[name.toLowerCase()],
      destroy: () => {
        socket.destroys += 1;
      },
    },
  };
  return socket;
}

describe("HedgingRace: the lazy race", () => {
  const harness = useRaceHarness();

  function hedged(options: CrossRegionHedgingPolicyOptions = {}, readRegions: readonly RegionEndpoint[] = [eastUs, westUs, northEurope]) {
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(crossRegionHedgingPolicy({ regions: new RegionCache({ topology: { readRegions } }), threshold, ...options }));
    return (request: PipelineRequest) => observe(pipeline.sendRequest(harness.transport, request));
  }

  /** A signed point read as `@azure/cosmos` hands it to a hedging client over core's own transport: with its agent. */
  function sdkRead(agent: object = { sockets: {}, maxSockets: Infinity, maxTotalSockets: Infinity }): { request: PipelineRequest; caller: AbortController } {
    const caller = harness.leaks.controller();
    const request = pointRead(eastUs, caller.signal);
    request.headers.set("authorization", authorization);
    request.headers.set("x-ms-date", "Tue, 01 Dec 2026 20:00:00 GMT");
    request.agent = agent as NonNullable<PipelineRequest["agent"]>;
    markForCoreTransport(request, true);
    return { request, caller };
  }

  function diagnosticsOf(pending: { state(): { done: boolean } }): HedgeDiagnostics {
    const state = pending.state() as { done: boolean; value?: PipelineResponse; error?: unknown };
    assert.ok(state.done, "the request has settled");
    const diagnostics = getHedgeDiagnostics(state.value ?? state.error);
    assert.ok(diagnostics !== undefined, "diagnostics are attached");
    return diagnostics;
  }

  it("sends the caller's request itself as the primary, its signal untouched and not listened to, until a hedge is due", async () => {
    const { request, caller } = sdkRead();
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 50 });
    const pending = hedged()(request);
    await harness.clock.tickAsync(10);
    const [primary] = harness.transport.received;
    assert.equal(primary?.request, request, "the primary is the caller's request, not a copy");
    assert.equal(request.abortSignal, caller.signal);
    assert.equal(request.url, new URL("dbs/db/colls/c/docs/1", eastUs.endpoint).href);
    assert.equal(harness.leaks.listenerCount(caller.signal), 1, "only the transport listens to the caller's signal before a hedge exists");
    await harness.clock.tickAsync(40);
    assert.equal(diagnosticsOf(pending).terminalState, "primaryWon");
    assert.equal(harness.clock.countTimers(), 0, "the threshold timer is cleared when the read ends");
    assert.equal(harness.transport.received.length, 1);
  });

  it("once a hedge exists, the caller's abort cuts every arm at once: the primary through its own signal, the hedges through the race's", async () => {
    const { request, caller } = sdkRead();
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
    const pending = hedged({ thresholdStep: slow })(request);
    await harness.clock.tickAsync(threshold + 10);
    assert.equal(harness.leaks.listenerCount(caller.signal), 2, "the race listens beside the transport once a hedge exists");
    caller.abort();
    await harness.clock.tickAsync(0);
    assert.deepEqual(
      harness.transport.received.map((record) => [new URL(record.origin).hostname.split(".")[0], record.outcome, record.settledAt]),
      [
        ["acct-eastus", "aborted", threshold + 10],
        ["acct-westus", "aborted", threshold + 10],
      ],
    );
    const state = pending.state();
    assert.ok(state.done && "error" in state);
    assert.equal((state.error as Error).name, "AbortError");
    assert.equal(harness.leaks.listenerCount(caller.signal), 0);
  });

  /**
   * A signed read whose primary (East US, on its own socket of the agent) hangs and whose hedge (West US) answers in
   * 10 ms, run until the hedge has won: the primary has lost and drains.
   */
  async function primaryDrainsOnItsSocket(options: CrossRegionHedgingPolicyOptions = {}): Promise<{ socket: FakeSocket; diagnostics: ReturnType<typeof diagnosticsOf> }> {
    const sockets: { "acct-eastus.documents.azure.com:443:": FakeSocket[] } = { "acct-eastus.documents.azure.com:443:": [] };
    const { request } = sdkRead({ sockets, maxSockets: Infinity, maxTotalSockets: Infinity });
    const socket = socketFor(request);
    sockets["acct-eastus.documents.azure.com:443:"].push(socket);
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
    const pending = hedged(options)(request);
    await harness.clock.tickAsync(threshold + 10);
    const diagnostics = diagnosticsOf(pending);
    assert.equal(diagnostics.arms[0]?.outcome, "drained");
    return { socket, diagnostics };
  }

  it("a primary that loses drains by nature: its connection stops keeping the process alive at once and is destroyed at the drain's bound", async () => {
    const { socket, diagnostics } = await primaryDrainsOnItsSocket();
    assert.equal(diagnostics.terminalState, "hedgeWon");
    assert.deepEqual([socket.unrefs, socket.destroys], [1, 0], "released from keeping the process alive when the drain starts");
    await harness.clock.tickAsync(loserDrainDefaults.maxDrainMs);
    assert.deepEqual([socket.unrefs, socket.destroys], [1, 1], "destroyed at the drain's time bound");
    assert.equal(diagnostics.arms[0]?.drainEnd, "timeLimit");
    // The fake transport answers the destroyed request at its own time; nobody hears of it.
    await harness.clock.tickAsync(slow);
  });

  // Found by a hostile review (helper-44): the caller would have cut its primary at its requestTimeout, and stops applying
  // it once the race has answered; drained to the drain's 5 s, a hot item's primaries held a script's process past it.
  it("a losing primary of the caller's drains no longer than the caller's requestTimeout from its start, when that comes before the drain's bound", async () => {
    const { socket, diagnostics } = await primaryDrainsOnItsSocket({ requestTimeout: 1000 });
    await harness.clock.tickAsync(1000 - (threshold + 10) - 1);
    assert.equal(socket.destroys, 0, "still draining a millisecond before the caller's timeout");
    await harness.clock.tickAsync(1);
    assert.equal(socket.destroys, 1, "cut at the caller's timeout, 1000 ms after it was sent, not at the drain's 5000 ms");
    assert.equal(diagnostics.arms[0]?.drainEnd, "timeLimit");
    await harness.clock.tickAsync(slow);
  });

  // Node fires a timer up to about a millisecond before its time by `performance.now()` (measured: 4 of 400 timers made
  // after 0 to 5 ms of work in a tick, by up to 0.89 ms): cut then, the primary would have run a hair less than the
  // SDK's timeout, and the breaker watch would not count it against its region as the SDK counts plain's.
  it("a drain timer that fires before its time by performance.now() waits out the rest: the primary is cut having run the caller's whole timeout", async () => {
    const { socket, diagnostics } = await primaryDrainsOnItsSocket({ requestTimeout: 1000 });
    const clockNow = performance.now.bind(performance);
    // From here the process's clock reads half a millisecond behind the timers'.
    performance.now = () => clockNow() - 0.5;
    try {
      await harness.clock.tickAsync(1000 - (threshold + 10));
      assert.equal(socket.destroys, 0, "the timer fired at 1000 ms by its own clock, 999.5 ms by performance.now(): not yet cut");
      await harness.clock.tickAsync(1);
      assert.equal(socket.destroys, 1, "cut once performance.now() has passed the caller's timeout");
      assert.ok((diagnostics.arms[0]?.durationMs ?? 0) >= 1000, `ran ${diagnostics.arms[0]?.durationMs} ms`);
    } finally {
      performance.now = clockNow;
    }
    await harness.clock.tickAsync(slow);
  });

  // Found by hostile reviews (helpers 36 and 37): a hot item's drained primaries, whose sockets cannot be told apart, were
  // bounded by nothing; the first fix counted a copy that had answered, and cut a copy another caller awaited.
  describe("a hot item: copies of the primary on the agent", () => {
    const origin = "acct-eastus.documents.azure.com:443:";

    /** The SDK's read, its own socket and another caller's copy of it on one agent. */
    function twoCopies(): { sockets: Record<string, FakeSocket[]>; request: PipelineRequest; own: FakeSocket; awaited: FakeSocket } {
      const sockets: Record<string, FakeSocket[]> = { [origin]: [] };
      const { request } = sdkRead({ sockets, maxSockets: Infinity, maxTotalSockets: Infinity });
      const own = socketFor(request);
      const awaited = socketFor(request);
      sockets[origin]!.push(own, awaited);
      return { sockets, request, own, awaited };
    }

    it("at the drain's bound neither copy is cut while the other is still a caller's; once it has left the agent, the overdue one is, on the next look", async () => {
      const { sockets, request, own, awaited } = twoCopies();
      // A region that does not answer for a minute, far past the drain's bound.
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 60_000 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const pending = hedged()(request);
      await harness.clock.tickAsync(threshold + 10);
      assert.equal(diagnosticsOf(pending).arms[0]?.outcome, "drained");
      assert.deepEqual([own.unrefs, awaited.unrefs], [0, 0], "neither released: either may be the caller's");
      await harness.clock.tickAsync(loserDrainDefaults.maxDrainMs * 2);
      assert.deepEqual([own.destroys, awaited.destroys], [0, 0], "the other copy is still awaited");
      sockets[origin] = [own];
      await harness.clock.tickAsync(loserDrainDefaults.maxDrainMs);
      assert.deepEqual([own.destroys, awaited.destroys], [1, 0]);
      assert.equal(harness.clock.countTimers(), 1, "no look-again timer left: only the fake region's answer is pending");
      await harness.clock.tickAsync(60_000);
    });

    // helper-43: the hedges of two identical requests drained with neither socket let go of, holding the process 5 s.
    it("a losing hedge whose socket cannot be told from a copy's is cut at the decision, not drained: plain never sent it", async () => {
      const sockets: Record<string, FakeSocket[]> = {};
      const { request } = sdkRead({ sockets, maxSockets: Infinity, maxTotalSockets: Infinity });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: threshold + 100 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 60_000 });
      const pending = hedged()(request);
      await harness.clock.tickAsync(threshold + 10);
      const hedge = harness.transport.receivedBy(westUs.endpoint).at(-1)!.request;
      // The hedge and another race's copy of it on the agent.
      sockets[`${new URL(westUs.endpoint).hostname}:443:`] = [socketFor(hedge), socketFor(hedge)];
      await harness.clock.tickAsync(100);
      assert.deepEqual(
        diagnosticsOf(pending).arms.map((arm) => arm.outcome),
        ["returned", "aborted"],
      );
      assert.equal(harness.transport.receivedBy(westUs.endpoint).at(-1)?.outcome, "aborted");
    });

    it("a copy that answered before its bound (its body past the byte bound) is cut by its own body, and never stands for the caller's copy", async () => {
      const { sockets, request, awaited } = twoCopies();
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: threshold + 100, body: "x".repeat(64) });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const pending = hedged({ drainLosers: { maxDrainBytes: 8 } })(request);
      await harness.clock.tickAsync(threshold + 100);
      const diagnostics = diagnosticsOf(pending);
      assert.equal(diagnostics.arms[0]?.drainEnd, "byteLimit");
      // Its body destroyed, the answered copy's socket leaves the agent; the caller's copy is still in flight.
      sockets[origin] = [awaited];
      await harness.clock.tickAsync(loserDrainDefaults.maxDrainMs * 3);
      assert.equal(awaited.destroys, 0, "the caller's copy is never cut");
      assert.equal(harness.clock.countTimers(), 0, "no look-again timer: nothing overdue");
    });
  });

  it("with an agent that bounds its sockets, the race is eager: the primary gets the race's signal and a loser is aborted at the decision, not drained", async () => {
    for (const bound of [{ maxSockets: 1, maxTotalSockets: Infinity }, { maxSockets: Infinity, maxTotalSockets: 2 }]) {
      const { request, caller } = sdkRead({ sockets: {}, ...bound });
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const pending = hedged()(request);
      await harness.clock.tickAsync(threshold + 10);
      const east = harness.transport.receivedBy(eastUs.endpoint).at(-1);
      assert.notEqual(east?.request.abortSignal, caller.signal, "the primary carries a signal of the race's");
      assert.equal(east?.outcome, "aborted", "the losing primary gives its socket back at the decision");
      assert.deepEqual(
        diagnosticsOf(pending).arms.map((arm) => arm.outcome),
        ["aborted", "returned"],
      );
    }
  });

  it("with an agent that bounds its sockets, a hedge gives its socket up to a later request of the SDK's that would wait for it, and the race goes on without it", async () => {
    const westPrefix = `${new URL(westUs.endpoint).hostname}:443:`;
    const pool: { sockets: Record<string, unknown[]>; maxSockets: number; maxTotalSockets: number } = { sockets: {}, maxSockets: 1, maxTotalSockets: Infinity };
    const { request } = sdkRead(pool);
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 400 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: slow });
    const send = hedged({}, [eastUs, westUs]);
    const pending = send(request);
    await harness.clock.tickAsync(threshold + 50);
    // The hedge's connection is West US's only socket of the pool; the SDK now reads from West US itself.
    pool.sockets[westPrefix] = [{}];
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
    const later = pointRead(westUs, harness.leaks.controller().signal);
    later.agent = pool as unknown as NonNullable<PipelineRequest["agent"]>;
    markForCoreTransport(later, true);
    const second = send(later);
    const [hedge] = harness.transport.receivedBy(westUs.endpoint);
    assert.equal(hedge?.outcome, "aborted", "the hedge is cut as the SDK's request comes");
    pool.sockets = {};
    await harness.clock.tickAsync(10);
    assert.equal(diagnosticsOf(second).terminalState, "primaryWon");
    assert.equal(pending.state().done, false, "the read's race goes on with its primary");
    await harness.clock.tickAsync(400);
    const diagnostics = diagnosticsOf(pending);
    assert.equal(diagnostics.terminalState, "primaryWon");
    assert.deepEqual(
      diagnostics.arms.map((arm) => [arm.region, arm.outcome, arm.durationMs]),
      [
        ["East US", "returned", 400],
        ["West US", "aborted", 50],
      ],
    );
  });

  it("an eager race over a frozen request runs its primary alone: nothing written on the request, no hedge, the caller's abort still cuts it", async () => {
    const { request, caller } = sdkRead({ sockets: {}, maxSockets: 1, maxTotalSockets: Infinity });
    Object.freeze(request);
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
    const pending = hedged()(request);
    await harness.clock.tickAsync(threshold * 3);
    assert.equal(request.abortSignal, caller.signal, "nothing was written on the frozen request");
    assert.equal(harness.transport.received.length, 1, "a race that could not cut its primary sends no hedge");
    caller.abort();
    await harness.clock.tickAsync(0);
    assert.equal(harness.clock.countTimers(), 0, "no timer of the race, nor of the aborted request");
    assert.equal(harness.transport.receivedBy(eastUs.endpoint).at(-1)?.outcome, "aborted");
    assert.deepEqual(diagnosticsOf(pending).arms.map((arm) => arm.outcome), ["aborted"]);
    assert.equal(harness.leaks.listenerCount(caller.signal), 0);
  });

  it("an eager race over a frozen request that answers: the primary's answer, recorded as not eligible for hedging", async () => {
    const { request } = sdkRead({ sockets: {}, maxSockets: 1, maxTotalSockets: Infinity });
    Object.freeze(request);
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: threshold * 2 });
    const pending = hedged()(request);
    await harness.clock.tickAsync(threshold * 2);
    const diagnostics = diagnosticsOf(pending);
    assert.deepEqual([diagnostics.terminalState, diagnostics.skipReason, diagnostics.hedgeFired], ["skipped", "notEligible", false]);
    assert.equal(harness.transport.received.length, 1);
  });
});

describe("HedgingRace: bounded load in an outage (issue 22)", () => {
  const harness = useRaceHarness();

  function hedged(readRegions: RegionEndpoint[] = [eastUs, westUs, northEurope]) {
    const pipeline = createEmptyPipeline();
    const regions = new RegionCache({ topology: { readRegions } });
    pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold, thresholdStep: 50, drainLosers: false, budget: false }));
    return (request: PipelineRequest) => observe(pipeline.sendRequest(harness.transport, request));
  }

  it("a transient primary goes back at once, unhedged: the SDK's own retry moves on, and no other region is asked", async () => {
    harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 5 });
    harness.transport.script(westUs.endpoint, { status: 503, delayMs: 5 });
    // North Europe is not scripted: a request to it would fail the test (every region at once is what this forbids).
    const pending = hedged()(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(5);
    const state = pending.state();
    assert.ok(state.done && "value" in state, "answered as soon as the primary's 503 came");
    assert.equal(state.value.status, 503);
    const diagnostics = getHedgeDiagnostics(state.value);
    assert.equal(diagnostics?.terminalState, "primaryOutcome");
    assert.equal(diagnostics?.hedgeFired, false);
    assert.deepEqual(
      diagnostics?.arms.map((arm) => [arm.region, arm.reason, arm.status]),
      [["East US", "primary", 503]],
    );
    assert.equal(harness.transport.received.length, 1, "no hedge sent, West US's script untouched");
  });

  it("brings hedges forward one at a time: a transient result while a brought-forward hedge is out launches nothing more", async () => {
    // East hangs. West goes at the threshold, North Europe a step later; North's 503 brings UK South forward; West's own 503
    // then comes while UK South is out, and Japan East (not scripted: a request to it would fail the test) is not asked.
    const japanEast: RegionEndpoint = { name: "Japan East", endpoint: "https://acct-japaneast.documents.azure.com:443/" };
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
    harness.transport.script(westUs.endpoint, { status: 503, delayMs: 70 });
    harness.transport.script(northEurope.endpoint, { status: 503, delayMs: 10 });
    harness.transport.script(ukSouth.endpoint, { status: 200, delayMs: 40 });
    const pending = hedged([eastUs, westUs, northEurope, ukSouth, japanEast])(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 100);
    const state = pending.state();
    assert.ok(state.done && "value" in state);
    const diagnostics = getHedgeDiagnostics(state.value);
    assert.deepEqual(
      diagnostics?.arms.map((arm) => [arm.region, arm.reason, arm.startOffsetMs, arm.outcome]),
      [
        ["East US", "primary", 0, "aborted"],
        ["West US", "threshold", threshold, "lost"],
        ["North Europe", "threshold", threshold + 50, "lost"],
        ["UK South", "transientResult", threshold + 60, "returned"],
      ],
    );
    assert.equal(harness.transport.received.length, 4);
  });

  it("a hedge that answers transient while the primary is still out brings the next forward, and the primary's outcome returns once every arm has settled", async () => {
    harness.transport.script(eastUs.endpoint, { status: 503, delayMs: threshold + 50 });
    harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
    harness.transport.script(northEurope.endpoint, { status: 503, delayMs: 10 });
    const pending = hedged()(pointRead(eastUs, harness.leaks.controller().signal));
    await harness.clock.tickAsync(threshold + 50);
    const state = pending.state();
    assert.ok(state.done && "value" in state);
    const diagnostics = getHedgeDiagnostics(state.value);
    assert.equal(diagnostics?.terminalState, "primaryOutcome");
    assert.equal(diagnostics?.winningRegion, "East US");
    assert.equal(harness.transport.received.length, 3, "one request per region, never more: the SDK's own retry moves on from here");
  });
});

/** The public records of a race's arms, as the edge describes them. */
function describedArms(outcome: RaceOutcome): HedgeArmDiagnostics[] {
  return outcome.arms.map((arm) => describeArm(arm, outcome.startedAt, outcome.kind === "decided" ? outcome.returnedIndex : undefined));
}

/** The race engine where a strategy refuses, waits or throws, and where an arm's error is long. */
describe("race engine at its edges", () => {
  const harness = useRaceHarness();

  function strategy(overrides: Partial<RaceStrategy> = {}): RaceStrategy {
    return {
      delayBefore: () => 100,
      judge: (arm): Verdict => (arm.result.response !== undefined && arm.result.response.status < 400 ? "win" : "next"),
      earlyLaunchReason: "transientResult",
      ...overrides,
    };
  }

  function race(raceStrategy: RaceStrategy): ReturnType<typeof observe<RaceOutcome>> {
    return observe(
      runRace({
        request: pointRead(eastUs, harness.leaks.controller().signal),
        primaryRegion: eastUs,
        hedges: () => [westUs, northEurope],
        send: harness.transport.next,
        strategy: raceStrategy,
      }),
    );
  }

  it("returns the primary's outcome when its arm waits, without asking the budget for a hedge (nothing launches once nothing is in flight)", async () => {
    harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 10 });
    const outcome = race(strategy({ judge: () => "wait", admit: () => false }));
    await harness.clock.tickAsync(10);
    const state = outcome.state();
    assert.ok(state.done && "value" in state, "the race ended as soon as nothing was left in flight");
    assert.equal(state.value.kind, "decided");
    assert.ok(state.value.kind === "decided" && state.value.returnedIndex === 0 && state.value.fallback);
    assert.equal(state.value.hedgeRefused, false);
    assert.equal(harness.transport.received.length, 1);
  });

  function raceFor(caller: AbortController, raceStrategy: RaceStrategy, input: Partial<RaceInput> = {}): ReturnType<typeof observe<RaceOutcome>> {
    return observe(
      runRace({
        request: pointRead(eastUs, caller.signal),
        primaryRegion: eastUs,
        hedges: () => [westUs, northEurope],
        send: harness.transport.next,
        strategy: raceStrategy,
        ...input,
      }),
    );
  }

  it("passes over a planned region the input no longer hedges into when a later hedge is due, and launches the next", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(ukSouth.endpoint, { status: 200, delayMs: 10 });
    const closed = new Set<string>();
    const outcome = raceFor(harness.leaks.controller(), strategy(), {
      hedges: () => [westUs, northEurope, ukSouth],
      mayHedgeInto: (region) => !closed.has(region.name),
    });
    await harness.clock.tickAsync(150);
    closed.add("North Europe");
    await harness.clock.tickAsync(100);
    await harness.clock.tickAsync(20);
    const state = outcome.state();
    assert.ok(state.done && "value" in state && state.value.kind === "decided");
    assert.deepEqual(state.value.arms.map((arm) => arm.region.name), ["East US", "West US", "UK South"]);
    assert.equal(state.value.returnedIndex, 2);
    assert.equal(harness.transport.received.filter((received) => received.url.startsWith(northEurope.endpoint)).length, 0);
  });

  it("a caller that aborted before the race began: the request handed down as it is, the transport's own refusal the outcome, no timer", async () => {
    const caller = harness.leaks.controller();
    caller.abort();
    const outcome = raceFor(caller, strategy());
    await harness.clock.tickAsync(0);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    assert.equal(state.value.kind, "aborted");
    assert.deepEqual(
      state.value.arms.map((arm) => [arm.index, arm.aborted]),
      [[0, true]],
    );
    assert.equal(state.value.kind === "aborted" && (state.value.error as Error).message, "The operation was aborted. Request has already been canceled.");
    assert.deepEqual(
      harness.transport.received.map((each) => [each.request, each.signalAborted, each.outcome]),
      [[harness.transport.received[0]?.request, true, "aborted"]],
    );
    assert.equal(harness.clock.countTimers(), 0);
  });

  it("a caller's abort whose primary's transport answers anyway: the caller gets that answer, as it would unhedged", async () => {
    const caller = harness.leaks.controller();
    const answered = { status: 200, headers: createHttpHeaders(), request: pointRead(eastUs, caller.signal) };
    const outcome = raceFor(caller, strategy({ judge: () => "win" }), {
      // A transport step that ignores the signal: its answer comes whatever the caller does.
      send: () => new Promise((resolve) => setTimeout(() => resolve(answered), 200)),
    });
    await harness.clock.tickAsync(50);
    caller.abort();
    await harness.clock.tickAsync(200);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    assert.equal(state.value.kind, "decided");
    assert.equal(state.value.kind === "decided" && state.value.result.response, answered);
  });

  it("a caller's abort before any hedge: an aborted outcome of the primary alone, whatever the strategy makes of its error", async () => {
    const caller = harness.leaks.controller();
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    const outcome = raceFor(caller, strategy({ judge: () => "win" }));
    await harness.clock.tickAsync(50);
    caller.abort();
    await harness.clock.tickAsync(0);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    assert.equal(state.value.kind, "aborted");
    assert.equal(state.value.hedgeRefused, false);
    assert.deepEqual(
      state.value.arms.map((arm) => [arm.index, arm.aborted, arm.endedAt]),
      [[0, true, 50]],
    );
    assert.equal(harness.clock.countTimers(), 0);
  });

  it("a primary sent with the caller's signal only (left to drain, eager by default only without a drain): the caller's abort, seen when it settles, ends the race aborted", async () => {
    const caller = harness.leaks.controller();
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    const outcome = raceFor(caller, strategy({ judge: () => "win" }), { drain: new LoserDrain(loserDrainDefaults) });
    await harness.clock.tickAsync(50);
    assert.equal(harness.transport.received[0]?.request.abortSignal, caller.signal, "the race gave the primary no signal of its own");
    caller.abort();
    await harness.clock.tickAsync(0);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    assert.equal(state.value.kind, "aborted");
    assert.deepEqual(
      state.value.arms.map((arm) => [arm.index, arm.aborted, arm.endedAt]),
      [[0, true, 50]],
    );
  });

  it("a caller's abort with a hedge in flight: the hedge cut at once, the race ended by the primary's own error when its transport gives it", async () => {
    const caller = harness.leaks.controller();
    const cut = new AbortError("cut, in this transport's words");
    let primaryRejected = false;
    const outcome = raceFor(caller, strategy(), {
      send: (request, index) => {
        if (index > 0) return harness.transport.next(request);
        // The primary's transport takes 30 ms to give its error up after the abort.
        return new Promise((_, reject) =>
          request.abortSignal?.addEventListener("abort", () => setTimeout(() => ((primaryRejected = true), reject(cut)), 30), { once: true }),
        );
      },
    });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 1000 });
    await harness.clock.tickAsync(150);
    caller.abort();
    await harness.clock.tickAsync(0);
    assert.deepEqual(harness.transport.received.map((each) => each.outcome), ["aborted"], "the hedge is cut at once");
    assert.equal(outcome.state().done, false, "the race waits for its primary");
    await harness.clock.tickAsync(30);
    const state = outcome.state();
    assert.ok(primaryRejected && state.done && "value" in state);
    assert.equal(state.value.kind, "aborted");
    assert.equal(state.value.kind === "aborted" && state.value.error, cut);
    assert.deepEqual(
      state.value.arms.map((arm) => [arm.index, arm.aborted, arm.endedAt]),
      [
        [0, true, 180],
        [1, true, 150],
      ],
    );
    assert.equal(harness.clock.countTimers(), 0);
  });

  it("a caller's abort while reading the primary's body: the caller gets the transport's error of it, not an AbortError", async () => {
    const caller = harness.leaks.controller();
    const unreadable = Object.assign(new Error("Error reading response as text: aborted"), { name: "RestError", code: "PARSE_ERROR" });
    const outcome = raceFor(caller, strategy(), {
      send: (request, index) =>
        index > 0
          ? harness.transport.next(request)
          : new Promise((_, reject) => request.abortSignal?.addEventListener("abort", () => reject(unreadable), { once: true })),
    });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 1000 });
    await harness.clock.tickAsync(150);
    caller.abort();
    await harness.clock.tickAsync(0);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    assert.equal(state.value.kind === "aborted" && state.value.error, unreadable);
  });

  it("a caller's abort while a write's primary that failed for good waits for its hedge: its answer goes back at once", async () => {
    const caller = harness.leaks.controller();
    harness.transport.script(eastUs.endpoint, { status: 409, delayMs: 200 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 1000 });
    const outcome = raceFor(caller, strategy({ judge: (arm) => (arm.result.response?.status === 409 || arm.result.response?.status === 200 ? "win" : "next"), primaryWaitsForHedges: true }));
    await harness.clock.tickAsync(250);
    assert.equal(outcome.state().done, false, "the 409 waits for the hedge");
    caller.abort();
    await harness.clock.tickAsync(0);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    assert.ok(state.value.kind === "decided");
    assert.equal(state.value.result.response?.status, 409);
    assert.deepEqual(
      state.value.arms.map((arm) => [arm.index, arm.aborted === true]),
      [
        [0, false],
        [1, true],
      ],
    );
    assert.equal(harness.clock.countTimers(), 0);
  });

  it("a transient primary whose plan found no hedge at the threshold: the primary's outcome, as a fallback, with the reason", async () => {
    harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 150 });
    const outcome = raceFor(harness.leaks.controller(), strategy(), { hedges: () => "regionThrottled" });
    await harness.clock.tickAsync(150);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    assert.ok(state.value.kind === "decided");
    assert.deepEqual([state.value.returnedIndex, state.value.fallback, state.value.skipReason, state.value.arms.length], [0, true, "regionThrottled", 1]);
    assert.equal(state.value.result.response?.status, 503);
    assert.equal(harness.clock.countTimers(), 0);
  });

  it("a transient primary whose first hedge the budget refused at the threshold: the primary's outcome, as a fallback, the refusal recorded", async () => {
    harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 150 });
    const outcome = raceFor(harness.leaks.controller(), strategy({ admit: () => false }));
    await harness.clock.tickAsync(150);
    const state = outcome.state();
    assert.ok(state.done && "value" in state, "decided as soon as the primary answered");
    assert.ok(state.value.kind === "decided");
    assert.deepEqual([state.value.returnedIndex, state.value.fallback, state.value.hedgeRefused, state.value.arms.length], [0, true, true, 1]);
    assert.equal(harness.transport.received.length, 1);
  });

  it("a strategy that throws ends the race with its error, aborts the other arms and leaves no timer", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
    const outcome = race(
      strategy({
        judge: (arm) => {
          if (arm.index === 1) throw new Error("a broken strategy");
          return "win";
        },
      }),
    );
    await harness.clock.tickAsync(110);
    const state = outcome.state();
    assert.ok(state.done && "error" in state, "the race rejected");
    assert.match(String((state as { error: unknown }).error), /a broken strategy/);
    assert.equal(harness.transport.received[0]?.signalAborted, true, "the primary was aborted");
    assert.equal(harness.clock.countTimers(), 0);
  });

  it("keeps at most 300 characters of an arm's error, thrown as an Error or as anything else", async () => {
    const long = `connect ECONNREFUSED ${"x".repeat(1000)}`;
    // West goes out at the threshold (100 ms); its error at 105 ms brings North Europe forward; East fails while North is out.
    harness.transport.script(eastUs.endpoint, { error: new Error(long), delayMs: 108 });
    harness.transport.script(westUs.endpoint, { error: long, delayMs: 5 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 50 });
    const outcome = race(strategy());
    await harness.clock.tickAsync(110);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    const errors = describedArms(state.value).map((arm) => arm.error);
    assert.deepEqual(
      errors.map((error) => [error?.name, error?.message.length]),
      [
        ["Error", 300],
        ["string", 300],
        [undefined, undefined],
      ],
    );
    assert.ok(errors[0]?.message.startsWith("connect ECONNREFUSED"));
  });

  it("times each arm from the race's start, whenever on the clock the race starts", async () => {
    await harness.clock.tickAsync(12_345);
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 30 });
    const outcome = race(strategy());
    await harness.clock.tickAsync(130);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    assert.deepEqual(
      describedArms(state.value).map((arm) => [arm.region, arm.startOffsetMs, arm.durationMs]),
      [
        ["East US", 0, 130],
        ["West US", 100, 30],
      ],
    );
  });

  it("releases what it admitted, once per hedge and never for the primary, whether the hedge settled, won or was aborted", async () => {
    const admitted: number[] = [];
    const released: number[] = [];
    const releasing = (): RaceStrategy =>
      strategy({
        judge: (arm) => (arm.index === 1 ? "wait" : "win"),
        admit: (index) => (admitted.push(index), true),
        release: (index) => released.push(index),
      });
    // The third arm wins: the second settled before, the primary is aborted.
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 5000 });
    harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 50 });
    const hedgeWins = race(releasing());
    await harness.clock.tickAsync(250);
    const won = hedgeWins.state();
    assert.ok(won.done && "value" in won && won.value.kind === "decided" && won.value.returnedIndex === 2);
    assert.deepEqual(admitted, [1, 2]);
    assert.deepEqual(released, [1, 2]);
    // The primary wins: the third arm, still in flight, is aborted and released.
    admitted.length = 0;
    released.length = 0;
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 5000 });
    const primaryWins = race(releasing());
    await harness.clock.tickAsync(1000);
    const kept = primaryWins.state();
    assert.ok(kept.done && "value" in kept && kept.value.kind === "decided" && kept.value.returnedIndex === 0);
    assert.deepEqual(admitted, [1, 2]);
    assert.deepEqual(released, [1, 2]);
  });

  it("asks again, once, when the strategy names a later time for a refused hedge, and launches it then", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: slow });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 20 });
    const asked: number[] = [];
    const outcome = race(
      strategy({
        // Refused at the threshold, admitted when asked again.
        admit: () => (asked.push(performance.now()), asked.length > 1),
        admitAfter: () => 30,
      }),
    );
    await harness.clock.tickAsync(threshold);
    assert.deepEqual(asked, [threshold]);
    assert.equal(harness.transport.received.length, 1, "refused: no hedge yet");
    await harness.clock.tickAsync(29);
    assert.equal(harness.transport.received.length, 1);
    await harness.clock.tickAsync(1);
    assert.deepEqual(asked, [threshold, threshold + 30]);
    assert.equal(harness.transport.received.length, 2, "admitted when asked again: the hedge went out");
    await harness.clock.tickAsync(20);
    const state = outcome.state();
    assert.ok(state.done && "value" in state && state.value.kind === "decided");
    assert.equal(state.value.returnedIndex, 1, "the hedge admitted late won");
    assert.equal(state.value.hedgeRefused, false, "the read launched every hedge it asked for");
    assert.equal(state.value.arms[1]?.startedAt, threshold + 30);
  });

  it("a refused hedge asked again and refused for good stops the hedging; the primary's answer cancels a pending ask", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 200 });
    let asked = 0;
    const again = [30, undefined];
    const refused = race(strategy({ admit: () => (asked++, false), admitAfter: () => again.shift() }));
    await harness.clock.tickAsync(threshold + 30);
    assert.equal(asked, 2);
    assert.equal(harness.clock.countTimers(), 1, "refused for good: only the primary's answer is pending");
    await harness.clock.tickAsync(70);
    const state = refused.state();
    assert.ok(state.done && "value" in state && state.value.kind === "decided");
    assert.equal(state.value.hedgeRefused, true);
    assert.equal(harness.transport.received.length, 1);

    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: threshold + 10 });
    asked = 0;
    const answered = race(strategy({ admit: () => (asked++, false), admitAfter: () => 50 }));
    await harness.clock.tickAsync(threshold + 10);
    assert.ok(answered.state().done);
    assert.equal(harness.clock.countTimers(), 0, "the ask pending when the primary answered is cancelled");
    await harness.clock.tickAsync(100);
    assert.equal(asked, 1, "and never made");
    const value = (answered.state() as { value: RaceOutcome }).value;
    assert.equal(value.hedgeRefused, true, "the read ran with fewer hedges than planned");
  });

  it("a caller's abort while a refused hedge waits to ask again: the race ends aborted, the ask is never made, no timer is left", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    const caller = harness.leaks.controller();
    let asked = 0;
    const outcome = raceFor(caller, strategy({ admit: () => (asked++, false), admitAfter: () => 50 }));
    await harness.clock.tickAsync(threshold + 10);
    assert.equal(asked, 1);
    caller.abort();
    await harness.clock.tickAsync(0);
    const state = outcome.state();
    assert.ok(state.done && "value" in state && state.value.kind === "aborted");
    assert.equal(harness.clock.countTimers(), 0, "neither the ask nor the primary's answer is pending");
    await harness.clock.tickAsync(100);
    assert.equal(asked, 1, "the ask was cancelled with the race");
    assert.equal(harness.transport.received.length, 1);
  });

  it("keeps no timer of its own once every arm is out, or once the budget has refused a hedge", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 1000 });
    const allOut = race(strategy());
    await harness.clock.tickAsync(200);
    assert.equal(harness.transport.received.length, 3);
    assert.equal(harness.clock.countTimers(), 3, "the three arms' answers are all that is pending");
    await harness.clock.tickAsync(800);
    assert.ok(allOut.state().done);

    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    let asked = 0;
    const refused = race(strategy({ admit: () => (asked++, false) }));
    await harness.clock.tickAsync(100);
    assert.equal(asked, 1);
    assert.equal(harness.clock.countTimers(), 1, "after the refusal only the primary's answer is pending");
    await harness.clock.tickAsync(900);
    assert.ok(refused.state().done);
  });
});

describe("discardStreamBody", () => {
  const streamed = (body: PassThrough): PipelineResponse => ({
    request: createPipelineRequest({ url: eastUs.endpoint }),
    status: 200,
    headers: createHttpHeaders(),
    readableStreamBody: body,
  });
  const listeners = (body: PassThrough): number[] => ["data", "end", "close", "error"].map((event) => body.listenerCount(event));

  it("reads a body within the bound to its end, and leaves no listener on it", async () => {
    const body = new PassThrough();
    const read = discardStreamBody(streamed(body), 10);
    body.end("abc");
    assert.equal(await read, true);
    assert.deepEqual(listeners(body), [0, 0, 0, 0]);
  });

  it("destroys a body past the bound, and leaves no listener on it", async () => {
    const body = new PassThrough();
    const read = discardStreamBody(streamed(body), 2);
    body.write("abc");
    assert.equal(await read, false);
    assert.equal(body.destroyed, true);
    assert.deepEqual(listeners(body), [0, 0, 0, 0]);
  });

  it("takes a body closed or failed before its end for unread, without an unhandled error", async () => {
    const closed = new PassThrough();
    const closing = discardStreamBody(streamed(closed), 10);
    closed.destroy();
    assert.equal(await closing, false);
    const failed = new PassThrough();
    const failing = discardStreamBody(streamed(failed), 10);
    failed.destroy(new Error("socket hang up"));
    assert.equal(await failing, false);
    assert.deepEqual(listeners(failed), [0, 0, 0, 0]);
  });

  it("cancels a browser stream body, which is never read to its end, whether the cancel succeeds or fails", async () => {
    const response = (cancel: () => Promise<void>): PipelineResponse => ({
      request: createPipelineRequest({ url: eastUs.endpoint }),
      status: 200,
      headers: createHttpHeaders(),
      browserStreamBody: { cancel } as unknown as ReadableStream<Uint8Array>,
    });
    let cancels = 0;
    assert.equal(await discardStreamBody(response(async () => void (cancels += 1)), 10), false);
    assert.equal(await discardStreamBody(response(() => Promise.reject(new Error("already locked"))), 10), false);
    assert.equal(cancels, 1);
  });

  it("has nothing to read without a streamed body", async () => {
    assert.equal(await discardStreamBody(undefined, 10), true);
  });
});
