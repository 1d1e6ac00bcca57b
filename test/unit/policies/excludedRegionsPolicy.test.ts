import assert from "node:assert/strict";
import sinon from "sinon";
import { pluginHeaderValue, requestControlHeaders } from "../../../src/cosmos/headers.js";
import { AbortError } from "@azure/abort-controller";
import { createEmptyPipeline, createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { AccountTopologyInit, RegionEndpoint } from "../../../src/topology/regionCache.js";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import type { RequestHedgingOptions } from "../../../src/client/requestOptions.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { requestControlsOf } from "../../../src/request/requestControls.js";
import type { RequestHedgingControls } from "../../../src/request/requestModel.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { excludedRegionsPolicy, excludedRegionsPolicyName, regionSteering } from "../../../src/policies/excludedRegionsPolicy.js";
import { OperationDetection } from "../../../src/diagnostics/detection.js";
import { noteHandedAttempt } from "../../../src/diagnostics/dispatchRecording.js";
import { eastUs, northEurope, requestTo, westUs } from "../../support/hedgingFixtures.js";

const allRegions = ["West US", "East US", "North Europe"];
const singleWrite: AccountTopologyInit = { readRegions: [westUs, eastUs, northEurope], writeRegions: [westUs] };
const multiWrite: AccountTopologyInit = {
  readRegions: [westUs, eastUs, northEurope],
  writeRegions: [westUs, eastUs],
  multipleWriteLocations: true,
};

/** What the transport received: where each request went, its headers, and its controls as the policies saw them. */
interface Sent {
  readonly region: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly controls: RequestHedgingControls;
}

const byOrigin = new Map([westUs, eastUs, northEurope].map((region) => [new URL(region.endpoint).origin, region.name]));

function regionOfUrl(url: string): string {
  return byOrigin.get(new URL(url).origin) ?? new URL(url).host;
}

function respond(request: PipelineRequest, status = 200): PipelineResponse {
  return { request, status, headers: createHttpHeaders({ "x-ms-request-charge": "1" }), bodyAsText: "{}" };
}

/** A transport that records each request and answers 200 at once. */
function recordingClient(sent: Sent[]): HttpClient {
  return {
    async sendRequest(request) {
      sent.push({ region: regionOfUrl(request.url), url: request.url, headers: request.headers.toJSON(), controls: requestControlsOf(request) });
      return respond(request);
    },
  };
}

function routedPipeline(regions: RegionCache) {
  const sent: Sent[] = [];
  const pipeline = createEmptyPipeline();
  pipeline.addPolicy(excludedRegionsPolicy({ regions }));
  const client = recordingClient(sent);
  return { sent, send: (request: PipelineRequest) => pipeline.sendRequest(client, request) };
}

function withOptions(request: PipelineRequest, options: RequestHedgingOptions): PipelineRequest {
  for (const [name, value] of Object.entries(hedgingRequestOptions(options).initialHeaders)) request.headers.set(name, value);
  return request;
}

function read(region: RegionEndpoint, options: RequestHedgingOptions = {}): PipelineRequest {
  return withOptions(requestTo(region, "GET", "dbs/db/colls/c/docs/1"), options);
}

function queryOn(region: RegionEndpoint, options: RequestHedgingOptions = {}): PipelineRequest {
  return withOptions(
    requestTo(region, "POST", "dbs/db/colls/c/docs", {
      headers: { "x-ms-documentdb-isquery": "true", "content-type": "application/query+json" },
      body: '{"query":"SELECT * FROM c"}',
    }),
    options,
  );
}

function create(region: RegionEndpoint, options: RequestHedgingOptions = {}): PipelineRequest {
  return withOptions(requestTo(region, "POST", "dbs/db/colls/c/docs", { body: '{"id":"1"}' }), options);
}

function cache(topology: AccountTopologyInit = singleWrite, preferredRegions: readonly string[] = allRegions): RegionCache {
  return new RegionCache({ topology, preferredRegions });
}

describe("excludedRegionsPolicy", function () {
  describe("options", function () {
    it("is named like the other core-rest-pipeline policies", function () {
      assert.equal(excludedRegionsPolicy().name, excludedRegionsPolicyName);
      assert.equal(excludedRegionsPolicyName, "excludedRegionsPolicy");
    });

    it("rejects options that are not an object and regions that are not a RegionCache", function () {
      assert.throws(() => excludedRegionsPolicy(null as never), /excludedRegionsPolicy options must be an object; got null/);
      assert.throws(() => excludedRegionsPolicy({ regions: {} as never }), /regions must be a RegionCache; got an? object/);
    });
  });

  describe("exclusions", function () {
    it("leaves a request alone when its region is not excluded", async function () {
      const { sent, send } = routedPipeline(cache());
      const request = read(westUs);
      const url = request.url;
      await send(request);
      assert.deepEqual(sent.map((s) => [s.region, s.url]), [["West US", url]]);
      assert.equal(sent[0]!.controls.routing, undefined);
    });

    it("re-points a request whose region is excluded at the request level, keeping path and query", async function () {
      const { sent, send } = routedPipeline(cache());
      await send(withOptions(requestTo(westUs, "GET", "dbs/db/colls/c/docs/1?x=1"), { excludedRegions: ["westus"] }));
      assert.equal(sent[0]!.url, "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1?x=1");
      assert.deepEqual(sent[0]!.controls.routing, { sdkRegion: "West US", rerouteReason: "excludedRegion" });
    });

    it("follows client-level exclusions changed at runtime, from the next request on", async function () {
      const regions = cache();
      const { sent, send } = routedPipeline(regions);
      await send(read(westUs));
      regions.setExcludedRegions(["West US"]);
      await send(read(westUs));
      await send(queryOn(westUs));
      regions.setExcludedRegions([]);
      await send(read(westUs));
      assert.deepEqual(sent.map((s) => s.region), ["West US", "East US", "East US", "West US"]);
    });

    it("unites client-level and request-level exclusions", async function () {
      const regions = cache();
      regions.setExcludedRegions(["East US"]);
      const { sent, send } = routedPipeline(regions);
      await send(read(westUs, { excludedRegions: ["West US"] }));
      assert.equal(sent[0]!.region, "North Europe");
    });

    it("picks the first region in the preferred order, not the account's", async function () {
      const { sent, send } = routedPipeline(cache(singleWrite, ["North Europe", "West US", "East US"]));
      await send(read(westUs, { excludedRegions: ["West US"] }));
      assert.equal(sent[0]!.region, "North Europe");
    });

    it("sends the request where the SDK sent it, and says so, when exclusions leave no region", async function () {
      const regions = cache();
      regions.setExcludedRegions(["East US", "North Europe"]);
      const { sent, send } = routedPipeline(regions);
      const response = await send(read(westUs, { excludedRegions: ["West US"] }));
      assert.equal(response.status, 200);
      assert.equal(sent[0]!.region, "West US");
      assert.deepEqual(sent[0]!.controls.routing, { exclusionsIgnored: true });
    });

    it("leaves a request where the SDK sent it when only the SDK's own excludedLocations exclude that region: the SDK chose it all the same", async function () {
      // The SDK's partition-level circuit breaker sends a partition's reads to the region it moved it to, its exclusions notwithstanding.
      const sdkExcluding = (region: RegionEndpoint, excluded: string): PipelineRequest => {
        const request = read(region);
        request.headers.set(requestControlHeaders.sdkExcludedRegions, pluginHeaderValue(JSON.stringify([excluded])));
        return request;
      };
      const regions = cache();
      const { sent, send } = routedPipeline(regions);
      await send(sdkExcluding(eastUs, "East US"));
      assert.deepEqual([sent[0]!.region, sent[0]!.controls.routing], ["East US", undefined]);
      assert.deepEqual(sent[0]!.controls.sdkOnlyExcludedRegions, ["East US"]);
      await send(withOptions(sdkExcluding(eastUs, "North Europe"), { excludedRegions: ["East US"] }));
      assert.deepEqual([sent[1]!.region, sent[1]!.controls.routing], ["West US", { sdkRegion: "East US", rerouteReason: "excludedRegion" }], "an exclusion of the request's own, which the SDK does not know, still steers");
      // hostile review of fa91e7d: hedgingRequestOptions hands its regions to the SDK as well; they are this package's all the same.
      await send(withOptions(sdkExcluding(eastUs, "eastus"), { excludedRegions: ["East US"] }));
      assert.deepEqual([sent[2]!.region, sent[2]!.controls.routing], ["West US", { sdkRegion: "East US", rerouteReason: "excludedRegion" }], "the request's own exclusion, also the SDK's");
      assert.deepEqual(sent[2]!.controls.sdkOnlyExcludedRegions, []);
      regions.setExcludedRegions(["East US"]);
      await send(sdkExcluding(eastUs, "East US"));
      assert.deepEqual([sent[3]!.region, sent[3]!.controls.routing], ["West US", { sdkRegion: "East US", rerouteReason: "excludedRegion" }], "the client's own exclusions still steer");
    });

    it("never re-points a request to a region the SDK's breaker moved its partition off", function () {
      const regions = cache();
      regions.setExcludedRegions(["East US"]);
      const movedOff = new Map<PipelineRequest, readonly string[]>();
      const steering = regionSteering(regions, (request) => movedOff.get(request) ?? []);
      const moved = read(eastUs);
      movedOff.set(moved, [westUs.endpoint]);
      steering.apply(moved, "pointRead", requestControlsOf(moved));
      assert.equal(regionOfUrl(moved.url), "North Europe");
      const other = read(eastUs);
      steering.apply(other, "pointRead", requestControlsOf(other));
      assert.equal(regionOfUrl(other.url), "West US", "another partition's read");
      const nowhere = read(eastUs);
      movedOff.set(nowhere, [westUs.endpoint, northEurope.endpoint]);
      assert.deepEqual(steering.apply(nowhere, "pointRead", requestControlsOf(nowhere)).routing, { exclusionsIgnored: true });
      assert.equal(regionOfUrl(nowhere.url), "East US", "where the SDK sent it, when nothing else is left");
    });

    it("never moves a write to a read-only region", async function () {
      const { sent, send } = routedPipeline(cache(multiWrite));
      await send(create(westUs, { excludedRegions: ["West US"] }));
      await send(create(westUs, { excludedRegions: ["West US", "East US"] }));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "West US"]);
      assert.deepEqual(sent[0]!.controls.routing, { sdkRegion: "West US", rerouteReason: "excludedRegion" });
      assert.deepEqual(sent[1]!.controls.routing, { exclusionsIgnored: true });
    });

    it("leaves a write on a single-write account in its one write region", async function () {
      const regions = cache(singleWrite);
      regions.setExcludedRegions(["West US"]);
      const { sent, send } = routedPipeline(regions);
      await send(create(westUs));
      assert.equal(sent[0]!.region, "West US");
      assert.deepEqual(sent[0]!.controls.routing, { exclusionsIgnored: true });
    });

    it("steers the Collection read and the first PartitionKeyRange page, and leaves other requests alone", async function () {
      const regions = cache();
      regions.setExcludedRegions(["West US"]);
      const { sent, send } = routedPipeline(regions);
      await send(requestTo(westUs, "GET", "dbs/db/colls/c"));
      await send(requestTo(westUs, "GET", "dbs/db/colls/c/pkranges"));
      await send(requestTo(westUs, "POST", "dbs/db/colls/c/sprocs/s"));
      await send(requestTo(westUs, "GET", "dbs/db"));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "East US", "West US", "West US"]);
    });

    it("leaves a request to a host that is not a known region alone", async function () {
      const regions = cache();
      regions.setExcludedRegions(["West US", "East US"]);
      const { sent, send } = routedPipeline(regions);
      await send(requestTo({ name: "global", endpoint: "https://acct.documents.azure.com:443/" }, "GET", "dbs/db/colls/c/docs/1"));
      assert.equal(sent[0]!.region, "acct.documents.azure.com");
    });

    it("passes everything through while the account's regions are unknown", async function () {
      const { sent, send } = routedPipeline(new RegionCache({ excludedRegions: ["West US"] }));
      await send(read(westUs, { excludedRegions: ["West US"] }));
      assert.equal(sent[0]!.region, "West US");
    });

    it("never re-points an https request at an http endpoint", async function () {
      const plain: RegionEndpoint = { name: "East US", endpoint: "http://acct-eastus.documents.azure.com:80/" };
      const regions = new RegionCache({ topology: { readRegions: [westUs, plain, northEurope] }, preferredRegions: allRegions });
      const { sent, send } = routedPipeline(regions);
      await send(read(westUs, { excludedRegions: ["West US"] }));
      assert.equal(sent[0]!.region, "North Europe");
    });
  });

  describe("a region chosen for the request", function () {
    it("re-points a read at any read region named in any case and spacing", async function () {
      const { sent, send } = routedPipeline(cache());
      await send(read(westUs, { region: "northeurope" }));
      assert.equal(sent[0]!.region, "North Europe");
      assert.deepEqual(sent[0]!.controls.routing, { sdkRegion: "West US", rerouteReason: "pinnedRegion" });
    });

    it("leaves a request already in the chosen region alone", async function () {
      const { sent, send } = routedPipeline(cache());
      await send(read(eastUs, { region: "East US" }));
      assert.equal(sent[0]!.region, "East US");
      assert.equal(sent[0]!.controls.routing, undefined);
    });

    it("fails a request pinned to a region the client excludes before anything is sent, naming both", async function () {
      const regions = cache();
      regions.setExcludedRegions(["North Europe"]);
      const { sent, send } = routedPipeline(regions);
      await assert.rejects(send(read(westUs, { region: "north europe" })), (error: unknown) => {
        assert.ok(error instanceof RangeError);
        assert.equal(
          error.message,
          `Cannot send this read to region "north europe": the client's excludedRegions ("North Europe") exclude it.`,
        );
        return true;
      });
      assert.deepEqual(sent, []);
    });

    it("fails a request pinned to a region outside the account the client serves, without re-pointing it", async function () {
      const { sent, send } = routedPipeline(cache());
      const otherAccount = { name: "West US", endpoint: "https://other-westus.documents.azure.com:443/" };
      await assert.rejects(send(read(otherAccount, { region: "East US" })), /addressed to "https:\/\/other-westus\.documents\.azure\.com", which is not an endpoint of the account this hedging client serves/);
      assert.deepEqual(sent, []);
    });

    it("sends a write to a chosen write region", async function () {
      const { sent, send } = routedPipeline(cache(multiWrite));
      await send(create(westUs, { region: "East US" }));
      assert.equal(sent[0]!.region, "East US");
    });

    it("fails a write to a region that is not a write region before anything is sent, naming both", async function () {
      const { sent, send } = routedPipeline(cache(singleWrite));
      await assert.rejects(send(create(westUs, { region: "East US" })), (error: unknown) => {
        assert.ok(error instanceof RangeError);
        assert.equal(
          error.message,
          `Cannot send this write to region "East US": it is not a write region of the account; its write regions are "West US".`,
        );
        return true;
      });
      assert.deepEqual(sent, []);
    });

    it("fails a read to a region the account does not have, naming the read regions", async function () {
      const { sent, send } = routedPipeline(cache());
      await assert.rejects(send(read(westUs, { region: "Mars Central" })), /region "Mars Central": it is not a read region of the account; its read regions are "West US", "East US", "North Europe"/);
      assert.deepEqual(sent, []);
    });

    it("fails a request pinned while the account's regions are still unknown", async function () {
      const { sent, send } = routedPipeline(new RegionCache());
      await assert.rejects(send(read(westUs, { region: "East US" })), /the account's regions are not known yet/);
      assert.deepEqual(sent, []);
    });

    it("refuses to pin an https request to an http endpoint", async function () {
      const plain: RegionEndpoint = { name: "East US", endpoint: "http://acct-eastus.documents.azure.com:80/" };
      const { sent, send } = routedPipeline(new RegionCache({ topology: { readRegions: [westUs, plain] } }));
      await assert.rejects(send(read(westUs, { region: "East US" })), /its endpoint has another scheme than the request/);
      assert.deepEqual(sent, []);
    });
  });

  describe("a preferred order changed at runtime", function () {
    it("leaves reads to the SDK while the order is the one the client was created with", async function () {
      const regions = cache();
      const { sent, send } = routedPipeline(regions);
      await send(read(westUs));
      regions.setPreferredRegions(["west us", "EastUS", "North Europe"]);
      await send(read(westUs));
      assert.deepEqual(sent.map((s) => s.region), ["West US", "West US"]);
      assert.equal(regions.preferredRegionsChangedAtRuntime, false);
    });

    it("moves reads the SDK sent to its first choice, from the next request on, and back when restored", async function () {
      const regions = cache();
      const { sent, send } = routedPipeline(regions);
      regions.setPreferredRegions(["North Europe", "East US", "West US"]);
      await send(read(westUs));
      await send(queryOn(westUs));
      regions.setPreferredRegions(allRegions);
      await send(read(westUs));
      assert.deepEqual(sent.map((s) => s.region), ["North Europe", "North Europe", "West US"]);
      assert.deepEqual(sent[0]!.controls.routing, { sdkRegion: "West US", rerouteReason: "preferredRegions" });
    });

    it("leaves reads the SDK sent elsewhere (its failover or retries) alone", async function () {
      const regions = cache();
      const { sent, send } = routedPipeline(regions);
      regions.setPreferredRegions(["North Europe", "East US", "West US"]);
      await send(read(eastUs));
      assert.equal(sent[0]!.region, "East US");
    });

    it("never moves a retry of the SDK's, even one sent back to its first choice: the SDK chose that region on purpose", async function () {
      const regions = cache();
      const { sent, send } = routedPipeline(regions);
      regions.setPreferredRegions(["North Europe", "East US", "West US"]);
      const retry = read(westUs);
      retry.headers.set(requestControlHeaders.sdkRetry, pluginHeaderValue("retry"));
      await send(retry);
      await send(read(westUs));
      assert.deepEqual(sent.map((s) => s.region), ["West US", "North Europe"], "the first attempt moves; the retry does not");
      assert.equal(sent[0]!.controls.routing, undefined);
    });

    it("takes the SDK's first choice from the account's order when the client had no preferred regions", async function () {
      const regions = cache(singleWrite, []);
      const { sent, send } = routedPipeline(regions);
      regions.setPreferredRegions(["East US"]);
      await send(read(westUs));
      await send(read(northEurope));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "North Europe"]);
    });

    it("skips excluded regions of the new order", async function () {
      const regions = cache();
      const { sent, send } = routedPipeline(regions);
      regions.setPreferredRegions(["North Europe", "East US", "West US"]);
      await send(read(westUs, { excludedRegions: ["North Europe"] }));
      assert.equal(sent[0]!.region, "East US");
    });

    it("does not move writes", async function () {
      const regions = cache(multiWrite);
      const { sent, send } = routedPipeline(regions);
      regions.setPreferredRegions(["East US", "West US"]);
      await send(create(westUs));
      assert.equal(sent[0]!.region, "West US");
    });
  });

  describe("the SDK's retries within one operation", function () {
    /**
     * Sends an attempt of `operation` as the hedging layer does: handed over by the SDK's plugin (a retry carries its
     * marker), then noted in the operation's detection record where it went.
     */
    function operationPipeline(regions: RegionCache) {
      const { sent, send } = routedPipeline(regions);
      return {
        sent,
        async send(operation: OperationDetection, request: PipelineRequest, retry = true): Promise<void> {
          noteHandedAttempt(request, operation);
          if (retry) request.headers.set(requestControlHeaders.sdkRetry, pluginHeaderValue("retry"));
          await send(request);
          operation.requestSent(sent.at(-1)!.region, retry ? "regionFailover" : "initial");
          operation.requestEnded(sent.at(-1)!.region, true, 1);
        },
      };
    }

    it("sends a failover the SDK moved onto the region its re-pointed first attempt used to the applicable region after that one", async function () {
      const { sent, send } = operationPipeline(cache());
      const operation = new OperationDetection();
      const excluded = { excludedRegions: ["West US"] };
      await send(operation, read(westUs, excluded), false);
      await send(operation, read(eastUs, excluded));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "North Europe"]);
      assert.deepEqual(sent[1]!.controls.routing, { sdkRegion: "East US", rerouteReason: "excludedRegion" });
    });

    it("sends a retry in place where the first attempt went", async function () {
      const { sent, send } = operationPipeline(cache());
      const operation = new OperationDetection();
      const excluded = { excludedRegions: ["West US"] };
      await send(operation, read(westUs, excluded), false);
      await send(operation, read(westUs, excluded));
      await send(operation, read(eastUs, excluded));
      await send(operation, read(eastUs, excluded));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "East US", "North Europe", "North Europe"]);
    });

    it("steers a failover the SDK sent to an excluded region to the applicable region after the one its last request used", async function () {
      const { sent, send } = operationPipeline(cache());
      const operation = new OperationDetection();
      const excluded = { excludedRegions: ["East US"] };
      await send(operation, read(westUs, excluded), false);
      await send(operation, read(eastUs, excluded));
      assert.deepEqual(sent.map((s) => s.region), ["West US", "North Europe"]);
      assert.deepEqual(sent[1]!.controls.routing, { sdkRegion: "East US", rerouteReason: "excludedRegion" });
    });

    it("walks round the applicable regions as the SDK's own exclusions would, once every one was used", async function () {
      const { sent, send } = operationPipeline(cache());
      const operation = new OperationDetection();
      const excluded = { excludedRegions: ["West US", "North Europe"] };
      await send(operation, read(westUs, excluded), false);
      await send(operation, read(eastUs, excluded));
      await send(operation, read(northEurope, excluded));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "East US", "East US"]);
    });

    it("keeps each operation's walk its own", async function () {
      const { sent, send } = operationPipeline(cache());
      const [first, second] = [new OperationDetection(), new OperationDetection()];
      const excluded = { excludedRegions: ["West US"] };
      await send(first, read(westUs, excluded), false);
      await send(second, read(eastUs, excluded), false);
      await send(first, read(eastUs, excluded));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "East US", "North Europe"]);
    });

    it("moves a failover onto the region a runtime order gave the first attempt to the order's next region", async function () {
      const regions = cache();
      const { sent, send } = operationPipeline(regions);
      regions.setPreferredRegions(["East US", "West US", "North Europe"]);
      const operation = new OperationDetection();
      await send(operation, read(westUs), false);
      await send(operation, read(eastUs));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "West US"]);
      assert.deepEqual(sent[1]!.controls.routing, { sdkRegion: "East US", rerouteReason: "preferredRegions" });
    });

    it("walks round to the first applicable region, as a timeout failover of the SDK's own exclusions does", async function () {
      const { sent, send } = operationPipeline(cache());
      const operation = new OperationDetection();
      const excluded = { excludedRegions: ["West US"] };
      await send(operation, read(westUs, excluded), false);
      await send(operation, read(eastUs, excluded));
      await send(operation, read(northEurope, excluded));
      await send(operation, read(westUs, excluded));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "North Europe", "East US", "North Europe"]);
    });

    it("leaves the SDK's own walk alone in an operation nothing re-pointed", async function () {
      const { sent, send } = operationPipeline(cache());
      const operation = new OperationDetection();
      const excluded = { excludedRegions: ["North Europe"] };
      await send(operation, read(eastUs, excluded), false);
      // The SDK's own choice (its session retry in the write region, say), not the next region of a walk.
      await send(operation, read(westUs, excluded));
      await send(operation, read(westUs, excluded));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "West US", "West US"]);
      assert.equal(sent[1]!.controls.routing, undefined);
    });

    it("moves a failover into a region excluded since the first attempt to the region after the one that attempt used", async function () {
      const regions = cache();
      const { sent, send } = operationPipeline(regions);
      const operation = new OperationDetection();
      await send(operation, read(westUs), false);
      regions.setExcludedRegions(["East US"]);
      await send(operation, read(eastUs));
      assert.deepEqual(sent.map((s) => s.region), ["West US", "North Europe"]);
    });

    it("walks on from a re-pointed attempt after the exclusions are lifted", async function () {
      const regions = cache();
      const { sent, send } = operationPipeline(regions);
      const operation = new OperationDetection();
      regions.setExcludedRegions(["West US"]);
      await send(operation, read(westUs), false);
      regions.setExcludedRegions([]);
      await send(operation, read(eastUs));
      await send(new OperationDetection(), read(westUs), false);
      assert.deepEqual(sent.map((s) => s.region), ["East US", "North Europe", "West US"]);
    });

    it("without an operation (no SDK plugin), steers each request on its own", async function () {
      const { sent, send } = routedPipeline(cache());
      const excluded = { excludedRegions: ["West US"] };
      await send(read(westUs, excluded));
      await send(read(eastUs, excluded));
      assert.deepEqual(sent.map((s) => s.region), ["East US", "East US"]);
    });
  });

  describe("control headers", function () {
    const everything: RequestHedgingOptions = { excludedRegions: ["North Europe"], region: "West US", hedging: { threshold: 5 } };

    for (const [what, build] of [
      ["a point read", () => read(westUs, everything)],
      ["a query", () => queryOn(westUs, everything)],
      ["a create", () => create(westUs, everything)],
      ["a collection read", () => withOptions(requestTo(westUs, "GET", "dbs/db/colls/c"), everything)],
      ["a stored procedure call", () => withOptions(requestTo(westUs, "POST", "dbs/db/colls/c/sprocs/s"), everything)],
      ["an account read", () => withOptions(requestTo(westUs, "GET", ""), everything)],
    ] as const) {
      it(`are removed from ${what} before it is sent`, async function () {
        const { sent, send } = routedPipeline(cache(multiWrite));
        await send(build());
        assert.equal(sent.length, 1);
        assert.deepEqual(Object.keys(sent[0]!.headers).filter((name) => name.startsWith("x-cosmos-hedging")), []);
      });
    }
  });

  it("learns the account's regions from a database-account read it passes", async function () {
    const regions = new RegionCache();
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(excludedRegionsPolicy({ regions }));
    const body = JSON.stringify({
      readableLocations: [westUs, eastUs].map(({ name, endpoint }) => ({ name, databaseAccountEndpoint: endpoint })),
      writableLocations: [{ name: westUs.name, databaseAccountEndpoint: westUs.endpoint }],
    });
    await pipeline.sendRequest({ sendRequest: async (request) => ({ ...respond(request), bodyAsText: body }) }, requestTo(westUs, "GET", ""));
    assert.deepEqual(regions.topology?.readRegions.map((r) => r.name), ["West US", "East US"]);
  });
});

describe("excludedRegionsPolicy ahead of crossRegionHedgingPolicy", function () {
  let clock: sinon.SinonFakeTimers;

  beforeEach(function () {
    clock = sinon.useFakeTimers();
  });

  afterEach(function () {
    clock.restore();
  });

  /** A transport whose regions answer after fixed (fake-clock) delays, honouring aborts. */
  function slowClient(delays: Record<string, number>, arrivals: string[]): HttpClient {
    return {
      sendRequest(request) {
        const region = regionOfUrl(request.url);
        arrivals.push(region);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => resolve(respond(request)), delays[region] ?? 0);
          request.abortSignal?.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(new AbortError("aborted"));
          });
        });
      },
    };
  }

  function hedgedPipeline(regions: RegionCache, delays: Record<string, number>) {
    const arrivals: string[] = [];
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(excludedRegionsPolicy({ regions }));
    pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold: 100, thresholdStep: 100 }));
    const client = slowClient(delays, arrivals);
    const send = async (request: PipelineRequest) => {
      const pending = pipeline.sendRequest(client, request);
      await clock.tickAsync(1000);
      return pending;
    };
    return { arrivals, send };
  }

  it("keeps every hedge away from regions the request excludes", async function () {
    const { arrivals, send } = hedgedPipeline(cache(), { "West US": 500, "East US": 500, "North Europe": 50 });
    const response = await send(read(westUs, { excludedRegions: ["East US"] }));
    assert.deepEqual(arrivals, ["West US", "North Europe"]);
    assert.equal(getHedgeDiagnostics(response)?.winningRegion, "North Europe");
  });

  it("hedges from the region it re-pointed the primary at", async function () {
    const regions = cache();
    regions.setExcludedRegions(["West US"]);
    const { arrivals, send } = hedgedPipeline(regions, { "East US": 500 });
    const response = await send(read(westUs));
    assert.deepEqual(arrivals, ["East US", "North Europe"]);
    assert.equal(getHedgeDiagnostics(response)?.primaryRegion, "East US");
  });

  it("does not hedge a request pinned to a region", async function () {
    const { arrivals, send } = hedgedPipeline(cache(), { "North Europe": 500 });
    const response = await send(read(westUs, { region: "North Europe" }));
    assert.deepEqual(arrivals, ["North Europe"]);
    assert.equal(getHedgeDiagnostics(response)?.skipReason, "pinnedRegion");
  });

  it("turns hedging off for one request only", async function () {
    const { arrivals, send } = hedgedPipeline(cache(), { "West US": 500 });
    await send(read(westUs, { hedging: false }));
    assert.deepEqual(arrivals, ["West US"]);
    await send(read(westUs));
    assert.deepEqual(arrivals, ["West US", "West US", "East US"]);
  });

  it("moves the primary and the hedge order with a preferred order changed at runtime", async function () {
    const regions = cache();
    regions.setPreferredRegions(["North Europe", "West US", "East US"]);
    const { arrivals, send } = hedgedPipeline(regions, { "North Europe": 500, "West US": 500 });
    const response = await send(read(westUs));
    assert.deepEqual(arrivals, ["North Europe", "West US", "East US"]);
    assert.equal(getHedgeDiagnostics(response)?.winningRegion, "East US");
  });
});
