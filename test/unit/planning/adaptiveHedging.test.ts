import assert from "node:assert/strict";
import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { Pipeline, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import sinon from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { AccountTopologyInit } from "../../../src/topology/regionCache.js";
import { demotionDefaults } from "../../../src/learning/regionRanking.js";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { setRequestControls } from "../../../src/request/requestControls.js";
import { seededRandom } from "../../../src/testing/seededRandom.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import type { CrossRegionHedgingPolicy, CrossRegionHedgingPolicyOptions } from "../../../src/policies/crossRegionHedgingPolicy.js";
import type { ScriptStep } from "../../support/fakeTransport.js";
import { latencyTransport } from "../../support/fakeTransport.js";
import { eastUs, northEurope, observe, pointRead, query, requestTo, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";

const twoRegions: AccountTopologyInit = { readRegions: [eastUs, westUs] };
const threeRegions: AccountTopologyInit = { readRegions: [eastUs, westUs, northEurope] };

const ok = (delayMs: number, extra: Partial<Extract<ScriptStep, { status: number }>> = {}): ScriptStep => ({ status: 200, delayMs, ...extra });

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
      await send(target, { east: { status: 429, delayMs: 1, headers: { "x-ms-retry-after-ms": "abc" } }, west: { status: 429, delayMs: 1 } });
      const { diagnostics } = await send(target, { east: ok(30) });
      assert.equal(diagnostics.skipReason, "regionThrottled");
      assert.equal(diagnostics.terminalState, "skipped");
      await harness.clock.tickAsync(1000);
      const later = await send(target, { east: ok(30), west: ok(5) });
      assert.equal(later.diagnostics.hedgeFired, true, "a 429 without a usable retry-after keeps the region out for a second");
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
      // A probe read goes to East and is throttled, with a long retry-after.
      const probe = await send(target, {
        east: { status: 429, delayMs: 1, headers: { "x-ms-retry-after-ms": "30000" } },
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
      // Both arms transient: the primary's outcome is returned, West's charge is the cost of hedging.
      await send(target, { east: { status: 503, delayMs: 1, requestCharge: 0.5 }, west: { status: 503, delayMs: 1, requestCharge: 2 } });
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
      [{ threshold: { mode: "fixed" } as unknown as number }, "threshold", "got an object"],
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
