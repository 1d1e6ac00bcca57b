import assert from "node:assert/strict";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelineResponse } from "@azure/core-rest-pipeline";
import type { SinonFakeTimers } from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";
import { HedgePlanner } from "../../../src/planning/planner.js";
import type { RacePlan, SkipPlan } from "../../../src/planning/planner.js";
import { RegionHealth } from "../../../src/learning/regionHealth.js";
import type { SdkBreakerSettings } from "../../../src/learning/sdkBreakerWatch.js";
import type { RequestHedgingControls } from "../../../src/request/requestModel.js";
import { CrossRegionTiming, MetadataTiming } from "../../../src/planning/timing.js";
import { diagnosticsHeader } from "../../../src/diagnostics/diagnosticsHeader.js";
import { crossRegionHedgingDefaults } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { eastUs, northEurope, pointRead, requestTo, westUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";

const fixed = { kind: "fixed", thresholdMs: 100, thresholdStepMs: 50, thresholdSource: "options" } as const;

const names = (regions: readonly RegionEndpoint[]): string[] => regions.map((region) => region.name);

/** One planner serves both hedging policies: the same guard chain, each with its own timing and race size. */
describe("HedgePlanner", () => {
  let clock: SinonFakeTimers;
  let regions: RegionCache;
  let health: RegionHealth;
  let documents: HedgePlanner;
  let metadata: HedgePlanner;

  beforeEach(() => {
    clock = useFakeClock();
    regions = new RegionCache({ topology: { readRegions: [eastUs, westUs, northEurope] } });
    health = new RegionHealth(regions, { routing: "preferred", throttling: crossRegionHedgingDefaults });
    const timing = new CrossRegionTiming({ enabled: true, explicit: fixed, followingAccount: fixed, enableMultiWriteRegionHedge: false });
    documents = new HedgePlanner(regions, timing, health);
    metadata = new HedgePlanner(regions, new MetadataTiming(true, 1500, 60_000));
  });

  afterEach(() => {
    clock.restore();
  });

  const collectionRead = () => requestTo(eastUs, "GET", "dbs/db/colls/c");
  const plan = (planner: HedgePlanner, controls: RequestHedgingControls = {}, request = pointRead(eastUs)): SkipPlan | RacePlan =>
    planner.plan(request, planner === metadata ? "collectionRead" : "pointRead", regions.regionOf(request.url), controls);
  /** A request's arms as the race would launch them: its primary, then the hedges planned when the first is due; or why there are none. */
  const arms = (planner: HedgePlanner, controls: RequestHedgingControls = {}, request = pointRead(eastUs)): string[] | string => {
    const planned = plan(planner, controls, request);
    if (planned.kind === "skip") return planned.reason;
    const hedges = planner.hedges(request, planner === metadata ? "collectionRead" : "pointRead", planned.primary, controls, planned.header);
    return typeof hedges === "string" ? hedges : names([planned.primary, ...hedges]);
  };

  it("plans a race over every applicable region for documents, and one hedge for metadata", () => {
    const document = plan(documents);
    assert.ok(document.kind === "race");
    assert.deepEqual(arms(documents), ["East US", "West US", "North Europe"]);
    assert.deepEqual(document.header, {
      policy: "crossRegion",
      operation: "pointRead",
      primaryRegion: "East US",
      thresholdMs: 100,
      thresholdStepMs: 50,
      thresholdSource: "options",
    });
    const meta = plan(metadata, {}, collectionRead());
    assert.ok(meta.kind === "race");
    assert.deepEqual(arms(metadata, {}, collectionRead()), ["East US", "West US"]);
    assert.deepEqual(meta.header, { policy: "metadata", operation: "collectionRead", primaryRegion: "East US", thresholdMs: 1500, thresholdSource: "options" });
  });

  it("runs the same guard chain for both policies, the header as far as planning got", () => {
    for (const planner of [documents, metadata]) {
      const read = () => (planner === metadata ? collectionRead() : pointRead(eastUs));
      const off = plan(planner, { hedging: false }, read());
      assert.deepEqual([off.kind, (off as SkipPlan).reason, off.header.thresholdMs], ["skip", "disabled", undefined]);
      const pinned = plan(planner, { region: "West US" }, read());
      assert.deepEqual([pinned.kind, (pinned as SkipPlan).reason, pinned.header.thresholdSource], ["skip", "pinnedRegion", "options"]);
      const streamed = read();
      streamed.body = new ReadableStream();
      assert.equal((plan(planner, {}, streamed) as SkipPlan).reason, "streamBody");
      const elsewhere = createPipelineRequest({ url: "https://other.documents.azure.com/dbs/db/colls/c", headers: createHttpHeaders() });
      assert.equal((plan(planner, {}, elsewhere) as SkipPlan).reason, "unknownRegion");
      // Exclusions may leave no region to hedge into: that is planned before the request is sent.
      assert.equal((plan(planner, { excludedRegions: ["West US", "North Europe"] }, read()) as SkipPlan).reason, "singleRegion");
    }
  });

  it("keeps throttled regions out of a document race, and skips it when every other region is throttled", () => {
    health.noteResponse("West US", { request: pointRead(westUs), status: 429, headers: createHttpHeaders() });
    assert.deepEqual(arms(documents), ["East US", "North Europe"]);
    health.noteResponse("North Europe", { request: pointRead(northEurope), status: 429, headers: createHttpHeaders() });
    assert.equal(arms(documents), "regionThrottled");
    clock.tick(crossRegionHedgingDefaults.throttleWithoutRetryAfterMs);
    assert.deepEqual(arms(documents), ["East US", "West US", "North Europe"]);
  });

  it("keeps a region that answered 403/1008 out of hedges for the SDK's five minutes, never the primary, and skips when none is left", () => {
    const forbidden = (region: RegionEndpoint, subStatus: string): PipelineResponse => ({ request: pointRead(region), status: 403, headers: createHttpHeaders({ "x-ms-substatus": subStatus }) });
    health.noteResponse("West US", forbidden(westUs, "3"));
    assert.deepEqual(arms(documents), ["East US", "West US", "North Europe"], "a 403 of another sub-status says nothing of the account");
    health.noteResponse("westus", forbidden(westUs, "1008"));
    assert.deepEqual(arms(documents), ["East US", "North Europe"]);
    assert.deepEqual(arms(documents, {}, pointRead(westUs)), ["West US", "East US", "North Europe"], "the SDK's request goes where it sent it");
    const request = pointRead(eastUs);
    const planned = plan(documents, { excludedRegions: ["UK South"] }, request);
    assert.ok(planned.kind === "race" && planned.hedges !== undefined);
    health.noteResponse("North Europe", forbidden(northEurope, "1008"));
    assert.equal(documents.stillOpen(request, "pointRead", planned.primary, { excludedRegions: ["UK South"] }, planned.hedges), "singleRegion");
    assert.equal(arms(documents), "singleRegion");
    clock.tick(5 * 60_000 - 1);
    assert.equal(arms(documents), "singleRegion");
    clock.tick(1);
    assert.deepEqual(arms(documents), ["East US", "West US", "North Europe"]);
  });

  it("keeps the regions the SDK's breaker moved a read's partition off out of its hedges, for that read only, never the primary", () => {
    const movedOff = new Map<object, readonly string[]>();
    const bookkeeping = {
      markForReads: () => false,
      countFailure: () => false,
      attemptOf: () => undefined,
      partitionMovedOff: (request: object): readonly string[] => movedOff.get(request) ?? [],
    };
    const watched = new RegionHealth(regions, {
      routing: "preferred",
      throttling: crossRegionHedgingDefaults,
      sdkBreaker: { active: () => true, readTimeoutMs: 2000, bookkeeping },
    });
    const planner = new HedgePlanner(regions, new CrossRegionTiming({ enabled: true, explicit: fixed, followingAccount: fixed, enableMultiWriteRegionHedge: false }), watched);
    const moved = pointRead(eastUs);
    // The SDK's own endpoint strings, the default port written out, as the account lists them.
    movedOff.set(moved, [westUs.endpoint]);
    assert.deepEqual(arms(planner, {}, moved), ["East US", "North Europe"]);
    assert.deepEqual(arms(planner, {}, pointRead(eastUs)), ["East US", "West US", "North Europe"], "another partition's read");
    const planned = plan(planner, { excludedRegions: ["UK South"] }, moved);
    assert.ok(planned.kind === "race" && planned.hedges !== undefined);
    assert.deepEqual(names(planned.hedges), ["North Europe"]);
    movedOff.set(moved, [westUs.endpoint, northEurope.endpoint]);
    assert.equal(planner.stillOpen(moved, "pointRead", planned.primary, { excludedRegions: ["UK South"] }, [westUs, northEurope]), "singleRegion", "moved off since it was planned");
    assert.equal(arms(planner, {}, moved), "singleRegion");
    movedOff.set(moved, [eastUs.endpoint]);
    assert.deepEqual(arms(planner, {}, moved), ["East US", "West US", "North Europe"], "the primary goes where the SDK sent it");
  });

  /** A planner over a region health whose SDK watch has seen a hedge win over East US's `primary` answer (its arm ended at `primaryEndedAt`). */
  function afterHiddenAnswer(sdkBreaker: SdkBreakerSettings, primary: PipelineResponse, primaryEndedAt: number): HedgePlanner {
    const watched = new RegionHealth(regions, { routing: "preferred", throttling: crossRegionHedgingDefaults, sdkBreaker });
    const planner = new HedgePlanner(regions, new CrossRegionTiming({ enabled: true, explicit: fixed, followingAccount: fixed, enableMultiWriteRegionHedge: false }), watched);
    const won = { response: { request: pointRead(westUs), status: 200, headers: createHttpHeaders() } };
    watched.learn({ policy: "crossRegion", operation: "pointRead", thresholdMs: 100, primaryRegion: "East US" }, {
      kind: "decided",
      startedAt: 0,
      result: won,
      returnedIndex: 1,
      fallback: false,
      arms: [
        { index: 0, region: eastUs, reason: "primary", startedAt: 0, endedAt: primaryEndedAt, result: { response: primary } },
        { index: 1, region: westUs, reason: primaryEndedAt < 100 ? "transientResult" : "threshold", startedAt: Math.min(primaryEndedAt, 100), endedAt: 130, result: won },
      ],
      hedgeRefused: false,
      drains: [],
    });
    return planner;
  }

  it("sends a request addressed to a region the SDK's circuit breaker must see fail unhedged, and others as before", () => {
    const planner = afterHiddenAnswer({ active: () => true, readTimeoutMs: 2000 }, { request: pointRead(eastUs), status: 503, headers: createHttpHeaders() }, 20);
    assert.equal(arms(planner), "sdkCircuitBreaker");
    assert.deepEqual(arms(planner, {}, pointRead(westUs)), ["West US", "East US", "North Europe"]);
  });

  it("sends a request addressed to a region whose 403/1008 a hedge hid unhedged, breaker off, so that the SDK's endpoint discovery sees it", () => {
    const gone = { request: pointRead(eastUs), status: 403, headers: createHttpHeaders({ "x-ms-substatus": "1008" }) };
    const planner = afterHiddenAnswer({ active: () => false, readTimeoutMs: 2000, endpointDiscovery: true }, gone, 150);
    assert.equal(arms(planner), "sdkEndpointDiscovery");
    assert.deepEqual(arms(planner, {}, pointRead(westUs)), ["West US", "East US", "North Europe"]);
  });

  it("tells the SDK's breaker watch of a read's fixed threshold where it comes from, and of no write's", () => {
    const told: string[] = [];
    let active = false;
    const sdkBreaker = { active: () => active, readTimeoutMs: 2000, onUnreachableThreshold: (ms: number, source: string) => void told.push(`${source} ${ms}`) };
    const watched = new RegionHealth(regions, { routing: "preferred", throttling: crossRegionHedgingDefaults, sdkBreaker });
    const slow = { ...fixed, thresholdMs: 2000 };
    const planner = new HedgePlanner(regions, new CrossRegionTiming({ enabled: true, explicit: slow, followingAccount: slow, enableMultiWriteRegionHedge: false }), watched);
    assert.deepEqual(arms(planner), ["East US", "West US", "North Europe"], "the read is hedged as planned all the same");
    assert.deepEqual(told, [], "the breaker is off: the SDK does not cut the read");
    active = true;
    const write = requestTo(eastUs, "POST", "dbs/db/colls/c/docs");
    planner.plan(write, "create", regions.regionOf(write.url), {});
    assert.deepEqual(told, [], "the SDK's 2000 ms are a read's");
    arms(planner, { hedging: { threshold: 1999 } });
    assert.deepEqual(told, []);
    arms(planner);
    arms(planner, { hedging: { threshold: 2500 } });
    assert.deepEqual(told, ["options 2000", "request 2500"]);
  });

  it("hedges a write in the write order, never ranked by the read demotions", () => {
    const multiWrite = new RegionCache({ topology: { readRegions: [eastUs, westUs, northEurope], writeRegions: [eastUs, westUs, northEurope], multipleWriteLocations: true } });
    const demoting = new RegionHealth(multiWrite, { routing: "demotion", throttling: crossRegionHedgingDefaults });
    const timing = new CrossRegionTiming({ enabled: true, explicit: fixed, followingAccount: fixed, enableMultiWriteRegionHedge: true });
    const planner = new HedgePlanner(multiWrite, timing, demoting);
    multiWrite.demoteRegion("East US", "North Europe");
    const header = diagnosticsHeader("crossRegion", "create", eastUs, {});
    const hedges = planner.hedges(requestTo(eastUs, "POST", "dbs/db/colls/c/docs", { body: "{}" }), "create", eastUs, {}, header);
    assert.deepEqual(typeof hedges === "string" ? hedges : names(hedges), ["West US", "North Europe"]);
    assert.equal(header.ranking, undefined);
    const readHeader = diagnosticsHeader("crossRegion", "pointRead", eastUs, {});
    const readHedges = planner.hedges(pointRead(eastUs), "pointRead", eastUs, {}, readHeader);
    assert.deepEqual(typeof readHedges === "string" ? readHedges : names(readHedges), ["North Europe", "West US"], "a read of the demoted region is ranked");
  });

  it("refuses a document write on a single-write account, with the threshold in its header", () => {
    const write = documents.plan(requestTo(eastUs, "POST", "dbs/db/colls/c/docs", { body: "{}" }), "create", eastUs, {});
    assert.deepEqual([write.kind, (write as SkipPlan).reason, write.header.thresholdMs], ["skip", "notEligible", 100]);
  });
  it("plans a fixed-threshold race lazily: its hedges are found when the first is due, unless exclusions may leave none", () => {
    const lazy = plan(documents);
    assert.ok(lazy.kind === "race");
    assert.equal(lazy.hedges, undefined, "nothing is looked up for a read that may never hedge");
    const excludedByRequest = plan(documents, { excludedRegions: ["West US"] });
    assert.ok(excludedByRequest.kind === "race");
    assert.deepEqual(names(excludedByRequest.hedges as RegionEndpoint[]), ["North Europe"]);
    regions.setExcludedRegions(["North Europe"]);
    const excludedByClient = plan(documents);
    assert.ok(excludedByClient.kind === "race");
    assert.deepEqual(names(excludedByClient.hedges as RegionEndpoint[]), ["West US"]);
  });
  it("stillOpen: the hedges planned up front without the regions excluded or throttled since, in their order", () => {
    const request = pointRead(eastUs);
    const planned = plan(documents, { excludedRegions: ["UK South"] }, request);
    assert.ok(planned.kind === "race" && planned.hedges !== undefined);
    assert.deepEqual(names(planned.hedges), ["West US", "North Europe"]);
    const stillOpen = () => documents.stillOpen(request, "pointRead", planned.primary, { excludedRegions: ["UK South"] }, planned.hedges ?? []);
    assert.deepEqual(names(stillOpen() as RegionEndpoint[]), ["West US", "North Europe"]);
    health.noteResponse("North Europe", { status: 429, headers: createHttpHeaders({ "x-ms-retry-after-ms": "1000" }), request });
    assert.deepEqual(names(stillOpen() as RegionEndpoint[]), ["West US"]);
    regions.setExcludedRegions(["West US"]);
    assert.equal(stillOpen(), "regionThrottled");
    clock.tick(1000);
    assert.deepEqual(names(stillOpen() as RegionEndpoint[]), ["North Europe"]);
    regions.setExcludedRegions(["West US", "North Europe"]);
    assert.equal(stillOpen(), "singleRegion");
  });
});
