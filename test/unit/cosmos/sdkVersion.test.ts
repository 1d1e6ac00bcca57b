import assert from "node:assert/strict";
import { createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { buildHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { isBelowFloor, minimumSdkVersion, SdkVersionGate, sdkVersionIn, standsAsideFor, standsAsideForContext } from "../../../src/cosmos/sdkVersion.js";
import { getHedgingDetection } from "../../../src/diagnostics/detection.js";
import { requestControlHeaders } from "../../../src/cosmos/headers.js";
import { captureAzureLogs } from "../../support/logCapture.js";
import { eastUs, northEurope, observe, pointRead, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";

/** The user agent @azure/cosmos sets on every request (`getUserAgent`), with a suffix of the caller's after it. */
function userAgent(version: string, suffix = ""): string {
  return `Node.js/20.19.0 (linux; x64) azure-cosmos-js/${version}${suffix}`;
}

function readOf(version: string): PipelineRequest {
  const request = pointRead(eastUs);
  request.headers.set("User-Agent", userAgent(version));
  request.headers.set("x-ms-useragent", userAgent(version));
  return request;
}

describe("sdkVersion", () => {
  it("reads the SDK's version from its own token of the user agent, not from a suffix after it", () => {
    assert.equal(sdkVersionIn(userAgent("4.10.1")), "4.10.1");
    assert.equal(sdkVersionIn(userAgent("4.5.1", " my-app azure-cosmos-js/9.9.9")), "4.5.1");
    assert.equal(sdkVersionIn("azsdk-js-keyvault-keys/4.9.0 core-rest-pipeline/1.24.0"), undefined, "another Azure SDK's");
    assert.equal(sdkVersionIn("not-azure-cosmos-js/4.1.0"), undefined, "the token is a word of its own");
  });

  it("compares versions part by part against the floor", () => {
    assert.equal(minimumSdkVersion, "4.7.0");
    for (const below of ["4.6.0", "4.5.1", "4.1.0", "3.17.3", "4.6.99"]) assert.equal(isBelowFloor(below), true, below);
    for (const atOrAbove of ["4.7.0", "4.7.1", "4.10.1", "5.0.0", "4.10.0"]) assert.equal(isBelowFloor(atOrAbove), false, atOrAbove);
  });

  it("a gate judges each request by the SDK's token in its user agent, and warns once a version", () => {
    const logs = captureAzureLogs("warning");
    try {
      const gate = new SdkVersionGate();
      const judged = (agent: unknown, custom: unknown = agent): boolean => {
        const request = pointRead(eastUs);
        if (typeof agent === "string") request.headers.set("User-Agent", agent);
        if (typeof custom === "string") request.headers.set("x-ms-useragent", custom);
        return standsAsideFor(gate, request);
      };
      assert.equal(judged("myapp/1.0"), false, "hedging until a request names the SDK");
      assert.equal(judged(userAgent("4.4.1")), true);
      assert.equal(judged(userAgent("4.4.1")), true, "the same agent again: remembered");
      assert.equal(judged("myapp/1.0"), true, "a caller's own user agent gets the last verdict of a request that named the SDK");
      assert.equal(judged(undefined), true, "so does a request without one");
      assert.equal(judged("myapp/1.0", userAgent("4.10.1")), false, "x-ms-useragent names the SDK when User-Agent does not");
      assert.equal(judged(userAgent("4.10.1")), false, "one client shared by two SDKs treats each as its version asks");
      assert.equal(judged(userAgent("4.4.1")), true);
      assert.equal(new SdkVersionGate().judge(userAgent("4.4.1"), undefined), true);
      const warnings = logs.packageLines().filter((line) => line.includes("4.4.1"));
      assert.equal(warnings.length, 1, "one warning for the version, however many requests and gates");
      assert.match(warnings[0]!, /@azure\/cosmos 4\.4\.1 is older than 4\.7\.0, the oldest version cosmos-hedging hedges for/);
      assert.equal(gate.sawCosmos, true);
    } finally {
      logs.restore();
    }
  });

  it("a request context's headers are judged alike", () => {
    const gate = new SdkVersionGate();
    assert.equal(standsAsideForContext(gate, { "User-Agent": userAgent("4.3.0"), "x-ms-useragent": userAgent("4.3.0") }), true);
    assert.equal(standsAsideForContext(gate, { "User-Agent": "myapp/1.0" }), true);
    assert.equal(standsAsideForContext(gate, { "User-Agent": userAgent("4.7.0") }), false);
  });

  describe("a hedging client under an SDK below the floor", () => {
    const harness = useRaceHarness();

    /** A withHedging client as buildHedgingHttpClient makes it, over the harness's transport; the SDK's plugins driven as @azure/cosmos drives them. */
    function sdkClient() {
      const { client, plugins } = buildHedgingHttpClient(
        { crossRegion: { threshold: 100, thresholdStep: 100 }, metadata: false, preferredRegions: ["East US", "West US", "North Europe"] },
        { mayBePlain: () => true },
        harness.transport,
      );
      client.regions.setTopology({ readRegions: [eastUs, westUs, northEurope] });
      const run = (request: PipelineRequest, version: string): Promise<unknown> => {
        const headers = { "User-Agent": userAgent(version), "x-ms-useragent": userAgent(version) };
        const context = { headers, options: {}, httpClient: client, plugins, method: "GET", resourceType: "docs", operationType: "read" };
        const phase = (on: "operation" | "request", last: () => Promise<unknown>): Promise<unknown> =>
          plugins
            .filter((plugin) => plugin.on === on)
            .reduceRight<(passed: object) => Promise<unknown>>((next, plugin) => (passed) => plugin.plugin(passed as never, undefined, next as never), last)(context);
        return phase("operation", () =>
          phase("request", async () => {
            const response = await client.sendRequest(request);
            return { headers: response.headers.toJSON(), code: response.status };
          }),
        );
      };
      return { client, run };
    }

    it("sends every request as the SDK built it, where it sent it: no hedge, no record, no header of this package's", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 400 });
      const logs = captureAzureLogs("warning");
      try {
        const { client, run } = sdkClient();
        const request = readOf("4.5.1");
        request.headers.set(requestControlHeaders.hedging, "off");
        const outcome = observe(run(request, "4.5.1"));
        await harness.clock.tickAsync(1_000);
        const result = (await outcome.result()) as { code: number };
        assert.equal(result.code, 200);
        assert.deepEqual(
          harness.transport.received.map((each) => each.origin),
          [new URL(eastUs.endpoint).origin],
          "the slow read was not hedged",
        );
        assert.equal(harness.transport.received[0]!.request, request, "the caller's own request");
        assert.deepEqual(
          Object.keys(harness.transport.received[0]!.headers).filter((name) => name.startsWith("x-cosmos-hedging")),
          [],
          "no header of this package's left the process",
        );
        assert.equal(getHedgingDetection(result), undefined, "the operation ran without a record");
        assert.equal(client.metrics().requests, 0, "nothing counted");
      } finally {
        logs.restore();
      }
    });

    it("while the same client under 4.7.0 hedges the slow read", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 400 });
      harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
      const { run } = sdkClient();
      const outcome = observe(run(readOf("4.7.0"), "4.7.0"));
      await harness.clock.tickAsync(1_000);
      const result = await outcome.result();
      assert.deepEqual(getHedgingDetection(result)?.requestedRegions(), [
        { region: "East US", reason: "initial" },
        { region: "West US", reason: "hedging" },
      ]);
    });

    it("a hedging client without withHedging's plugins warns once that it cannot see an @azure/cosmos request's excludedLocations", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200 }, { status: 200 }, { status: 200 });
      const logs = captureAzureLogs("warning");
      try {
        const unwired = buildHedgingHttpClient({ crossRegion: { threshold: 100 }, metadata: false, preferredRegions: ["East US", "West US"] }, undefined, harness.transport);
        unwired.client.regions.setTopology({ readRegions: [eastUs, westUs] });
        const other = pointRead(eastUs);
        other.headers.set("User-Agent", "azsdk-js-keyvault-keys/4.9.0");
        const send = async (request: PipelineRequest): Promise<void> => {
          const sent = observe(unwired.client.sendRequest(request));
          await harness.clock.tickAsync(10);
          await sent.result();
        };
        await send(other);
        assert.deepEqual(logs.packageLines().filter((line) => line.includes("without the plugins withHedging installs")), [], "not for another Azure SDK's request");
        for (let read = 0; read < 2; read++) await send(readOf("4.10.1"));
        assert.equal(logs.packageLines().filter((line) => line.includes("without the plugins withHedging installs")).length, 1, "once a client");
      } finally {
        logs.restore();
      }
      await harness.clock.tickAsync(1_000);
    });

    it("a policy added by hand passes requests of such an SDK on, less this package's headers", async () => {
      harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 400 });
      const regions = new RegionCache({ preferredRegions: ["East US", "West US"] });
      regions.setTopology({ readRegions: [eastUs, westUs] });
      const policy = crossRegionHedgingPolicy({ regions, threshold: 100 });
      const request = readOf("4.2.0");
      request.headers.set(requestControlHeaders.hedging, "off");
      const logs = captureAzureLogs("warning");
      try {
        const outcome = observe(policy.sendRequest(request, harness.transport.next));
        await harness.clock.tickAsync(1_000);
        assert.equal((await outcome.result()).status, 200);
      } finally {
        logs.restore();
      }
      assert.equal(harness.transport.received.length, 1, "not hedged");
      assert.equal(harness.transport.received[0]!.headers[requestControlHeaders.hedging], undefined);
    });
  });

  it("a request of another Azure SDK never stands a policy aside", () => {
    const gate = new SdkVersionGate();
    const request = createPipelineRequest({ url: "https://vault.example/keys/k" });
    request.headers.set("User-Agent", "azsdk-js-keyvault-keys/4.9.0");
    assert.equal(standsAsideFor(gate, request), false);
    assert.equal(gate.sawCosmos, false);
  });
});
