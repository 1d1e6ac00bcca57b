import assert from "node:assert/strict";
import { createEmptyPipeline, createHttpHeaders } from "@azure/core-rest-pipeline";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../src/topology/regionCache.js";
import type { RegionEndpoint } from "../../src/topology/regionCache.js";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import { hedgingRequestOptions } from "../../src/client/requestOptions.js";
import { withHedging } from "../../src/client/withHedging.js";
import { sdkRequestPlugin } from "../../src/cosmos/sdkRequestPlugin.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { redactCredentials } from "../../src/diagnostics/redact.js";
import { requestControlHeaders } from "../../src/cosmos/headers.js";
import { requestControlsOf } from "../../src/request/requestControls.js";
import { crossRegionHedgingPolicy } from "../../src/policies/crossRegionHedgingPolicy.js";
import { excludedRegionsPolicy } from "../../src/policies/excludedRegionsPolicy.js";
import { metadataHedgingPolicy } from "../../src/policies/metadataHedgingPolicy.js";
import { eastUs, northEurope, observe, pointRead, requestTo, westUs } from "../support/hedgingFixtures.js";
import { captureAzureLogs } from "../support/logCapture.js";
import { useRaceHarness } from "../support/raceHarness.js";

const threeRegions = { readRegions: [eastUs, westUs, northEurope] };
const slow = 1000;

function accountRead(region: RegionEndpoint): PipelineRequest {
  return requestTo(region, "GET", "");
}

function accountResponse(request: PipelineRequest, regions: readonly RegionEndpoint[]): PipelineResponse {
  const locations = regions.map((region) => ({ name: region.name, databaseAccountEndpoint: region.endpoint }));
  return {
    request,
    status: 200,
    headers: createHttpHeaders(),
    bodyAsText: JSON.stringify({ readableLocations: locations, writableLocations: locations.slice(0, 1) }),
  };
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

    it("metadataHedgingPolicy rejects a threshold at 2^31 - 1 ms", function () {
      assert.throws(() => metadataHedgingPolicy({ threshold: 2 ** 31 - 1, requestTimeout: 2 ** 31 - 2 }), /^RangeError: threshold must be/);
    });

    it("hedgingRequestOptions rejects a per-request threshold at 2^31 - 1 ms", function () {
      assert.throws(() => hedgingRequestOptions({ hedging: { threshold: 2 ** 31 - 1 } }), /^RangeError: hedging\.threshold must be/);
    });
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

  describe("withHedging's connectionPolicy", function () {
    it("names the SDK option the caller wrote when its requestTimeout is bad, not the policy option it feeds", function () {
      assert.throws(
        () => withHedging({ endpoint: "https://acct.documents.azure.com/", connectionPolicy: { requestTimeout: -1 } }),
        /^RangeError: connectionPolicy\.requestTimeout must be a finite number of milliseconds above 0 and below 2147483647; got -1\.$/,
      );
    });
  });

  describe("a hedging client wrapped in another", function () {
    it("is refused: withHedging applied twice would race every arm again", function () {
      const once = withHedging({ endpoint: "https://acct.documents.azure.com/", key: Buffer.from("k").toString("base64") });
      assert.throws(() => withHedging(once), /^TypeError: httpClient is already a hedging client/);
      assert.throws(() => createHedgingHttpClient({ httpClient: once.httpClient }), /^TypeError: httpClient is already a hedging client/);
    });
  });

  describe("redaction", function () {
    it("removes a signature URL-encoded once, twice or three times", function () {
      for (const text of [
        "failed: sig=abc123DEF%2B",
        "failed: type%3Dmaster%26ver%3D1.0%26sig%3Dabc123",
        "failed: type%253Dmaster%2526ver%253D1.0%2526sig%253Dabc123",
        "failed: auth sig%25253Dabc123",
        "failed: type%25253Dmaster%252526ver%25253D1.0",
      ]) {
        const redacted = redactCredentials(text);
        assert.ok(!redacted.includes("abc123"), `${text} -> ${redacted}`);
        assert.ok(redacted.includes("[redacted]"));
      }
    });
  });

  describe("the @azure/cosmos request plugin", function () {
    it("copies the SDK's excludedLocations into the control header, an empty list when there are none", async function () {
      const client = {};
      const plugin = sdkRequestPlugin(client);
      const headers: Record<string, unknown> = {};
      let passed: unknown;
      await plugin.plugin({ headers, options: { excludedLocations: ["East US", "Zürich"] }, httpClient: client }, undefined, async (context) => {
        passed = context;
        return "response";
      });
      assert.equal(headers[requestControlHeaders.sdkExcludedRegions], '["East US","Z\\u00fcrich"]');
      const request = pointRead(westUs);
      request.headers.set(requestControlHeaders.sdkExcludedRegions, String(headers[requestControlHeaders.sdkExcludedRegions]));
      const controls = requestControlsOf(request);
      assert.deepEqual(controls.excludedRegions, ["East US", "Zürich"]);
      assert.equal(controls.sdkOptionsKnown, true);
      assert.equal(request.headers.has(requestControlHeaders.sdkExcludedRegions), false, "never reaches the wire");
      assert.ok(passed !== undefined);

      assert.equal(headers[requestControlHeaders.sdkRetry], undefined, "a first attempt carries no retry marker");
      const retried: Record<string, unknown> = {};
      await plugin.plugin({ headers: retried, retryCount: 2, httpClient: client }, undefined, async () => undefined);
      assert.equal(retried[requestControlHeaders.sdkRetry], "2");
      // What @azure/cosmos 4.10.1 holds on a retry: a field it never set, incremented.
      const sdkRetried: Record<string, unknown> = {};
      await plugin.plugin({ headers: sdkRetried, retryCount: Number.NaN, httpClient: client }, undefined, async () => undefined);
      assert.equal(sdkRetried[requestControlHeaders.sdkRetry], "retry");
      const marked = pointRead(westUs);
      marked.headers.set(requestControlHeaders.sdkExcludedRegions, "[]");
      marked.headers.set(requestControlHeaders.sdkRetry, "2");
      assert.equal(requestControlsOf(marked).sdkRetry, true);
      assert.equal(marked.headers.has(requestControlHeaders.sdkRetry), false);

      const bare: Record<string, unknown> = {};
      await plugin.plugin({ headers: bare, httpClient: client }, undefined, async () => undefined);
      assert.equal(bare[requestControlHeaders.sdkExcludedRegions], "[]");
    });

    it("adds the SDK's exclusions to the request's own, which an empty SDK list leaves alone", function () {
      const request = pointRead(westUs);
      const own = hedgingRequestOptions({ excludedRegions: ["North Europe"] }).initialHeaders;
      for (const [name, value] of Object.entries(own)) request.headers.set(name, value);
      request.headers.set(requestControlHeaders.sdkExcludedRegions, '["East US"]');
      assert.deepEqual(requestControlsOf(request).excludedRegions, ["North Europe", "East US"]);
    });

    it("warns once when the SDK does not send through the hedging httpClient (an SDK before 4.1.0 ignores the option)", async function () {
      const logs = captureAzureLogs("warning");
      try {
        const plugin = sdkRequestPlugin({});
        for (let i = 0; i < 3; i++) await plugin.plugin({ headers: {} }, undefined, async () => undefined);
        const warnings = logs.packageLines().filter((line) => line.includes("does not send its requests through the hedging httpClient"));
        assert.equal(warnings.length, 1);
      } finally {
        logs.restore();
      }
    });
  });

  describe("one RegionCache, one account", function () {
    const otherAccount: RegionEndpoint[] = [
      { name: "East US", endpoint: "https://other-eastus.documents.azure.com:443/" },
      { name: "West US", endpoint: "https://other-westus.documents.azure.com:443/" },
    ];

    it("learns from the first account's response and ignores another account's, with one warning", function () {
      const logs = captureAzureLogs("warning");
      try {
        const regions = new RegionCache();
        const first = accountRead({ name: "global", endpoint: "https://acct.documents.azure.com:443/" });
        assert.equal(regions.observe(first, accountResponse(first, [eastUs, westUs])), true);
        assert.equal(regions.accountEndpoint, "https://acct.documents.azure.com");
        for (let i = 0; i < 2; i++) {
          const other = accountRead({ name: "global", endpoint: "https://other.documents.azure.com:443/" });
          assert.equal(regions.observe(other, accountResponse(other, otherAccount)), false);
        }
        assert.deepEqual(regions.topology?.readRegions.map((region) => region.name), ["East US", "West US"]);
        assert.equal(regions.regionOf("https://other-westus.documents.azure.com/dbs/db"), undefined);
        assert.equal(logs.packageLines().filter((line) => line.includes("ignoring the database account read from https://other.documents.azure.com")).length, 1);
        // The account's own regional endpoints keep teaching it.
        const regional = accountRead(westUs);
        assert.equal(regions.observe(regional, accountResponse(regional, [westUs, eastUs])), true);
        assert.deepEqual(regions.topology?.readRegions.map((region) => region.name), ["West US", "East US"]);
      } finally {
        logs.restore();
      }
    });

    it("with accountEndpoint, ignores every other account even before it has learned anything", function () {
      const regions = new RegionCache({ accountEndpoint: "https://acct.documents.azure.com:443/" });
      const other = accountRead({ name: "global", endpoint: "https://other.documents.azure.com:443/" });
      const logs = captureAzureLogs("warning");
      try {
        assert.equal(regions.observe(other, accountResponse(other, otherAccount)), false);
      } finally {
        logs.restore();
      }
      assert.equal(regions.topology, undefined);
      const own = accountRead({ name: "global", endpoint: "https://ACCT.documents.azure.com/" });
      assert.equal(regions.observe(own, accountResponse(own, [eastUs])), true);
    });

    it("rejects an accountEndpoint that is not an http(s) URL, naming the option", function () {
      assert.throws(() => new RegionCache({ accountEndpoint: "ftp://acct" }), /^TypeError: accountEndpoint must be an http\(s\) URL/);
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

    it("a hedge that wins with an error once the primary failed does not count toward demotion either", async function () {
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
        assert.equal(response.status, 401);
        assert.equal(getHedgeDiagnostics(response)?.terminalState, "hedgeWon");
      }
      assert.equal(policy.metrics().regions.find((region) => region.region === "East US")?.demotedInFavourOf, undefined);
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
