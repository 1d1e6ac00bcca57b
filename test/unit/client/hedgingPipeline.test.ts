import assert from "node:assert/strict";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelineRequest } from "@azure/core-rest-pipeline";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { cosmosHedgingPolicyName } from "../../../src/client/hedgingLayer.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { metadataHedgingPolicy } from "../../../src/policies/metadataHedgingPolicy.js";
import { requestControlHeaders } from "../../../src/cosmos/headers.js";
import { operationHeaderName } from "../../../src/diagnostics/dispatchRecording.js";
import { eastUs, pointRead, westUs } from "../../support/hedgingFixtures.js";

function recording(seen: PipelineRequest[]): HttpClient {
  return { sendRequest: async (request) => (seen.push(request), { request, status: 200, headers: createHttpHeaders() }) };
}

const mine = { name: "mine", sendRequest: (request: PipelineRequest, next: (request: PipelineRequest) => Promise<never>) => next(request) };

describe("a hedging client's pipeline", () => {
  for (const retired of ["crossRegionHedgingPolicy", "metadataHedgingPolicy", "excludedRegionsPolicy", "dispatchRecordPolicy"]) {
    it(`refuses ${retired}, a name it no longer holds, in afterPolicies, beforePolicies and removePolicy, naming it and the layer`, () => {
      const client = createHedgingHttpClient({ httpClient: recording([]) });
      const naming = (option: string) => (error: Error) =>
        error instanceof TypeError && error.message.startsWith(`${option} names "${retired}"`) && error.message.includes(`"${cosmosHedgingPolicyName}"`);
      assert.throws(() => client.pipeline.addPolicy(mine as never, { afterPolicies: [retired] }), naming("afterPolicies"));
      assert.throws(() => client.pipeline.addPolicy(mine as never, { beforePolicies: [retired] }), naming("beforePolicies"));
      assert.throws(() => client.pipeline.removePolicy({ name: retired }), naming("removePolicy's name"));
      assert.deepEqual(
        client.pipeline.getOrderedPolicies().map((policy) => policy.name),
        [cosmosHedgingPolicyName],
        "nothing was added or removed",
      );
    });
  }

  it("refuses a second hedging policy, which would race every arm of the layer's races again", () => {
    const client = createHedgingHttpClient({ httpClient: recording([]) });
    assert.throws(() => client.pipeline.addPolicy(crossRegionHedgingPolicy({ regions: client.regions })), /cannot be added to a hedging client's pipeline/);
    assert.throws(() => client.pipeline.addPolicy(metadataHedgingPolicy({ regions: client.regions })), /"metadataHedgingPolicy" cannot be added/);
    assert.equal(client.pipeline.getOrderedPolicies().length, 1);
  });

  it("takes a policy placed after the layer by its name, and runs it", async () => {
    const seen: PipelineRequest[] = [];
    const client = createHedgingHttpClient({ httpClient: recording(seen) });
    client.regions.setTopology({ readRegions: [eastUs, westUs] });
    const urls: string[] = [];
    client.pipeline.addPolicy({ name: "mine", sendRequest: (request, next) => (urls.push(request.url), next(request)) }, { afterPolicies: [cosmosHedgingPolicyName] });
    await client.sendRequest(pointRead(eastUs));
    assert.equal(urls.length, 1);
    assert.equal(seen.length, 1);
  });

  it("keeps the SDK plugins' headers off the wire once the layer is removed", async () => {
    const seen: PipelineRequest[] = [];
    const client = createHedgingHttpClient({ httpClient: recording(seen) });
    client.regions.setTopology({ readRegions: [eastUs, westUs] });
    assert.equal(client.pipeline.removePolicy({ name: cosmosHedgingPolicyName }).length, 1);
    const request = pointRead(eastUs);
    request.headers.set(operationHeaderName, "7");
    request.headers.set(requestControlHeaders.sdkExcludedRegions, "[]");
    await client.sendRequest(request);
    assert.equal(seen.length, 1);
    assert.deepEqual(
      Object.keys(seen[0]!.headers.toJSON()).filter((name) => name.startsWith("x-cosmos-hedging")),
      [],
    );
  });
});
